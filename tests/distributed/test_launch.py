"""paddle.distributed.spawn and the launcher with a plain training script."""
import subprocess
import sys

import pytest

import headrace.distributed as dist

from .mpirun import ROOT, env
from .workers.spawned import train

pytestmark = pytest.mark.slow


def test_spawn_runs_the_function_on_every_rank(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    dist.spawn(train, args=(str(tmp_path),), nprocs=2)
    assert sorted(p.read_text() for p in tmp_path.glob("rank*.txt")) == ["0 2 3.0", "1 2 3.0"]
    with pytest.raises(RuntimeError, match="spawn: the job of 2 processes failed"):
        dist.spawn(train, args=(str(tmp_path), 1), nprocs=2)


def test_launch_passes_the_script_its_arguments(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import sys, headrace.distributed as dist\n"
                      "print('rank', dist.get_rank(), 'of', dist.get_world_size(), 'args', sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-m", "headrace.distributed.launch", "--nproc_per_node", "2",
                           str(script), "--lr", "0.1"], cwd=ROOT, env=env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == ["rank 0 of 2 args ['--lr', '0.1']", "rank 1 of 2 args ['--lr', '0.1']"]


def test_log_dir_gets_one_log_per_rank(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import sys, headrace.distributed as dist\n"
                      "print('out of rank', dist.get_rank())\nprint('err of rank', dist.get_rank(), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-m", "headrace.distributed.launch", "--nproc_per_node", "2",
                           "--log_dir", str(tmp_path / "logs"), str(script)], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for rank in (0, 1):
        assert (tmp_path / "logs" / f"workerlog.{rank}").read_text() == f"out of rank {rank}\n"
        assert (tmp_path / "logs" / f"workerlog.{rank}.err").read_text() == f"err of rank {rank}\n"


def test_the_readme_training_script_runs_on_two_ranks(tmp_path):
    import re

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Training on several processes or machines", 1)[1]
    script = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    (tmp_path / "train.py").write_text(script)
    proc = subprocess.run([sys.executable, "-m", "headrace.distributed.launch", "--nproc_per_node", "2",
                           str(tmp_path / "train.py")], cwd=ROOT, env=env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == ["rank 0 of 2: 4 batches per epoch", "rank 1 of 2: 4 batches per epoch"]


@pytest.mark.parametrize("printed,copies", [(0, 1), (1, 2), (2, 1)])
def test_a_rank_note_the_mpi_launcher_lost_is_printed(tmp_path, capfd, printed, copies):
    """MPI_Abort can end the MPI launcher before it forwards a failing rank's last lines: the rank
    also leaves them in the job folder and the launcher prints a note of which some line did not
    come through (whole: the lines in their context).  ``printed``: lines the job did print."""
    from headrace.distributed.launcher import run_job

    lines = ["headrace.distributed: rank 1 of 2 failed; ending every rank.", "Traceback: detail"]
    script = ("import os, sys\n"
              f"open(os.path.join(os.environ['HEADRACE_DIST_DIR'], 'note.1'), 'w').write({chr(10).join(lines)!r})\n"
              f"sys.stderr.write({''.join(line + chr(10) for line in lines[:printed])!r})\n"
              "sys.exit(1)\n")
    code = run_job([sys.executable, "-c", script], env=dict(env(), HEADRACE_DIST_DIR=str(tmp_path)))
    err = capfd.readouterr().err
    assert code == 1
    assert err.count(lines[0]) == copies and err.count(lines[1]) == max(1, copies - (printed == 1))
