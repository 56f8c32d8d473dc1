"""More parameter-update ops: adamw, adagrad, decayed_adagrad, rmsprop, adadelta, adamax, lamb,
nadam, radam (the reference's update formulas; see each op's ``doc``).

Like ``ops/optim.py``: the parameter and every accumulator are updated **in place** (``ParamOut``
is the ``Param`` variable, ``Moment1Out`` the ``Moment1`` variable, ...), the arithmetic runs in
the parameter's dtype, the learning rate is a one-element tensor and the ops have no gradient.
Where the reference updates a beta-power accumulator with a separate ``scale`` op (adamax) or in
its kernel (lamb, nadam, radam), ours updates it in the kernel, after the parameter.
"""
from __future__ import annotations

import numpy as np

from .gradrule import NO_GRADIENT
from .optim import _adam_kernel, _infer_update, _lr
from .registry import register


def _checked(infer, **ranges):
    """``infer`` preceded by attribute range checks: name -> (low, high, high_open)."""
    def run(ctx):
        for name, (low, high, high_open) in ranges.items():
            value = ctx.attr(name)
            if value < low or (high is not None and (value > high or (high_open and value == high))):
                bound = "" if high is None else f" and {'<' if high_open else '<='} {high}"
                ctx.fail_attr(name, f"a value >= {low}{bound}", value)
        infer(ctx)
    return run


BETA = (0.0, 1.0, True)
NONNEG = (0.0, None, False)


def _update_op(name, like_param, scalars, attrs, kernel, doc, ranges):
    """Register one in-place update op with slots Param, Grad, LearningRate + accumulators."""
    outputs = {f"{slot}Out": slot for slot in ("Param",) + like_param + scalars}
    register(name,
             inputs=["Param", "Grad", "LearningRate", *like_param, *scalars],
             outputs=list(outputs),
             attrs=attrs,
             infer=_checked(_infer_update(("Grad",) + like_param, ("LearningRate",) + scalars, outputs),
                            **ranges),
             kernel=kernel, grad=NO_GRADIENT, inplace=dict(outputs), doc=doc)


def _outs(ins, *slots):
    return {f"{slot}Out": ins[slot] for slot in ("Param",) + slots}


def _scalar(array, t):
    return t(array.reshape(-1)[0])


# --- adamw -------------------------------------------------------------------------------------
def _adamw_kernel(ins, attrs, ctx):
    param = ins["Param"]
    t = param.dtype.type
    lr = _lr(ins, param) * t(attrs["lr_ratio"])
    if attrs["with_decay"]:
        np.multiply(param, t(1) - lr * t(attrs["coeff"]), out=param)
    return _adam_kernel({**ins, "LearningRate": np.array([lr])}, attrs, ctx)


_update_op("adamw", ("Moment1", "Moment2"), ("Beta1Pow", "Beta2Pow"),
           {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False, "coeff": 0.01,
            "lr_ratio": 1.0, "with_decay": True},
           _adamw_kernel,
           "lr' = lr * lr_ratio; Param *= 1 - lr' * coeff (with_decay); then adam with lr'",
           {"beta1": BETA, "beta2": BETA, "epsilon": NONNEG, "coeff": NONNEG, "lr_ratio": NONNEG})


# --- adagrad / decayed_adagrad -----------------------------------------------------------------
def _adagrad_step(param, grad, moment, lr, eps):
    denom = np.sqrt(moment)
    denom += eps
    step = np.multiply(grad, lr)
    np.divide(step, denom, out=step)
    np.subtract(param, step, out=param)


def _adagrad_kernel(ins, attrs, ctx):
    param, grad, moment = ins["Param"], ins["Grad"], ins["Moment"]
    moment += np.square(grad)
    _adagrad_step(param, grad, moment, _lr(ins, param), param.dtype.type(attrs["epsilon"]))
    return _outs(ins, "Moment")


_update_op("adagrad", ("Moment",), (), {"epsilon": 1e-6}, _adagrad_kernel,
           "Moment += Grad^2; Param -= lr * Grad / (sqrt(Moment) + epsilon)", {"epsilon": NONNEG})


def _decayed_adagrad_kernel(ins, attrs, ctx):
    param, grad, moment = ins["Param"], ins["Grad"], ins["Moment"]
    t = param.dtype.type
    decay = t(attrs["decay"])
    np.multiply(moment, decay, out=moment)
    moment += (t(1) - decay) * np.square(grad)
    _adagrad_step(param, grad, moment, _lr(ins, param), t(attrs["epsilon"]))
    return _outs(ins, "Moment")


_update_op("decayed_adagrad", ("Moment",), (), {"decay": 0.95, "epsilon": 1e-6}, _decayed_adagrad_kernel,
           "Moment = decay * Moment + (1 - decay) * Grad^2; Param -= lr * Grad / (sqrt(Moment) + epsilon)",
           {"decay": NONNEG, "epsilon": NONNEG})


# --- rmsprop -----------------------------------------------------------------------------------
def _rmsprop_kernel(ins, attrs, ctx):
    param, grad = ins["Param"], ins["Grad"]
    ms, mom, mg = ins["MeanSquare"], ins["Moment"], ins["MeanGrad"]
    t = param.dtype.type
    rho, eps, one = t(attrs["decay"]), t(attrs["epsilon"]), t(1)
    np.multiply(ms, rho, out=ms)
    ms += (one - rho) * np.square(grad)
    if attrs["centered"]:
        np.multiply(mg, rho, out=mg)
        mg += (one - rho) * grad
        denom = ms - np.square(mg)
    else:
        denom = ms.copy()
    denom += eps
    np.sqrt(denom, out=denom)
    step = np.multiply(grad, _lr(ins, param))
    np.divide(step, denom, out=step)
    np.multiply(mom, t(attrs["momentum"]), out=mom)
    mom += step
    np.subtract(param, mom, out=param)
    return _outs(ins, "MeanSquare", "Moment", "MeanGrad")


_update_op("rmsprop", ("MeanSquare", "Moment", "MeanGrad"), (),
           {"decay": 0.9, "epsilon": 1e-10, "momentum": 0.0, "centered": False}, _rmsprop_kernel,
           "MeanSquare = rho MeanSquare + (1 - rho) g^2; centered: MeanGrad = rho MeanGrad + (1 - rho) g, "
           "Moment = momentum Moment + lr g / sqrt(MeanSquare - MeanGrad^2 + eps), else "
           "lr g / sqrt(MeanSquare + eps); Param -= Moment  (rho is the attribute `decay`)",
           {"decay": NONNEG, "epsilon": NONNEG, "momentum": NONNEG})


# --- adadelta ----------------------------------------------------------------------------------
def _adadelta_kernel(ins, attrs, ctx):
    param, grad = ins["Param"], ins["Grad"]
    sq_grad, sq_update = ins["AvgSquaredGrad"], ins["AvgSquaredUpdate"]
    t = param.dtype.type
    rho, eps, one = t(attrs["rho"]), t(attrs["epsilon"]), t(1)
    np.multiply(sq_grad, rho, out=sq_grad)
    sq_grad += (one - rho) * np.square(grad)
    update = np.sqrt(sq_update + eps)
    update /= np.sqrt(sq_grad + eps)
    update *= grad
    np.negative(update, out=update)
    param += _lr(ins, param) * update
    np.multiply(sq_update, rho, out=sq_update)
    sq_update += (one - rho) * np.square(update)
    return _outs(ins, "AvgSquaredGrad", "AvgSquaredUpdate")


_update_op("adadelta", ("AvgSquaredGrad", "AvgSquaredUpdate"), (), {"rho": 0.95, "epsilon": 1e-6},
           _adadelta_kernel,
           "E[g^2] = rho E[g^2] + (1 - rho) g^2; u = -sqrt(E[u^2] + eps) / sqrt(E[g^2] + eps) * g; "
           "Param += lr * u; E[u^2] = rho E[u^2] + (1 - rho) u^2",
           {"rho": NONNEG, "epsilon": NONNEG})


# --- adamax ------------------------------------------------------------------------------------
def _adamax_kernel(ins, attrs, ctx):
    param, grad = ins["Param"], ins["Grad"]
    moment, inf_norm, b1pow = ins["Moment"], ins["InfNorm"], ins["Beta1Pow"]
    t = param.dtype.type
    beta1, beta2, one = t(attrs["beta1"]), t(attrs["beta2"]), t(1)
    np.multiply(moment, beta1, out=moment)
    moment += (one - beta1) * grad
    np.multiply(inf_norm, beta2, out=inf_norm)
    inf_norm += t(attrs["epsilon"])
    np.maximum(inf_norm, np.abs(grad), out=inf_norm)
    lr_t = _lr(ins, param) / (one - _scalar(b1pow, t))
    step = np.divide(moment, inf_norm)
    step *= lr_t
    np.subtract(param, step, out=param)
    np.multiply(b1pow, b1pow.dtype.type(attrs["beta1"]), out=b1pow)
    return _outs(ins, "Moment", "InfNorm", "Beta1Pow")


_update_op("adamax", ("Moment", "InfNorm"), ("Beta1Pow",), {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
           _adamax_kernel,
           "m = b1 m + (1 - b1) g; u = max(b2 u + eps, |g|); Param -= lr / (1 - b1^t) * m / u; "
           "then Beta1Pow *= b1",
           {"beta1": BETA, "beta2": BETA, "epsilon": NONNEG})


# --- lamb --------------------------------------------------------------------------------------
def _moments(ins, t, beta1, beta2):
    grad, m1, m2 = ins["Grad"], ins["Moment1"], ins["Moment2"]
    one = t(1)
    np.multiply(m1, beta1, out=m1)
    m1 += (one - beta1) * grad
    np.multiply(m2, beta2, out=m2)
    m2 += (one - beta2) * np.square(grad)
    return m1, m2


def _lamb_kernel(ins, attrs, ctx):
    param = ins["Param"]
    t = param.dtype.type
    beta1, beta2, wd = t(attrs["beta1"]), t(attrs["beta2"]), t(attrs["weight_decay"])
    b1pow, b2pow = ins["Beta1Pow"], ins["Beta2Pow"]
    m1, m2 = _moments(ins, t, beta1, beta2)
    one = t(1)
    r = np.sqrt(m2 / (one - _scalar(b2pow, t)))
    r += t(attrs["epsilon"])
    np.divide(m1 / (one - _scalar(b1pow, t)), r, out=r)
    r += wd * param
    p_norm = np.sqrt(np.vdot(param, param))
    r_norm = np.sqrt(np.vdot(r, r))
    adapt = (attrs["always_adapt"] or wd > 0) and p_norm > 0 and r_norm > 0
    trust = t(p_norm / r_norm) if adapt else one
    r *= _lr(ins, param) * trust
    np.subtract(param, r, out=param)
    np.multiply(b1pow, b1pow.dtype.type(attrs["beta1"]), out=b1pow)
    np.multiply(b2pow, b2pow.dtype.type(attrs["beta2"]), out=b2pow)
    return _outs(ins, "Moment1", "Moment2", "Beta1Pow", "Beta2Pow")


_update_op("lamb", ("Moment1", "Moment2"), ("Beta1Pow", "Beta2Pow"),
           {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6, "weight_decay": 0.01, "always_adapt": False},
           _lamb_kernel,
           "m, v as adam; r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * Param; "
           "Param -= lr * trust * r, trust = ||Param|| / ||r|| when both are > 0 and weight_decay > 0 "
           "(or always_adapt), else 1; then the beta powers are multiplied by b1, b2",
           {"beta1": BETA, "beta2": BETA, "epsilon": NONNEG, "weight_decay": NONNEG})


# --- nadam -------------------------------------------------------------------------------------
def _nadam_kernel(ins, attrs, ctx):
    param, grad = ins["Param"], ins["Grad"]
    t = param.dtype.type
    beta1, beta2, psi, one = t(attrs["beta1"]), t(attrs["beta2"]), t(attrs["momentum_decay"]), t(1)
    decay_pow, b2pow, mu_product = ins["MomentumDecayPow"], ins["Beta2Pow"], ins["MuProduct"]
    np.multiply(decay_pow, decay_pow.dtype.type(0.96), out=decay_pow)
    np.multiply(b2pow, b2pow.dtype.type(attrs["beta2"]), out=b2pow)
    d = _scalar(decay_pow, t) ** psi
    mu_t = beta1 * (one - t(0.5) * d)
    mu_next = beta1 * (one - t(0.5) * d * t(0.96) ** psi)
    np.multiply(mu_product, mu_product.dtype.type(mu_t), out=mu_product)
    product = _scalar(mu_product, t)
    m1, m2 = _moments(ins, t, beta1, beta2)
    m_hat = m1 * (mu_next / (one - product * mu_next))
    m_hat += grad * ((one - mu_t) / (one - product))
    denom = np.sqrt(m2 / (one - _scalar(b2pow, t)))
    denom += t(attrs["epsilon"])
    np.divide(m_hat, denom, out=m_hat)
    m_hat *= _lr(ins, param)
    np.subtract(param, m_hat, out=param)
    return _outs(ins, "Moment1", "Moment2", "MomentumDecayPow", "Beta2Pow", "MuProduct")


_update_op("nadam", ("Moment1", "Moment2"), ("MomentumDecayPow", "Beta2Pow", "MuProduct"),
           {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "momentum_decay": 0.004}, _nadam_kernel,
           "d *= 0.96; b2p *= b2; mu_t = b1 (1 - d^psi / 2); mu_t1 = b1 (1 - (0.96 d)^psi / 2) (0.96^psi "
           "applied after the power); P *= mu_t; m, v as adam; m_hat = mu_t1 m / (1 - P mu_t1) + "
           "(1 - mu_t) g / (1 - P); Param -= lr m_hat / (sqrt(v / (1 - b2p)) + eps)",
           {"beta1": BETA, "beta2": BETA, "epsilon": NONNEG, "momentum_decay": NONNEG})


# --- radam -------------------------------------------------------------------------------------
def _radam_kernel(ins, attrs, ctx):
    param = ins["Param"]
    t = param.dtype.type
    beta1, beta2, one, two = t(attrs["beta1"]), t(attrs["beta2"]), t(1), t(2)
    b1pow, b2pow, rho = ins["Beta1Pow"], ins["Beta2Pow"], ins["Rho"]
    np.multiply(b1pow, b1pow.dtype.type(attrs["beta1"]), out=b1pow)
    np.multiply(b2pow, b2pow.dtype.type(attrs["beta2"]), out=b2pow)
    p1, p2 = _scalar(b1pow, t), _scalar(b2pow, t)
    rho[...] = (rho * (beta2 - p2) + p2) / (one - p2)      # t * b2^t / (1 - b2^t), by recurrence
    rho_inf = two / (one - beta2) - one
    rho_t = rho_inf - two * _scalar(rho, t)
    m1, m2 = _moments(ins, t, beta1, beta2)
    step = m1 / (one - p1)
    step *= _lr(ins, param)
    if rho_t > 5:
        r_t = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        denom = np.sqrt(m2)
        denom += t(attrs["epsilon"])
        step *= t(r_t) * np.sqrt(one - p2)
        np.divide(step, denom, out=step)
    np.subtract(param, step, out=param)
    return _outs(ins, "Moment1", "Moment2", "Beta1Pow", "Beta2Pow", "Rho")


_update_op("radam", ("Moment1", "Moment2"), ("Beta1Pow", "Beta2Pow", "Rho"),
           {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}, _radam_kernel,
           "b1p *= b1; b2p *= b2; Rho = t b2^t / (1 - b2^t) (recurrence); m, v as adam; rho_t = rho_inf - "
           "2 Rho, rho_inf = 2 / (1 - b2) - 1; if rho_t > 5: Param -= lr m / (1 - b1p) * r_t * sqrt(1 - b2p) "
           "/ (sqrt(v) + eps), r_t = sqrt((rho_t-4)(rho_t-2)rho_inf / ((rho_inf-4)(rho_inf-2)rho_t)); "
           "else Param -= lr m / (1 - b1p)",
           {"beta1": BETA, "beta2": BETA, "epsilon": NONNEG})
