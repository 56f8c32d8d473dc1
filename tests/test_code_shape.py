"""House rules the code keeps (checked here so they stay true): no file in headrace/ over 500
lines, no function over 60, and no unreachable statement (code after a return, raise, continue
or break in the same block; ruff, which CI runs for unused and undefined names, has no stable
rule for this)."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "headrace"
SOURCES = sorted(ROOT.rglob("*.py"))


def _rel(path):
    return path.relative_to(ROOT.parent)


def test_there_are_sources():
    assert len(SOURCES) > 50


def test_no_file_over_500_lines():
    long = [f"{_rel(p)}: {n}" for p in SOURCES if (n := p.read_text().count("\n")) > 500]
    assert not long, long


def test_no_function_over_60_lines():
    long = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    long.append(f"{_rel(path)}:{node.lineno} {node.name}: {length} lines")
    assert not long, long


_ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def unreachable(tree) -> list:
    """Line numbers of statements that follow a return/raise/continue/break in their block."""
    found = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for before, after in zip(block, block[1:]):
                if isinstance(before, _ENDS):
                    found.append(after.lineno)
    return sorted(found)


def test_no_unreachable_statements():
    dead = [f"{_rel(p)}:{line}" for p in SOURCES for line in unreachable(ast.parse(p.read_text()))]
    assert not dead, dead


def test_the_unreachable_check_finds_dead_code():
    tree = ast.parse("def f(x):\n    if x:\n        return 1\n        x += 1\n    raise ValueError\n    print(x)\n")
    assert unreachable(tree) == [4, 6]
