"""save_inference_model of the book's ResNet-32 (CIFAR): one file per variable, written one by one
(each with its own fsync and directory fsync, as before issue 17) vs in one batch
(``container.write_many``: parallel fsyncs, one directory fsync).  Each configuration runs in a
fresh process; rounds interleave.  Usage: ``python bench/save_vars_files.py [rounds]``."""
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(mode: str) -> float:
    sys.path.insert(0, ROOT)
    import headrace.fluid as fluid
    from headrace.framework import fluid_io, io as fio
    from tests.book.chapters.resnet import resnet_cifar10

    if mode == "serial":       # the code before issue 17: write_state per variable
        def write_states(files):
            for path, arrays in files.items():
                fio.write_state(path, arrays)
        fluid_io.fio.write_states = write_states
    images = fluid.layers.data(name="pixel", shape=[3, 32, 32], dtype="float32")
    predict = resnet_cifar10(images, 32)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    with tempfile.TemporaryDirectory() as d:
        start = time.perf_counter()
        for i in range(3):
            fluid.io.save_inference_model(os.path.join(d, str(i)), ["pixel"], [predict], exe)
        return (time.perf_counter() - start) / 3


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(child(sys.argv[2]))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    times = {"serial": [], "batch": []}
    for _ in range(rounds):
        for mode in times:
            out = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True, text=True, check=True)
            times[mode].append(float(out.stdout.strip().splitlines()[-1]))
    for mode, ts in times.items():
        print(f"{mode:6s}: best {min(ts):.3f} s, median {sorted(ts)[len(ts) // 2]:.3f} s per save_inference_model")
    print(f"speed-up (best): {min(times['serial']) / min(times['batch']):.1f}x")


if __name__ == "__main__":
    main()
