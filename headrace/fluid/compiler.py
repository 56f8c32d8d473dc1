"""``paddle.fluid.compiler``: ``CompiledProgram`` with its ``BuildStrategy`` and ``ExecutionStrategy``
(the same classes as ``paddle.static``)."""
from ..passes.strategy import BuildStrategy, ExecutionStrategy
from ..runtime.compiled import CompiledProgram

__all__ = ["BuildStrategy", "CompiledProgram", "ExecutionStrategy"]
