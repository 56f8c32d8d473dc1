"""Ctrl-C (a real SIGINT) at random moments of Model.fit: fit ends with KeyboardInterrupt and every
checkpoint file already in save_dir is whole and loads (paddle.save writes atomically)."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import headrace as paddle

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import headrace as paddle
    from headrace import nn

    class Saved(paddle.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            print("epoch", epoch, flush=True)

    rng = np.random.default_rng(0)
    x = rng.random((64, 512)).astype("float32")
    y = rng.integers(0, 10, (64, 1)).astype("int64")
    net = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))   # ~2 MB of parameters
    model = paddle.Model(net)
    model.prepare(paddle.optimizer.Adam(0.001, parameters=net.parameters()), nn.CrossEntropyLoss())
    model.fit([(x, y)], epochs=10000, verbose=0, save_dir=sys.argv[1], callbacks=[Saved()])
""")


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.13, 0.29])
def test_sigint_during_fit_leaves_whole_checkpoints(tmp_path, delay):
    save_dir = tmp_path / "ckpt"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(save_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    try:
        while proc.stdout.readline().split()[:2] != ["epoch", "2"]:     # a few checkpoints are written
            assert proc.poll() is None, proc.stderr.read()
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, err
    files = sorted(os.listdir(save_dir))
    params = [f for f in files if f.endswith(".pdparams")]
    assert len(params) >= 2, files
    for name in files:
        if name.endswith((".pdparams", ".pdopt")):
            state = paddle.load(str(save_dir / name), return_numpy=True)      # checksummed: whole
            assert all(np.isfinite(v).all() for v in state.values() if isinstance(v, np.ndarray))
        else:
            assert name.startswith("."), name            # at most a stray temporary file, never a torn target
