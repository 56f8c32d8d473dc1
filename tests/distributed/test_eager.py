"""Eager data parallel over MPI processes equals one model on the whole batch: DataParallel with
gradient buckets and no_sync, SyncBatchNorm, recompute, LARS and global-norm clipping; and the
paddle.distributed collectives (the worker computes both sides, this test compares them)."""
import numpy as np
import pytest

from .mpirun import launch

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("world,shm", [(2, "1"), (4, "1"), (2, "0")])
def test_data_parallel_equals_one_model_on_the_whole_batch(world, shm, tmp_path):
    """shm "0": MPI's own buffer collectives instead of shared-memory windows (as across machines)."""
    out = tmp_path / "result.npz"
    launch(world, "eager_dp.py", out, extra_env={"HEADRACE_MPI_SHM": shm})
    r = np.load(out)
    assert list(r["world"]) == [world] * world
    ranks = np.arange(world)
    # collectives: sum of rank+1, the last rank's value, every rank's [rank, -rank]
    np.testing.assert_array_equal(r["all_reduce"], np.full((world, 2, 3), world * (world + 1) / 2))
    np.testing.assert_array_equal(r["broadcast"], np.full((world, 3), (world - 1) * 10))
    for k in range(world):
        np.testing.assert_array_equal(r["all_gather"][k], np.stack([ranks, -ranks], axis=1))
    # training: the mean of the ranks' losses is the whole batch's loss; parameters and batch-norm
    # statistics equal the single model's, and are bit-identical on every rank
    np.testing.assert_allclose(r["dist_losses"].mean(axis=0), r["solo_losses"][0], rtol=1e-6, atol=1e-7)
    names = [k[5:] for k in r.files if k.startswith("dist/")]
    assert {"fc1.weight", "bn._mean", "bn._variance", "fc3.bias"} <= set(names)
    for name in names:
        dist, solo = r[f"dist/{name}"], r[f"solo/{name}"]
        for k in range(1, world):
            np.testing.assert_array_equal(dist[k], dist[0], err_msg=name)
        np.testing.assert_allclose(dist[0], solo[0], rtol=1e-5, atol=1e-6, err_msg=name)
