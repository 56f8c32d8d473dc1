"""``paddle.io``: datasets, samplers and data loading."""
from .collate import default_collate_fn, default_convert_fn
from .dataloader import DataLoader
from .dataset import (ChainDataset, ComposeDataset, ConcatDataset, Dataset, IterableDataset, Subset,
                      TensorDataset, random_split)
from .sampler import BatchSampler, DistributedBatchSampler, Sampler
from .samplers import RandomSampler, SequenceSampler, SubsetRandomSampler, WeightedRandomSampler
from .worker import get_worker_info

__all__ = ["BatchSampler", "ChainDataset", "ComposeDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedBatchSampler", "IterableDataset", "RandomSampler", "Sampler", "SequenceSampler",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "get_worker_info",
           "random_split", "default_collate_fn", "default_convert_fn"]
