"""Random number generators: the global one (``paddle.seed``) and per-program ones.

Random ops draw from, in this order of preference:
1. a fixed seed carried by the op (attribute ``seed`` != 0, or a ``Seed`` input): a fresh generator
   seeded with it on every run, so the op repeats its draw exactly (what recompute relies on);
2. the program's own generator when ``Program.random_seed`` is non-zero: reproducible across
   runs that start from the same seed, yet fresh numbers at every step;
3. the global generator, reseeded by ``paddle.seed(n)``.
"""
from __future__ import annotations

import numpy as np


class Generator:
    """A seedable NumPy generator with the reference system's state API."""

    def __init__(self, seed: int | None = None):
        self._initial = seed if seed is not None else int(np.random.SeedSequence().entropy % (2**63))
        self._rng = np.random.Generator(np.random.PCG64(self._initial))

    @property
    def numpy(self) -> np.random.Generator:
        return self._rng

    def manual_seed(self, seed: int) -> "Generator":
        self._initial = int(seed)
        self._rng.bit_generator.state = np.random.PCG64(self._initial).state
        return self

    seed = manual_seed

    def initial_seed(self) -> int:
        return self._initial

    def get_state(self) -> dict:
        return self._rng.bit_generator.state

    def set_state(self, state: dict) -> None:
        self._rng.bit_generator.state = state

    def random_seed_value(self) -> int:
        """Draw a fresh 31-bit seed (for ops that pin their randomness)."""
        return int(self._rng.integers(1, 2**31 - 1))


_global = Generator(0)


def default_generator() -> Generator:
    return _global


def seed(value: int) -> Generator:
    """Reseed the global generator (``paddle.seed``) and return it."""
    return _global.manual_seed(value)


def fixed_generator(seed_value: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(int(seed_value)))
