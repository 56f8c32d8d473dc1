"""``paddle.autograd``: ``grad`` and ``backward`` (eager tape: ``eager/autograd.py``)."""
from ..core import context
from ..eager.autograd import backward
from ..eager.autograd import grad as _eager_grad


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=False, no_grad_vars=None):
    """d(outputs)/d(inputs): eager, the tape's gradients as Tensors (``create_graph=True`` is not
    supported); static, ``paddle.static.gradients`` (gradient Variables appended to the program)."""
    if context.in_dynamic_mode():
        return _eager_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, only_inputs,
                           allow_unused, no_grad_vars)
    from ..static.backward import gradients

    return gradients(outputs, inputs, grad_outputs, no_grad_vars)


__all__ = ["backward", "grad"]
