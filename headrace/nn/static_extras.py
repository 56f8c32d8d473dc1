"""``static.Print``, ``static.py_func``, ``static.device_guard`` (ops: ``ops/debug.py``)."""
from __future__ import annotations

import contextlib

from ..core import context
from ..core.variable import Variable
from ..ops.apply import apply_op
from ..ops.debug import new_print_uid, register_function


def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True,  # noqa: N802, A002
          print_tensor_type=True, print_tensor_shape=True, print_tensor_lod=True, print_phase="both"):
    """Print ``input`` when the op runs (forward, its gradient in backward, or both); returns a
    tensor equal to ``input`` that later ops should read so the print runs in order."""
    if print_phase not in ("forward", "backward", "both"):
        raise ValueError(f"Print: print_phase must be 'forward', 'backward' or 'both', got {print_phase!r}")
    name = getattr(input, "name", "") or ""
    attrs = {"first_n": int(first_n), "summarize": int(summarize), "message": message or "",
             "print_tensor_name": bool(print_tensor_name), "print_tensor_type": bool(print_tensor_type),
             "print_tensor_shape": bool(print_tensor_shape), "print_tensor_lod": bool(print_tensor_lod),
             "print_phase": print_phase, "tensor_name": name, "print_uid": new_print_uid()}
    return apply_op("print", {"In": input}, attrs)["Out"][0]


def _var_list(value, what):
    if value is None:
        return []
    if isinstance(value, Variable):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, Variable) for v in value):
        return list(value)
    raise TypeError(f"py_func: {what} must be a Variable, a list of Variables or None, got {type(value).__name__}")


def py_func(func, x, out, backward_func=None, skip_vars_in_backward_input=None):
    """Run the Python function ``func`` on the values of ``x`` inside a static program; its results
    fill ``out`` (Variables the caller created with shape and dtype).  ``backward_func`` receives
    the inputs, the outputs (minus ``skip_vars_in_backward_input``) and the output gradients, and
    returns the input gradients."""
    if context.in_dynamic_mode():
        raise RuntimeError("py_func builds an op of a static program; in dygraph mode call the function directly")
    xs, outs = _var_list(x, "x"), _var_list(out, "out")
    skip = _var_list(skip_vars_in_backward_input, "skip_vars_in_backward_input")
    known = {v.name for v in xs + outs}
    for v in skip:
        if v.name not in known:
            raise ValueError(f"py_func: skip_vars_in_backward_input names {v.name!r}, which is neither in x nor in out")
    for v in outs:
        if v.shape is None or v.dtype is None:
            raise ValueError(f"py_func: output {v.name!r} needs a shape and a dtype (create it with both)")
    attrs = {"func_id": register_function(func),
             "backward_id": register_function(backward_func) if backward_func is not None else -1,
             "skip_vars": [v.name for v in skip], "x_names": [v.name for v in xs], "out_names": [v.name for v in outs],
             "out_metas": [[list(v.shape), str(v.dtype)] for v in outs]}
    apply_op("py_func", {"X": xs} if xs else {}, attrs, {"Out": outs} if outs else None)
    return out


_DEVICES = ("cpu", "gpu", "npu", "xpu")


@contextlib.contextmanager
def device_guard(device=None):
    """Ops built inside record ``op_device`` (as the reference; here every op runs on the CPU)."""
    if device is not None and not isinstance(device, str):
        raise TypeError(f"device_guard: device must be a str or None, got {type(device).__name__}")
    kind = (device or "").split(":")[0]
    if device and ":" in device and kind == "cpu":
        raise ValueError("Should not set device id for cpu.")
    if kind not in _DEVICES + ("",):
        raise ValueError("The Attr(device) should be 'cpu' 'npu' 'xpu' or 'gpu', and it can also be empty string "
                         f"or None when there is no need to specify device. But received {device}")
    if not device:
        yield
        return
    with context.device_scope(device):
        yield


def auc(input, label, curve="ROC", num_thresholds=2 ** 12 - 1, topk=1, slide_steps=1,  # noqa: A002
        ins_tag_weight=None):
    """``static.auc``: (global AUC, AUC of the last ``slide_steps`` batches, [batch_stat_pos,
    batch_stat_neg, stat_pos, stat_neg]); the counts are persistable int64 variables that
    accumulate across runs, in the reference's layout: batch states
    ``[(1 + slide_steps) * (num_thresholds + 1) + 1]``, global states ``[1, num_thresholds + 1]``
    (op ``auc``, ``ops/metric.py``).  ``ins_tag_weight`` (float [1, 1]): 0 marks a fake batch that
    is not counted."""
    from .static_layers import create_global_var

    if topk != 1:
        raise ValueError(f"static.auc: only topk=1 is supported (as the reference), got {topk}")
    width = int(num_thresholds) + 1
    steps = int(slide_steps)
    if steps < 0:
        raise ValueError(f"static.auc: slide_steps must be >= 0, got {slide_steps}")
    batch_pos = create_global_var([(1 + steps) * width + 1], 0, "int64", persistable=True)
    batch_neg = create_global_var([(1 + steps) * width + 1], 0, "int64", persistable=True)
    stat_pos = create_global_var([1, width], 0, "int64", persistable=True)
    stat_neg = create_global_var([1, width], 0, "int64", persistable=True)
    common = {"curve": curve, "num_thresholds": int(num_thresholds)}
    inputs = {"Predict": input, "Label": label}
    if ins_tag_weight is not None:
        inputs["InsTagWeight"] = ins_tag_weight
    batch_auc = apply_op("auc", {**inputs, "StatPos": batch_pos, "StatNeg": batch_neg},
                         {**common, "slide_steps": steps},
                         {"StatPosOut": batch_pos, "StatNegOut": batch_neg})["AUC"][0]
    global_auc = apply_op("auc", {**inputs, "StatPos": stat_pos, "StatNeg": stat_neg},
                          {**common, "slide_steps": 0}, {"StatPosOut": stat_pos, "StatNegOut": stat_neg})["AUC"][0]
    return global_auc, batch_auc, [batch_pos, batch_neg, stat_pos, stat_neg]
