"""``paddle.io``: datasets, samplers and data loading."""
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, DistributedBatchSampler, Sampler

__all__ = ["BatchSampler", "Dataset", "DistributedBatchSampler", "IterableDataset", "Sampler"]
