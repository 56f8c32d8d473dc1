"""headrace.memory.plot and the command line: a real image and the estimate printed."""
import json
import subprocess
import sys

import pytest

import headrace as paddle
from headrace import memory
from headrace.memory.__main__ import main

from .nets import build

pytest.importorskip("matplotlib")


@pytest.fixture(autouse=True)
def static_mode():
    paddle.enable_static()
    yield


@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_plot_writes_the_timeline(tmp_path, suffix):
    main_prog, _, loss, feed = build("mlp", True)
    path = tmp_path / f"timeline{suffix}"
    est = memory.plot(main_prog, feed, path, fetch_list=[loss])
    data = path.read_bytes()
    assert est.peak_bytes == memory.estimate(main_prog, feed, fetch_list=[loss]).peak_bytes
    if suffix == ".svg":
        text = data.decode()
        assert "<svg" in text and "recomputed forward" in text and "peak" in text
    else:
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    with pytest.raises(ValueError, match="must end in .svg or .png"):
        memory.plot(main_prog, feed, tmp_path / "x.pdf")


def test_command_line_on_a_program_file(tmp_path, capsys):
    main_prog, _, loss, feed = build("conv_bn", True)
    path = tmp_path / "train.json"
    path.write_text(json.dumps(main_prog.to_dict()))
    est = memory.estimate(main_prog, feed)
    assert main([str(path), "--feed", "img=8,3,16,16", "--feed", "label=8,1",
                 "--plot", str(tmp_path / "t.svg")]) == 0
    out = capsys.readouterr().out
    assert f"peak:        {est.peak_bytes} bytes" in out and "timeline:" in out
    assert (tmp_path / "t.svg").stat().st_size > 1000
    assert main([str(path), "--feed", "img=8,3,16"]) == 1
    assert "headrace.memory:" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(path), "--feed", "img"])


def test_module_runs_as_a_program(tmp_path):
    result = subprocess.run([sys.executable, "-m", "headrace.memory", str(tmp_path / "missing.json"),
                             "--feed", "x=1,2"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "no program file" in result.stderr


def test_readme_timeline_script(tmp_path):
    """scripts/memory_timeline.py, which drew the README's image, still runs."""
    import pathlib

    script = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "memory_timeline.py"
    out = tmp_path / "timeline.png"
    result = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG" and "peak" in result.stdout


def test_command_line_on_a_saved_pdmodel(tmp_path, capsys):
    """A program saved by paddle.static.save (.pdmodel) is estimated like the program itself."""
    import headrace.static as static
    from headrace.runtime.scope import Scope, scope_guard

    main_prog, startup, loss, feed = build("mlp", True)
    with scope_guard(Scope()):
        exe = static.Executor()
        exe.run(startup)
        static.save(main_prog, str(tmp_path / "model"))
    est = memory.estimate(main_prog, feed)
    assert main([str(tmp_path / "model.pdmodel"), "--feed", "x=32,32"]) == 0
    assert f"peak:        {est.peak_bytes} bytes" in capsys.readouterr().out
