"""``paddle.io`` (minimal for now): ``Sampler``, ``BatchSampler`` and ``DistributedBatchSampler``."""
from .sampler import BatchSampler, DistributedBatchSampler, Sampler

__all__ = ["BatchSampler", "DistributedBatchSampler", "Sampler"]
