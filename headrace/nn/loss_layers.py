"""Loss and similarity layers of ``paddle.nn`` (``CrossEntropyLoss``, ``MSELoss``, ...): each stores
its constructor arguments (the reference's names, order and defaults) and calls its functional form
in ``forward`` with the inputs the reference's layer takes.  Both modes."""
from __future__ import annotations

from ..core.errors import ArgTypeError, located
from . import cross_entropy as _ce
from . import loss as _loss
from .layer import Layer


def _loss_layer(class_name, func, inputs, **defaults):
    """A Layer whose ``forward(*inputs)`` returns ``func(*inputs, **constructor arguments)``."""
    def __init__(self, *args, **kwargs):
        Layer.__init__(self)
        if len(args) > len(defaults):
            raise located(ArgTypeError, f"{class_name}() takes at most {len(defaults)} positional arguments, got {len(args)}")
        params = dict(defaults)
        params.update(zip(defaults, args))
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise located(ArgTypeError, f"{class_name}() got unexpected keyword arguments {sorted(unknown)}; it takes "
                            f"{list(defaults)}")
        params.update(kwargs)
        self._params = params
        for key, value in params.items():
            setattr(self, key, value)

    def forward(self, *args):
        if len(args) != len(inputs):
            raise located(ArgTypeError, f"{class_name}.forward() takes {len(inputs)} inputs ({', '.join(inputs)}), "
                            f"got {len(args)}")
        return func(*args, **self._params)

    doc = f"Layer form of ``F.{func.__name__}``: ``{class_name}({', '.join(f'{k}={v!r}' for k, v in defaults.items())})``" \
          f", called as ``layer({', '.join(inputs)})``."
    return type(class_name, (Layer,), {"__init__": __init__, "forward": forward, "__doc__": doc})


CrossEntropyLoss = _loss_layer("CrossEntropyLoss", _ce.cross_entropy, ("input", "label"), weight=None,
                               ignore_index=-100, reduction="mean", soft_label=False, axis=-1, use_softmax=True,
                               label_smoothing=0.0, name=None)
MSELoss = _loss_layer("MSELoss", _loss.mse_loss, ("input", "label"), reduction="mean")
L1Loss = _loss_layer("L1Loss", _loss.l1_loss, ("input", "label"), reduction="mean", name=None)
SmoothL1Loss = _loss_layer("SmoothL1Loss", _loss.smooth_l1_loss, ("input", "label"), reduction="mean", delta=1.0,
                           name=None)
BCELoss = _loss_layer("BCELoss", _loss.binary_cross_entropy, ("input", "label"), weight=None, reduction="mean",
                      name=None)
BCEWithLogitsLoss = _loss_layer("BCEWithLogitsLoss", _loss.binary_cross_entropy_with_logits, ("logit", "label"),
                                weight=None, reduction="mean", pos_weight=None, name=None)
NLLLoss = _loss_layer("NLLLoss", _loss.nll_loss, ("input", "label"), weight=None, ignore_index=-100,
                      reduction="mean", name=None)
KLDivLoss = _loss_layer("KLDivLoss", _loss.kl_div, ("input", "label"), reduction="mean", log_target=False)
MarginRankingLoss = _loss_layer("MarginRankingLoss", _loss.margin_ranking_loss, ("input", "other", "label"),
                                margin=0.0, reduction="mean", name=None)
HingeEmbeddingLoss = _loss_layer("HingeEmbeddingLoss", _loss.hinge_embedding_loss, ("input", "label"), margin=1.0,
                                 reduction="mean", name=None)
CosineEmbeddingLoss = _loss_layer("CosineEmbeddingLoss", _loss.cosine_embedding_loss, ("input1", "input2", "label"),
                                  margin=0, reduction="mean", name=None)
SoftMarginLoss = _loss_layer("SoftMarginLoss", _loss.soft_margin_loss, ("input", "label"), reduction="mean",
                             name=None)
MultiLabelSoftMarginLoss = _loss_layer("MultiLabelSoftMarginLoss", _loss.multi_label_soft_margin_loss,
                                       ("input", "label"), weight=None, reduction="mean", name=None)
TripletMarginLoss = _loss_layer("TripletMarginLoss", _loss.triplet_margin_loss, ("input", "positive", "negative"),
                                margin=1.0, p=2.0, epsilon=1e-6, swap=False, reduction="mean", name=None)
PoissonNLLLoss = _loss_layer("PoissonNLLLoss", _loss.poisson_nll_loss, ("input", "label"), log_input=True,
                             full=False, epsilon=1e-8, reduction="mean", name=None)
GaussianNLLLoss = _loss_layer("GaussianNLLLoss", _loss.gaussian_nll_loss, ("input", "label", "variance"),
                              full=False, epsilon=1e-6, reduction="mean", name=None)
MultiLabelMarginLoss = _loss_layer("MultiLabelMarginLoss", _loss.multi_label_margin_loss, ("input", "label"),
                                   reduction="mean", name=None)
MultiMarginLoss = _loss_layer("MultiMarginLoss", _loss.multi_margin_loss, ("input", "label"), p=1, margin=1.0,
                              weight=None, reduction="mean", name=None)
TripletMarginWithDistanceLoss = _loss_layer("TripletMarginWithDistanceLoss", _loss.triplet_margin_with_distance_loss,
                                            ("input", "positive", "negative"), distance_function=None, margin=1.0,
                                            swap=False, reduction="mean", name=None)
CosineSimilarity = _loss_layer("CosineSimilarity", _loss.cosine_similarity, ("x1", "x2"), axis=1, eps=1e-8)
PairwiseDistance = _loss_layer("PairwiseDistance", _loss.pairwise_distance, ("x", "y"), p=2.0, epsilon=1e-6,
                               keepdim=False, name=None)

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CosineEmbeddingLoss", "CosineSimilarity", "CrossEntropyLoss",
           "GaussianNLLLoss", "HingeEmbeddingLoss", "KLDivLoss", "L1Loss", "MSELoss", "MarginRankingLoss",
           "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "PairwiseDistance", "PoissonNLLLoss", "SmoothL1Loss",
           "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss"]
