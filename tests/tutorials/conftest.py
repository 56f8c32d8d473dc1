"""The 2.x tutorials run as a new user runs them: in dygraph mode (the default of ``import
paddle``), in a scratch working directory, with the data sets in the reference's cache layout
under a temporary DATA_HOME (tiny files in the real formats, from tests/datafiles.py)."""
import matplotlib
import pytest

from headrace.core import context

matplotlib.use("Agg")


@pytest.fixture
def user_session(fresh_programs, tmp_path, monkeypatch):
    import headrace.dataset.common as common

    monkeypatch.setattr(common, "DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    with context.static_mode_guard(False):
        yield tmp_path
