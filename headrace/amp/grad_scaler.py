"""``GradScaler`` on the CPU: disabled, as the reference's (see ``amp/__init__``)."""
from __future__ import annotations

import warnings

from .auto_cast import NO_EFFECT


class AmpScaler:
    """Loss scaling for float16 training.  On the CPU it is disabled (with the reference's warning):
    ``scale`` returns the loss, ``minimize``/``step`` run the optimizer as is, ``update`` and
    ``unscale_`` do nothing; the settings are kept and reported."""

    def __init__(self, enable=True, init_loss_scaling=2.0 ** 16, incr_ratio=2.0, decr_ratio=0.5,
                 incr_every_n_steps=2000, decr_every_n_nan_or_inf=1, use_dynamic_loss_scaling=True):
        if enable:
            warnings.warn(NO_EFFECT.format(what="AmpScaler"), stacklevel=2)
        if incr_ratio <= 1.0:
            raise ValueError(f"The incr_ratio must be > 1.0, got {incr_ratio}")
        if decr_ratio >= 1.0:
            raise ValueError(f"The decr_ratio must be < 1.0, got {decr_ratio}")
        self._enable = False
        self._init_loss_scaling = float(init_loss_scaling)
        self._incr_ratio, self._decr_ratio = float(incr_ratio), float(decr_ratio)
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)

    def scale(self, var):
        return var

    def minimize(self, optimizer, *args, **kwargs):
        return optimizer.minimize(*args, **kwargs)

    def step(self, optimizer):
        optimizer.step()

    def update(self):
        return None

    def unscale_(self, optimizer):
        return None

    def is_enable(self) -> bool:
        return self._enable

    def is_use_dynamic_loss_scaling(self) -> bool:
        return self._use_dynamic_loss_scaling

    def get_init_loss_scaling(self) -> float:
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling) -> None:
        self._init_loss_scaling = float(new_init_loss_scaling)

    def get_incr_ratio(self) -> float:
        return self._incr_ratio

    def get_decr_ratio(self) -> float:
        return self._decr_ratio

    def get_incr_every_n_steps(self) -> int:
        return self._incr_every_n_steps

    def get_decr_every_n_nan_or_inf(self) -> int:
        return self._decr_every_n_nan_or_inf

    def state_dict(self) -> dict:
        """Empty while disabled, as the reference."""
        return {}

    def load_state_dict(self, state_dict) -> None:
        if state_dict:
            raise RuntimeError("GradScaler.load_state_dict: this scaler is disabled on the CPU and keeps no "
                               "state; the given state_dict is not empty")


class GradScaler(AmpScaler):
    """``paddle.amp.GradScaler`` (defaults of the 2.x reference: init_loss_scaling 2**16,
    incr_every_n_steps 2000, decr_every_n_nan_or_inf 1)."""

    def __call__(self, var):
        return self.scale(var)
