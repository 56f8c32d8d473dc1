"""Places: where kernels run. This build computes on the CPU only."""
from __future__ import annotations

import os

from ..core.errors import DeviceError


class Place:
    def is_cpu_place(self) -> bool:
        return False

    def is_gpu_place(self) -> bool:
        return False


class CPUPlace(Place):
    def is_cpu_place(self) -> bool:
        return True

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __hash__(self):
        return hash("cpu")

    def __repr__(self):
        return "Place(cpu)"


class CUDAPlace(Place):
    """Constructible (so code naming a GPU imports and builds), but nothing runs on it here."""

    def __init__(self, device_id: int = 0):
        self.device_id = int(device_id)

    def is_gpu_place(self) -> bool:
        return True

    def get_device_id(self) -> int:
        return self.device_id

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(("gpu", self.device_id))

    def __repr__(self):
        return f"Place(gpu:{self.device_id})"


class CUDAPinnedPlace(Place):
    def __repr__(self):
        return "Place(gpu_pinned)"


def is_compiled_with_cuda() -> bool:
    return False


def check_runnable(place) -> None:
    """Raise a clear error for places this build cannot compute on."""
    if place is None or isinstance(place, CPUPlace):
        return
    if isinstance(place, (CUDAPlace, CUDAPinnedPlace)):
        raise DeviceError(f"cannot run on {place}: this build of headrace has no GPU support "
                          "(it computes with NumPy on the CPU); use CPUPlace()")
    raise TypeError(f"expected a Place such as CPUPlace(), got {place!r}")


def cpu_places(device_count: int | None = None) -> list:
    """``device_count`` CPU places; by default ``CPU_NUM`` from the environment, else 1."""
    if device_count is None:
        raw = os.environ.get("CPU_NUM")
        if raw is None:
            device_count = 1
        else:
            try:
                device_count = int(raw)
            except ValueError:
                raise ValueError(f"CPU_NUM must be a positive integer, got {raw!r}") from None
    if device_count < 1:
        raise ValueError(f"the number of CPU places must be >= 1, got {device_count}")
    return [CPUPlace() for _ in range(device_count)]


def cuda_places(device_ids=None) -> list:
    raise DeviceError("cuda_places(): this build of headrace has no GPU support; use cpu_places()")
