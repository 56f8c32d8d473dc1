"""Runtime: Scope, Executor, plans, places and memory accounting."""
from .executor import Executor
from .memory import max_memory_allocated, memory_allocated, reset_max_memory_allocated
from .places import CPUPlace, CUDAPinnedPlace, CUDAPlace, cpu_places, cuda_places, is_compiled_with_cuda
from .scope import LoDTensor, Scope, global_scope, scope_guard

__all__ = ["CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "Executor", "LoDTensor", "Scope",
           "cpu_places", "cuda_places", "global_scope", "is_compiled_with_cuda",
           "max_memory_allocated", "memory_allocated", "reset_max_memory_allocated", "scope_guard"]
