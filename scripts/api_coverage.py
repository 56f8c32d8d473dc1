"""How many of the reference's public names headrace has, per namespace.

The reference's names (PaddlePaddle 3.3.1) are in ../shared/reference/paddle_public_names.json
(or the file given with --names).  A name counts when the matching headrace module has it as an
attribute and it is not marked unsupported: an object whose ``__headrace_unsupported__`` attribute
is true (a placeholder that only raises "not supported yet") is listed as missing.

    python scripts/api_coverage.py              # one line per namespace
    python scripts/api_coverage.py --missing    # and the names still missing
"""
import argparse
import importlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_NAMES = ROOT.parent / "shared" / "reference" / "paddle_public_names.json"

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


def has(module, name):
    if module is None or not hasattr(module, name):
        return False
    return not getattr(getattr(module, name), "__headrace_unsupported__", False)


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
