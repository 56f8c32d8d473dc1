"""Devices. This build computes on the CPU; ``cpu`` exposes its memory accounting."""
from ..runtime.places import is_compiled_with_cuda
from . import cpu

_device = "cpu"


def get_device() -> str:
    return _device


def set_device(device: str) -> str:
    """Only ``"cpu"`` is available; anything else is a clear error."""
    from ..core.errors import DeviceError

    if device != "cpu":
        raise DeviceError(f"set_device({device!r}): this build of headrace only has the 'cpu' device")
    return _device


__all__ = ["cpu", "get_device", "is_compiled_with_cuda", "set_device"]
