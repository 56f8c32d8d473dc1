"""The tutorials need the other parts of issue 17 (paddle.io.DataLoader, paddle.vision,
paddle.metric, tests/datafiles.py); until they are merged, their tests are skipped (and run as soon
as they are there)."""
import importlib

import pytest


def require(*modules, attrs=()):
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            pytest.skip(f"needs {name} (issue 17, another part)", allow_module_level=True)
    import headrace

    for dotted in attrs:
        obj = headrace
        for part in dotted.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            pytest.skip(f"needs paddle.{dotted} (issue 17, another part)", allow_module_level=True)
