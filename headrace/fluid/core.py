"""``paddle.fluid.core``: the few constants user code reads from the reference's C++ core."""
from ..core.roles import ROLE_ATTR, ROLE_VAR_ATTR, OpRole
from ..runtime import CPUPlace, CUDAPlace, LoDTensor, Scope, is_compiled_with_cuda


class op_proto_and_checker_maker:  # noqa: N801  (the reference's spelling)
    OpRole = OpRole

    @staticmethod
    def kOpRoleAttrName() -> str:  # noqa: N802
        return ROLE_ATTR

    @staticmethod
    def kOpRoleVarAttrName() -> str:  # noqa: N802
        return ROLE_VAR_ATTR


__all__ = ["CPUPlace", "CUDAPlace", "LoDTensor", "Scope", "is_compiled_with_cuda", "op_proto_and_checker_maker"]
