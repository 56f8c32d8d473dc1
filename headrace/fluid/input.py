"""``paddle.fluid.input`` / ``fluid.embedding``: the embedding whose ids may have any shape (the
output appends the embedding dim), unlike ``fluid.layers.embedding`` which wants ids [..., 1]."""
from ..nn import static_layers as _S


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,  # noqa: A002
              dtype="float32"):
    """Rows of a [vocab, dim] table for int64 ids of any shape: output shape ids.shape + [dim]."""
    return _S.embedding(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype, legacy=False)


__all__ = ["embedding"]
