"""``python -m headrace.memory PROGRAM --feed x=64,784 [--fetch NAME] [--plot out.svg]``

Prints the memory estimate of one run of a saved program (a ``.pdmodel`` file written by
``paddle.static.save`` / ``save_inference_model``, or a ``.json`` file of ``Program.to_dict()``)
for the given feed shapes, and draws the timeline with ``--plot``.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

from . import estimate, plot


def load_program(path):
    """A Program from a ``.pdmodel`` or a ``Program.to_dict()`` ``.json`` file (validated on load)."""
    from ..core.program import Program

    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no program file at {path}")
    if path.suffix == ".json":
        return Program.from_dict(json.loads(path.read_text()))
    from ..static import io as static_io   # the persistence module reads .pdmodel files

    return static_io.load_program_file(str(path))


def _shape(text):
    name, _, dims = text.partition("=")
    try:
        shape = [int(d) for d in dims.split(",") if d.strip()]
    except ValueError:
        shape = None
    if not name or not shape or any(d < 0 for d in shape):
        raise argparse.ArgumentTypeError(f"--feed takes NAME=D1,D2,... with non-negative ints, got {text!r}")
    return name, shape


def _mib(n) -> str:
    return f"{n} bytes ({n / 2**20:.2f} MiB)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m headrace.memory", description=__doc__.splitlines()[0])
    parser.add_argument("program", help="a .pdmodel file or a Program.to_dict() .json file")
    parser.add_argument("--feed", type=_shape, action="append", default=[], metavar="NAME=D1,D2,...",
                        help="the shape of a fed variable (repeat for each feed)")
    parser.add_argument("--fetch", action="append", default=[], help="a variable the run fetches (kept alive)")
    parser.add_argument("--plot", help="also draw the timeline to this .svg or .png file")
    args = parser.parse_args(argv)
    try:
        program = load_program(args.program)
        feed = dict(args.feed)
        est = (plot(program, feed, args.plot, fetch_list=args.fetch or None) if args.plot
               else estimate(program, feed, fetch_list=args.fetch or None))
    except Exception as exc:   # a command-line tool: the message, not a traceback
        print(f"headrace.memory: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"peak:        {_mib(est.peak_bytes)} at op {est.peak_op[0]} ({est.peak_op[1]})")
    print(f"persistable: {_mib(est.persistable_bytes)}")
    print(f"ops:         {len(est.profile)}")
    top = sorted(est.live_at_peak.items(), key=lambda kv: -kv[1])[:8]
    print("largest live at the peak: " + ", ".join(f"{name} {n}" for name, n in top))
    if args.plot:
        print(f"timeline:    {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
