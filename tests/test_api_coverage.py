"""scripts/api_coverage.py counts names that exist and are not placeholders."""
import importlib.util
import json
import pathlib

import headrace

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "scripts" / "api_coverage.py"
spec = importlib.util.spec_from_file_location("api_coverage", SCRIPT)
api_coverage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(api_coverage)


def test_counts_present_and_missing_names():
    rows = api_coverage.coverage({"paddle": ["Tensor", "no_such_name_x", "Tensor"], "paddle.nosuchns": ["a"]})
    present, counted, missing = rows["paddle"]
    assert (present, counted, missing) == (1, ["Tensor", "no_such_name_x"], ["no_such_name_x"])
    assert rows["paddle.nosuchns"][0] == 0


def test_placeholders_do_not_count(monkeypatch):
    def placeholder(*a, **k):
        raise NotImplementedError
    placeholder.__headrace_unsupported__ = True
    monkeypatch.setattr(headrace, "placeholder_for_test", placeholder, raising=False)
    assert api_coverage.coverage({"paddle": ["placeholder_for_test"]})["paddle"][0] == 0


def test_accelerator_names_are_excluded(tmp_path, capsys):
    names = tmp_path / "names.json"
    names.write_text(json.dumps({"paddle.static": ["Program", "IpuStrategy"]}))
    api_coverage.main(["--names", str(names), "--missing"])
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("paddle.static ") and "missing" not in l)
    assert line.split()[1:] == ["1", "1", "100%"]


def _stub(x):
    """Not yet."""
    raise NotImplementedError("not supported yet")


class _StubClass:
    def __init__(self, *args):
        raise NotImplementedError


def _partial(x):
    if x:
        raise NotImplementedError("static mode")
    return x


def test_functions_that_only_raise_not_implemented_do_not_count(monkeypatch):
    for name, obj in (("stub_fn_for_test", _stub), ("stub_cls_for_test", _StubClass), ("partial_for_test", _partial)):
        monkeypatch.setattr(headrace, name, obj, raising=False)
    rows = api_coverage.coverage({"paddle": ["stub_fn_for_test", "stub_cls_for_test", "partial_for_test"]})
    assert rows["paddle"][2] == ["stub_fn_for_test", "stub_cls_for_test"]   # a partial one works somewhere


def test_default_names_file_is_found_from_a_worktree_too():
    assert api_coverage.DEFAULT_NAMES.name == "paddle_public_names.json"
    assert any(c == api_coverage.DEFAULT_NAMES for c in api_coverage._CANDIDATES)


def test_readme_table_matches_the_script():
    """The README's coverage table is what the script counts now (update both together)."""
    import re

    names = api_coverage.DEFAULT_NAMES
    if not names.exists():
        import pytest
        pytest.skip("the reference's names file is not beside this checkout")
    rows = api_coverage.coverage(json.loads(names.read_text()))
    readme = (SCRIPT.parents[1] / "README.md").read_text()
    for namespace, (present, counted, _) in rows.items():
        row = re.search(rf"^\| `{re.escape(namespace)}` \| (\d+) \| (\d+) \|", readme, flags=re.M)
        assert row, namespace
        assert (int(row.group(1)), int(row.group(2))) == (present, len(counted)), namespace
