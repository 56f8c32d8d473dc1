"""Resumable training: train N steps, save (model, optimizer, LR schedule, RNG state), load in a
FRESH process, train N more; losses and parameters are bit-identical to 2N uninterrupted steps."""
import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "resume_script.py")
STEPS = 3


def _run(mode, phase, ckpt, out):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, SCRIPT, mode, phase, str(STEPS), str(ckpt), str(out)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return np.load(out)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["static", "eager", "recompute", "dp"])
def test_resume_in_a_fresh_process_is_bit_identical(mode, tmp_path):
    ckpt = tmp_path / "ckpt"
    full = _run(mode, "full", ckpt, tmp_path / "full.npz")
    first = _run(mode, "first", ckpt, tmp_path / "first.npz")
    second = _run(mode, "second", ckpt, tmp_path / "second.npz")
    resumed = [first[f"loss_{i}"] for i in range(STEPS)] + [second[f"loss_{i}"] for i in range(STEPS)]
    for i in range(2 * STEPS):
        np.testing.assert_array_equal(resumed[i], full[f"loss_{i}"], err_msg=f"{mode}: loss of step {i}")
    params = [k for k in full.files if k.startswith("param:")]
    assert len(params) >= 4
    for key in params:
        np.testing.assert_array_equal(second[key], full[key], err_msg=f"{mode}: {key}")
    # the losses change from step to step (the run really trains, and the checks could fail)
    assert len({float(np.mean(v)) for v in resumed}) == 2 * STEPS
