"""The default mode: eager for ``import headrace`` (Paddle 2.x), static once ``headrace.fluid`` is
imported (fluid 1.x), unless the user chose a mode explicitly.  Each case is a fresh interpreter."""
import subprocess
import sys

import pytest

CASES = [
    ("import headrace as paddle", True),
    ("import headrace as paddle; import headrace.fluid", False),
    ("import headrace.fluid as fluid; import headrace as paddle", False),
    ("import headrace as paddle; paddle.fluid", False),
    ("import headrace as paddle; paddle.disable_static(); import headrace.fluid", True),
    ("import headrace as paddle; paddle.enable_static(); paddle.disable_static(); import headrace.fluid", True),
    ("import headrace as paddle; import headrace.fluid as fluid; paddle.disable_static()", True),
    ("import headrace.static; import headrace as paddle", True),
]


@pytest.mark.parametrize("code,dynamic", CASES)
def test_default_mode(code, dynamic):
    out = subprocess.run([sys.executable, "-c", code + "; print(paddle.in_dynamic_mode())"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(dynamic), out.stderr


def test_importing_headrace_does_not_import_fluid():
    code = ("import sys, headrace, headrace.nn, headrace.static, headrace.optimizer, headrace.distributed; "
            "print(sorted(m for m in sys.modules if m.startswith('headrace.fluid')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_dygraph_guard_switches_and_restores():
    import headrace as paddle
    import headrace.fluid as fluid

    paddle.enable_static()
    with fluid.dygraph.guard():
        assert paddle.in_dynamic_mode()
        linear = fluid.Linear(3, 2)
        assert linear.weight.name == "linear_0.w_0"
    assert not paddle.in_dynamic_mode()
