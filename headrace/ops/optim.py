"""Parameter-update ops: sgd, momentum, lars_momentum, adam.

Each op reads a parameter, its gradient, a learning rate (a 1-element tensor) and its
accumulators, and writes the updated values **in place**: ``ParamOut`` is the ``Param``
variable, ``VelocityOut`` the ``Velocity`` variable and so on, and the kernels update those
buffers with NumPy ``out=`` arithmetic (no new parameter-sized allocation per step).  The
arithmetic runs in the parameter's dtype; the learning rate is converted to it once.

These ops have no gradient.
"""
from __future__ import annotations

import numpy as np

from ..core.dtypes import float32, float64
from ..core.errors import fmt_shape
from .gradrule import NO_GRADIENT
from . import parallel
from .registry import register

FLOATS = (float32, float64)


def _check_like_param(ctx, slot: str) -> None:
    """``slot`` must have the parameter's shape and dtype."""
    param, other = ctx.shape("Param"), ctx.shape(slot)
    if len(param) != len(other) or any(a != b and a != -1 and b != -1 for a, b in zip(param, other)):
        ctx.fail(slot, f"shape {fmt_shape(param)} (the shape of `Param`)", fmt_shape(other))
    ctx.check_same_dtype("Param", slot)


def _check_scalar(ctx, slot: str) -> None:
    shape = ctx.shape(slot)
    if any(d not in (1, -1) for d in shape) or len(shape) > 1:
        ctx.fail(slot, "a tensor of one element (shape [1] or [])", fmt_shape(shape))
    ctx.check_dtype(slot, FLOATS)


def _infer_update(like_param, scalars, outputs):
    def infer(ctx):
        ctx.check_dtype("Param", FLOATS)
        for slot in like_param:
            _check_like_param(ctx, slot)
        for slot in scalars:
            _check_scalar(ctx, slot)
        for out, src in outputs.items():
            ctx.set(out, ctx.shape(src), ctx.dtype(src))
    return infer


def _lr(ins, param) -> np.generic:
    """The learning rate as a scalar of the parameter's dtype (``flat[0]``: 0.2 us, where
    ``dtype.type(reshape(-1)[0])`` took 0.55 us of every update)."""
    lr = ins["LearningRate"].flat[0]
    return lr if lr.dtype == param.dtype else param.dtype.type(lr)


def _elementwise(update, outs, *ins):
    """``update(*ins, *outs)`` over arrays of one shape, piece by piece on several threads when
    they are large (``ops/parallel.py``): every element's update reads only its own elements.
    Used by adam (sqrt and divide per element: 1.9x on 2 threads at 262144 elements); sgd and
    momentum stay serial (memory-bound: no gain measured, and a loss when the other core is busy)."""
    arrays = outs + ins
    if parallel.worth(outs[0].size) and all(type(a) is np.ndarray and a.shape == outs[0].shape for a in arrays):
        return parallel.chunked(update, outs, *ins)
    return update(*ins, *outs)


# --- sgd ---------------------------------------------------------------------------------------
def _sgd_kernel(ins, attrs, ctx):
    param, grad = ins["Param"], ins["Grad"]
    step = np.multiply(grad, _lr(ins, param))
    np.subtract(param, step, out=param)
    return {"ParamOut": param}


register(
    "sgd",
    inputs=["Param", "Grad", "LearningRate"],
    outputs=["ParamOut"],
    infer=_infer_update(("Grad",), ("LearningRate",), {"ParamOut": "Param"}),
    kernel=_sgd_kernel,
    grad=NO_GRADIENT,
    inplace={"ParamOut": "Param"},
    doc="ParamOut = Param - LearningRate * Grad",
)


# --- momentum ----------------------------------------------------------------------------------
def _momentum_kernel(ins, attrs, ctx):
    param, grad, velocity = ins["Param"], ins["Grad"], ins["Velocity"]
    lr = _lr(ins, param)
    mu = param.dtype.type(attrs["mu"])
    if attrs["rescale_grad"] != 1.0:
        grad = grad * param.dtype.type(attrs["rescale_grad"])
    np.multiply(velocity, mu, out=velocity)
    np.add(velocity, grad, out=velocity)
    if attrs["use_nesterov"]:
        step = np.multiply(velocity, mu)
        np.add(step, grad, out=step)
        np.multiply(step, lr, out=step)
    else:
        step = np.multiply(velocity, lr)
    np.subtract(param, step, out=param)
    return {"ParamOut": param, "VelocityOut": velocity}


register(
    "momentum",
    inputs=["Param", "Grad", "Velocity", "LearningRate"],
    outputs=["ParamOut", "VelocityOut"],
    attrs={"mu": 0.9, "use_nesterov": False, "rescale_grad": 1.0},
    infer=_infer_update(("Grad", "Velocity"), ("LearningRate",),
                        {"ParamOut": "Param", "VelocityOut": "Velocity"}),
    kernel=_momentum_kernel,
    grad=NO_GRADIENT,
    inplace={"ParamOut": "Param", "VelocityOut": "Velocity"},
    doc="VelocityOut = mu * Velocity + Grad; ParamOut = Param - lr * VelocityOut, or with "
        "use_nesterov Param - lr * (Grad + mu * VelocityOut)",
)


# --- lars_momentum -----------------------------------------------------------------------------
def _lars_momentum_kernel(ins, attrs, ctx):
    """LARS as the reference kernel computes it (L2 norms over the whole tensor, summed in the
    parameter's dtype):
    g = rescale_grad * grad; local_lr = lr * lars_coeff * ||p|| / (||g|| + wd * ||p|| + epsilon)
    when wd > 0 and both norms are > 0, else lr (plain momentum);
    v = mu * v + local_lr * (g + wd * p); p = p - v."""
    param, grad, velocity = ins["Param"], ins["Grad"], ins["Velocity"]
    t = param.dtype.type
    lr = float(ins["LearningRate"].reshape(-1)[0])
    wd = float(attrs["lars_weight_decay"])
    if attrs["rescale_grad"] != 1.0:
        grad = grad * t(attrs["rescale_grad"])
    p_norm = float(np.sqrt(np.vdot(param, param)))
    g_norm = float(np.sqrt(np.vdot(grad, grad)))
    if wd > 0 and p_norm > 0 and g_norm > 0:
        local_lr = lr * float(attrs["lars_coeff"]) * p_norm / (g_norm + wd * p_norm + float(attrs["epsilon"]))
    else:
        local_lr = lr
    step = np.multiply(param, t(wd)) if wd != 0 else grad.copy()
    if wd != 0:
        np.add(step, grad, out=step)
    np.multiply(step, t(local_lr), out=step)
    np.multiply(velocity, t(attrs["mu"]), out=velocity)
    np.add(velocity, step, out=velocity)
    np.subtract(param, velocity, out=param)
    return {"ParamOut": param, "VelocityOut": velocity}


def _lars_infer(ctx):
    for name in ("lars_coeff", "lars_weight_decay", "epsilon"):
        if ctx.attr(name) < 0:
            ctx.fail_attr(name, "a value >= 0", ctx.attr(name))
    _infer_update(("Grad", "Velocity"), ("LearningRate",),
                  {"ParamOut": "Param", "VelocityOut": "Velocity"})(ctx)


register(
    "lars_momentum",
    inputs=["Param", "Grad", "Velocity", "LearningRate"],
    outputs=["ParamOut", "VelocityOut"],
    attrs={"mu": 0.9, "lars_coeff": 0.001, "lars_weight_decay": 0.0005, "epsilon": 0.0,
           "rescale_grad": 1.0},
    infer=_lars_infer,
    kernel=_lars_momentum_kernel,
    grad=NO_GRADIENT,
    inplace={"ParamOut": "Param", "VelocityOut": "Velocity"},
    doc="LARS momentum: VelocityOut = mu * Velocity + local_lr * (g + wd * Param), ParamOut = Param - "
        "VelocityOut, local_lr = lr * lars_coeff * ||Param|| / (||g|| + wd * ||Param|| + epsilon) "
        "(lr when wd, ||Param|| or ||g|| is 0), g = rescale_grad * Grad",
)


# --- adam --------------------------------------------------------------------------------------
def _adam_kernel(ins, attrs, ctx):
    param, grad = ins["Param"], ins["Grad"]
    m1, m2 = ins["Moment1"], ins["Moment2"]
    b1pow, b2pow = ins["Beta1Pow"], ins["Beta2Pow"]
    t = param.dtype.type
    beta1, beta2, eps = t(attrs["beta1"]), t(attrs["beta2"]), t(attrs["epsilon"])
    lr = _lr(ins, param)
    p1 = t(b1pow.reshape(-1)[0])
    p2 = t(b2pow.reshape(-1)[0])
    one = t(1)
    lr_t = lr * np.sqrt(one - p2) / (one - p1)

    def update(grad, param, m1, m2):
        np.multiply(m1, beta1, out=m1)
        m1 += (one - beta1) * grad
        np.multiply(m2, beta2, out=m2)
        m2 += (one - beta2) * np.square(grad)
        denom = np.sqrt(m2)
        denom += eps * np.sqrt(one - p2)
        step = np.divide(m1, denom, out=denom)
        step *= lr_t
        np.subtract(param, step, out=param)
    _elementwise(update, (param, m1, m2), grad)
    np.multiply(b1pow, b1pow.dtype.type(attrs["beta1"]), out=b1pow)
    np.multiply(b2pow, b2pow.dtype.type(attrs["beta2"]), out=b2pow)
    return {"ParamOut": param, "Moment1Out": m1, "Moment2Out": m2,
            "Beta1PowOut": b1pow, "Beta2PowOut": b2pow}


def _adam_check_betas(infer):
    def checked(ctx):
        for name in ("beta1", "beta2"):
            value = ctx.attr(name)
            if not 0.0 <= value < 1.0:
                ctx.fail_attr(name, "a value in [0, 1)", value)
        if ctx.attr("epsilon") < 0:
            ctx.fail_attr("epsilon", "a value >= 0", ctx.attr("epsilon"))
        infer(ctx)
    return checked


register(
    "adam",
    inputs=["Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"],
    outputs=["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"],
    attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False},
    infer=_adam_check_betas(_infer_update(
        ("Grad", "Moment1", "Moment2"), ("LearningRate", "Beta1Pow", "Beta2Pow"),
        {"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2",
         "Beta1PowOut": "Beta1Pow", "Beta2PowOut": "Beta2Pow"})),
    kernel=_adam_kernel,
    grad=NO_GRADIENT,
    inplace={"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2",
             "Beta1PowOut": "Beta1Pow", "Beta2PowOut": "Beta2Pow"},
    doc="m1 = b1 m1 + (1 - b1) g; m2 = b2 m2 + (1 - b2) g^2; "
        "lr_t = lr sqrt(1 - b2^t) / (1 - b1^t); p -= lr_t m1 / (sqrt(m2) + eps sqrt(1 - b2^t)); "
        "then the beta powers are multiplied by b1, b2",
)
