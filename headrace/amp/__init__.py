"""``paddle.amp``: automatic mixed precision, as the reference's CPU build provides it.

The reference enables AMP only on CUDA/XPU/custom devices; on a CPU place ``auto_cast`` and
``GradScaler`` warn that they make no effect and run disabled, and ``decorate`` returns the models
and optimizers unchanged.  headrace runs on the CPU only, so AMP-wrapped scripts run the same way:
everything computes in float32 (the dtypes the model has), ``GradScaler.scale(loss)`` returns the
loss itself and ``minimize``/``step`` call the optimizer directly.  Arguments are checked as the
reference checks them.
"""
from .auto_cast import amp_guard, auto_cast, decorate, is_bfloat16_supported, is_float16_supported
from .grad_scaler import AmpScaler, GradScaler

__all__ = ["AmpScaler", "GradScaler", "amp_guard", "auto_cast", "decorate", "is_bfloat16_supported",
           "is_float16_supported"]
