"""Neural-network building blocks: ``dropout`` and the embedding lookups ``lookup_table_v2`` /
``lookup_table``.

``dropout`` is a random op.  Its mask is ``uniform[0, 1) >= dropout_prob`` drawn from a fresh
generator seeded with one number: the ``Seed`` input when present, else one draw (``draw_seed``)
from the generator the plan hands the kernel (attribute ``seed``/``fix_seed``, then
``Program.random_seed``, then the global generator).  The ``seed`` op makes exactly that draw
and nothing else, so recompute can move the draw into a ``seed`` op placed right before the
dropout and feed it to both the forward dropout and its recomputed copy: the random stream
advances exactly as without recompute, and both copies produce the same mask.

Gradients: ``dropout_grad`` reads ``Mask`` and ``Out@GRAD`` (not X): ``dOut * Mask``, divided by
``1 - p`` for upscale_in_train (0 when p = 1); with ``is_test`` the forward was a constant scale, so
the gradient is ``dOut`` (upscale_in_train) or ``dOut * (1 - p)`` (downgrade_in_infer) and the mask
is not read.  The lookups' gradient w.r.t. ``W`` is dense: row ``r`` of ``W@GRAD`` is the sum of the
``Out@GRAD`` rows of every id equal to ``r`` (zero for unused rows and for the ``padding_idx`` row);
``W`` is read for its shape only, ``Ids`` get no gradient.  ``is_sparse`` is accepted but the
gradient is always dense.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import int32, int64, uint8
from ..core.errors import fmt_shape
from ..core.random import fixed_generator, get_random_seed_generator
from .elementwise import check_float
from .gradrule import NO_GRADIENT, Gradient, grad_slot
from .registry import optional, register

_IMPLEMENTATIONS = ("downgrade_in_infer", "upscale_in_train")


# --- dropout -----------------------------------------------------------------------------------
def _dropout_infer(ctx):
    x_shape = ctx.shape("X")
    dtype = check_float(ctx, "X")
    p = ctx.attr("dropout_prob")
    if not 0.0 <= p <= 1.0:
        ctx.fail_attr("dropout_prob", "a probability in [0, 1]", p)
    implementation = ctx.attr("dropout_implementation")
    if implementation not in _IMPLEMENTATIONS:
        ctx.fail_attr("dropout_implementation", " or ".join(repr(v) for v in _IMPLEMENTATIONS), implementation)
    if ctx.has("Seed"):
        ctx.check_dtype("Seed", (int32, int64))
        seed_shape = ctx.shape("Seed")
        if len(seed_shape) != 1 or seed_shape[0] not in (1, -1):
            ctx.fail("Seed", "shape [1]", fmt_shape(seed_shape))
    ctx.set("Out", x_shape, dtype)
    ctx.set("Mask", x_shape, uint8)


def _dropout_kernel(ins, attrs, ctx):
    x = ins["X"]
    p = float(attrs["dropout_prob"])
    upscale = attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:
        out = x.copy() if upscale else x * np.asarray(1.0 - p, dtype=x.dtype)
        return {"Out": out, "Mask": np.ones(x.shape, dtype=np.uint8)}
    seed = ins.get("Seed")
    seed = draw_seed(ctx.rng) if seed is None else int(np.asarray(seed).reshape(-1)[0])
    mask = np.asarray(fixed_generator(seed).random(x.shape) >= p, dtype=np.uint8)  # 0-D x: a float
    if upscale:
        out = np.zeros_like(x) if p == 1.0 else x / np.asarray(1.0 - p, dtype=x.dtype) * mask
    else:
        out = x * mask
    return {"Out": np.asarray(out, dtype=x.dtype), "Mask": mask}




def _dropout_grad_kernel(ins, attrs, ctx):
    if grad_slot("X") not in ctx.wanted:
        return {}
    dout = ins[grad_slot("Out")]
    p = float(attrs["dropout_prob"])
    upscale = attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:
        dx = dout if upscale else dout * np.asarray(1.0 - p, dtype=dout.dtype)
        return {grad_slot("X"): np.asarray(dx)}
    if upscale and p == 1.0:
        return {grad_slot("X"): np.zeros_like(dout)}
    dx = np.asarray(np.multiply(dout, ins["Mask"], dtype=dout.dtype))  # 0-D: a scalar otherwise
    if upscale:
        dx /= np.asarray(1.0 - p, dtype=dout.dtype)
    return {grad_slot("X"): dx}


register(
    "dropout",
    inputs=["X", optional("Seed")],
    outputs=["Out", "Mask"],
    attrs={"dropout_prob": 0.5, "is_test": False, "fix_seed": False, "seed": 0,
           "dropout_implementation": "downgrade_in_infer"},
    infer=_dropout_infer,
    kernel=_dropout_kernel,
    random=True,
    grad=Gradient(_dropout_grad_kernel, inputs=(), outputs=("Mask",), input_grads=("X",),
                  attrs=("dropout_prob", "is_test", "dropout_implementation"),
                  like={grad_slot("X"): grad_slot("Out")}, views={grad_slot("X"): grad_slot("Out")}),
    doc="Out = X * Mask (upscale_in_train: / (1 - p)); Mask drops each element with probability p. "
        "In test mode Out = X * (1 - p) (downgrade_in_infer) or X (upscale_in_train)",
)




# --- seed -------------------------------------------------------------------------------------
def draw_seed(rng) -> int:
    """The one number a seeded random op draws from its stream to seed its own generator."""
    return int(rng.integers(1, 2**31 - 1))


def _seed_infer(ctx):
    ctx.set("Out", (1,), int32)


def _seed_kernel(ins, attrs, ctx):
    if attrs["is_test"]:   # a test clone: its dropouts draw nothing, so neither does this
        return {"Out": np.zeros(1, dtype=np.int32)}
    if attrs["deterministic"]:   # the reference: draw from the generator named rng_name
        return {"Out": np.array([draw_seed(get_random_seed_generator(attrs["rng_name"]).numpy)], dtype=np.int32)}
    return {"Out": np.array([draw_seed(ctx.rng)], dtype=np.int32)}


register(
    "seed",
    inputs=[],
    outputs=["Out"],
    attrs={"seed": 0, "fix_seed": False, "is_test": False, "deterministic": False, "rng_name": "",
           "force_cpu": False},   # force_cpu: accepted, everything runs on the CPU
    infer=_seed_infer,
    kernel=_seed_kernel,
    random=True,
    grad=NO_GRADIENT,
    doc="Out = [s], the seed a random op with a `Seed` input would otherwise draw itself from the same "
        "stream (attribute seed/fix_seed, Program.random_seed, global generator); recompute inserts "
        "it so a recomputed random op replays its numbers; with is_test (a test clone) it draws nothing; "
        "deterministic=True draws from the named generator `rng_name` (core.random.set_random_seed_generator)",
)


# --- lookup_table_v2 / lookup_table ------------------------------------------------------------
def _padding_row(padding_idx: int, rows: int) -> int | None:
    """The table row that reads as zeros: -1 means none, other negatives count from the end."""
    if padding_idx == -1:
        return None
    return padding_idx + rows if padding_idx < 0 else padding_idx


def _make_lookup_infer(ids_last_dim_one: bool):
    def infer(ctx):
        w_shape = ctx.check_rank("W", 2)
        ids_shape = ctx.shape("Ids")
        ctx.check_dtype("Ids", (int32, int64))
        if ids_last_dim_one:
            if not ids_shape or ids_shape[-1] not in (1, -1):
                ctx.fail("Ids", "a shape ending in 1 ([..., 1])", fmt_shape(ids_shape))
            ids_shape = ids_shape[:-1]
        rows = w_shape[0]
        padding_idx = ctx.attr("padding_idx")
        if rows >= 0 and padding_idx != -1 and not -rows <= padding_idx < rows:
            ctx.fail_attr("padding_idx", f"-1 or an index in [{-rows}, {rows}) of W {fmt_shape(w_shape)}",
                          padding_idx)
        ctx.set("Out", tuple(ids_shape) + (w_shape[1],), ctx.dtype("W"))
    return infer


def _make_lookup_kernel(op_type: str, ids_last_dim_one: bool):
    def kernel(ins, attrs, ctx):
        w, ids = ins["W"], ins["Ids"]
        if ids_last_dim_one:
            ids = ids.reshape(ids.shape[:-1])
        rows = w.shape[0]
        bad = (ids < 0) | (ids >= rows)
        if bad.any():
            first = int(ids[bad].flat[0])
            raise IndexError(f"{op_type}: id {first} is out of range [0, {rows}) of W with shape "
                             f"{fmt_shape(w.shape)} ({int(bad.sum())} bad id(s))")
        out = w[ids]
        pad = _padding_row(int(attrs["padding_idx"]), rows)
        if pad is not None:
            out[ids == pad] = 0
        return {"Out": out}
    return kernel


def _make_lookup_grad_kernel(op_type: str):
    def kernel(ins, attrs, ctx):
        if grad_slot("W") not in ctx.wanted:
            return {}
        w, ids, dout = ins["W"], ins["Ids"], ins[grad_slot("Out")]   # w: shape and dtype only
        rows, dim = w.shape
        ids = ids.reshape(-1)
        dout = dout.reshape(-1, dim)
        if ids.shape[0] != dout.shape[0]:
            raise ValueError(f"{op_type}_grad: {ids.shape[0]} ids but Out@GRAD holds {dout.shape[0]} "
                             f"rows of width {dim}")
        bad = (ids < 0) | (ids >= rows)
        if bad.any():
            raise IndexError(f"{op_type}_grad: id {int(ids[bad][0])} is out of range [0, {rows}) of W "
                             f"with shape {fmt_shape(w.shape)}")
        dw = np.zeros((rows, dim), dtype=dout.dtype)
        if ids.size:
            # a dense scatter-add: ids sorted (stably), each run of equal ids summed in one reduceat
            # (what np.add.at(dw, ids, dout) gives, 2-7x faster for embedding-sized rows)
            order = np.argsort(ids, kind="stable")
            sorted_ids = ids[order]
            starts = np.flatnonzero(np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1])))
            dw[sorted_ids[starts]] = np.add.reduceat(dout[order], starts, axis=0)
        pad = _padding_row(int(attrs["padding_idx"]), rows)
        if pad is not None:
            dw[pad] = 0
        return {grad_slot("W"): dw}
    return kernel


def _lookup_gradient(op_type: str):
    return Gradient(_make_lookup_grad_kernel(op_type), inputs=("W", "Ids"), input_grads=("W",),
                    attrs=("padding_idx",), no_need_buffer=["W"])


_LOOKUP_ATTRS = {"padding_idx": -1, "is_sparse": False, "is_distributed": False, "remote_prefetch": False}

register(
    "lookup_table_v2",
    inputs=["W", "Ids"],
    outputs=["Out"],
    attrs=dict(_LOOKUP_ATTRS),
    infer=_make_lookup_infer(ids_last_dim_one=False),
    kernel=_make_lookup_kernel("lookup_table_v2", ids_last_dim_one=False),
    grad=_lookup_gradient("lookup_table_v2"),
    doc="Out[..., :] = W[Ids[...], :] (rows equal to padding_idx read as zeros); Out is Ids.shape + [D]",
)

register(
    "lookup_table",
    inputs=["W", "Ids"],
    outputs=["Out"],
    attrs=dict(_LOOKUP_ATTRS),
    infer=_make_lookup_infer(ids_last_dim_one=True),
    kernel=_make_lookup_kernel("lookup_table", ids_last_dim_one=True),
    grad=_lookup_gradient("lookup_table"),
    doc="lookup_table_v2 for Ids of shape [..., 1]: Out is [..., D]",
)
