"""How many of the reference's public names headrace has, per namespace.

The reference's names (PaddlePaddle 3.3.1) are in ../shared/reference/paddle_public_names.json
(or the file given with --names).  A name counts when the matching headrace module has it as an
attribute and it is not a placeholder: an object whose ``__headrace_unsupported__`` attribute is
true, or a function (a class: its own ``__init__``) whose body does nothing but raise
NotImplementedError, is listed as missing.

    python scripts/api_coverage.py              # one line per namespace
    python scripts/api_coverage.py --missing    # and the names still missing
"""
import argparse
import ast
import importlib
import inspect
import json
import pathlib
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
# the checkout's sibling ../shared (main), or two levels up (a worktree under wt/<name>)
_CANDIDATES = [base / "shared" / "reference" / "paddle_public_names.json" for base in (ROOT.parent, ROOT.parents[1])]
DEFAULT_NAMES = next((c for c in _CANDIDATES if c.exists()), _CANDIDATES[0])

# Names the issue excludes from a namespace's target (accelerator-only APIs).
EXCLUDED = {
    "paddle.static": {"IpuCompiledProgram", "IpuStrategy", "ipu_shard_guard", "set_ipu_shard", "xpu_places"},
}


def module_for(namespace):
    """The headrace module standing for a reference namespace, or None if it does not exist."""
    name = "headrace" + namespace[len("paddle"):]
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _raises_not_implemented_only(func) -> bool:
    """True for a function whose body (docstring aside) is one ``raise NotImplementedError...``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return False
    node = tree.body[0] if tree.body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    body = [s for s in node.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def is_placeholder(obj) -> bool:
    if getattr(obj, "__headrace_unsupported__", False):
        return True
    if inspect.isclass(obj):
        init = obj.__dict__.get("__init__")
        return init is not None and _raises_not_implemented_only(init)
    return inspect.isfunction(obj) and _raises_not_implemented_only(obj)


def has(module, name):
    if module is None or not hasattr(module, name):
        return False
    return not is_placeholder(getattr(module, name))


def coverage(names):
    """namespace -> (present, counted names, missing names)."""
    rows = {}
    for namespace, wanted in names.items():
        counted = [n for n in dict.fromkeys(wanted) if n not in EXCLUDED.get(namespace, ())]
        module = module_for(namespace)
        missing = [n for n in counted if not has(module, n)]
        rows[namespace] = (len(counted) - len(missing), counted, missing)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=pathlib.Path, default=DEFAULT_NAMES)
    parser.add_argument("--missing", action="store_true", help="list the missing names too")
    args = parser.parse_args(argv)
    if not args.names.exists():
        sys.exit(f"api_coverage: no names file at {args.names} (pass --names PATH)")
    rows = coverage(json.loads(args.names.read_text()))
    if args.missing:
        for namespace, (_, _, missing) in rows.items():
            print(f"{namespace} missing ({len(missing)}): {' '.join(missing)}\n")
    print(f"{'namespace':24} {'have':>5} {'of':>5} {'share':>6}")
    for namespace, (present, counted, _) in rows.items():
        share = present / len(counted) if counted else 1.0
        print(f"{namespace:24} {present:5d} {len(counted):5d} {share:6.0%}")


if __name__ == "__main__":
    main()
