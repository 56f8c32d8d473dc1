"""Program transformations, one module each (see docs/architecture.md)."""
