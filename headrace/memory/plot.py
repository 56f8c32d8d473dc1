"""``plot(program, feed, path)``: the memory timeline of one run, drawn before running.

Live bytes after each op (and the most reached inside it) over the op sequence, the forward /
backward / update regions shaded by op role, the recompute segments (the forward copies the
recompute pass inserted into the backward) marked, and the peak annotated.  Written as SVG or PNG
by ``path``'s suffix.  Needs matplotlib (``pip install headrace[plot]``).
"""
from __future__ import annotations

import os

from ..core import roles
from .estimate import estimate

_REGIONS = (("forward", "#e8f1fb"), ("backward", "#fdf0e6"), ("update", "#eaf7ea"))


def _region(role) -> str:
    role = int(role)
    if roles.is_optimize(role):
        return "update"
    return "backward" if roles.is_backward(role) else "forward"


def _runs(flags) -> list:
    """(start, end) index ranges where ``flags`` is true."""
    runs, start = [], None
    for i, flag in enumerate(list(flags) + [False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            runs.append((start, i))
            start = None
    return runs


def plot(program, feed, path, build_strategy=None, fetch_list=None, title=None):
    """Draw the estimate's timeline to ``path`` (.svg or .png); returns the ``MemoryEstimate``."""
    suffix = os.path.splitext(str(path))[1].lower()
    if suffix not in (".svg", ".png"):
        raise ValueError(f"plot: path must end in .svg or .png, got {path!r}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("headrace.memory.plot needs matplotlib: pip install 'headrace[plot]'") from None
    est = estimate(program, feed, build_strategy=build_strategy, fetch_list=fetch_list)
    n = len(est.profile)
    mib = 1024 * 1024
    fig, ax = plt.subplots(figsize=(10, 4.2))
    regions = [_region(r) for r in est.roles]
    spans = [(name, color, 1.0, [r == name for r in regions]) for name, color in _REGIONS]
    spans.append(("recomputed forward", "#b39ddb", 0.55, est.recomputed))
    for label, color, alpha, flags in spans:
        for k, (a, b) in enumerate(_runs(flags)):
            ax.axvspan(a - 0.5, b - 0.5, color=color, alpha=alpha, lw=0, label=label if k == 0 else None)
    xs = list(range(n))
    ax.step(xs, [high / mib for _, _, _, high in est.profile], where="mid", color="#c62828", lw=0.8,
            label="most inside the op")
    ax.step(xs, [cur / mib for _, _, cur, _ in est.profile], where="mid", color="#1a237e", lw=1.4,
            label="live after the op")
    ax.axhline(est.persistable_bytes / mib, color="#555", ls=":", lw=1, label="parameters and state")
    index, op_type = est.peak_op
    ax.plot([max(index, 0)], [est.peak_bytes / mib], "o", color="#c62828")
    ax.annotate(f"peak {est.peak_bytes / mib:.2f} MiB\nop {index} ({op_type})", (max(index, 0), est.peak_bytes / mib),
                textcoords="offset points", xytext=(10, 10), fontsize=8, va="bottom",
                bbox={"boxstyle": "round", "fc": "white", "ec": "#c62828", "lw": 0.6})
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(0, est.peak_bytes / mib * 1.3)
    ax.set_xlabel("op (execution order)")
    ax.set_ylabel("live MiB")
    ax.set_title(title or "headrace memory timeline (estimated before running)")
    ax.legend(loc="upper left", fontsize=7, ncol=3, frameon=False)
    fig.tight_layout()
    fig.savefig(str(path), format=suffix[1:], metadata={"Date": None} if suffix == ".svg" else None)
    plt.close(fig)
    return est
