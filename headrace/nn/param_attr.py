"""ParamAttr: how a layer's parameter is named, initialized, regularized and trained."""
from __future__ import annotations

from .initializer import Initializer
from ..core.errors import ArgTypeError, AttrError, located


class ParamAttr:
    """Options for one parameter. ``False`` in place of a ParamAttr (bias_attr=False) means
    "no such parameter"; ``None`` means defaults."""

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, do_model_average=True, need_clip=True):
        if name is not None and not isinstance(name, str):
            raise located(ArgTypeError, f"ParamAttr name must be a str, got {type(name).__name__}")
        if initializer is not None and not isinstance(initializer, Initializer):
            raise located(ArgTypeError, f"ParamAttr initializer must be an Initializer, got {type(initializer).__name__}")
        if not isinstance(learning_rate, (int, float)) or learning_rate < 0:
            raise located(AttrError, f"ParamAttr learning_rate must be a number >= 0, got {learning_rate!r}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = need_clip

    @staticmethod
    def to_attr(arg):
        """Normalize a layer's ``param_attr``/``bias_attr`` argument.

        None -> default ParamAttr; False -> False (no parameter); str -> named ParamAttr;
        an Initializer -> ParamAttr with it; a ParamAttr as is.
        """
        if arg is None:
            return ParamAttr()
        if arg is False:
            return False
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if arg is True:
            return ParamAttr()
        raise located(ArgTypeError, f"expected ParamAttr, str, Initializer, None or False, got {type(arg).__name__}")

    def __repr__(self):
        return (f"ParamAttr(name={self.name!r}, initializer={self.initializer!r}, "
                f"learning_rate={self.learning_rate}, trainable={self.trainable})")
