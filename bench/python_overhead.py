#!/usr/bin/env python3
"""Per-frame overhead of the Python package over the C++ API, on the same Session.

    PYTHONPATH=build/python CO_UP_PLUGIN_PATH=build/plugins python3 bench/python_overhead.py

Each case runs the same frames through one Session twice: with the loop in C++ (the module's
time_run_loop / time_stream_loop: Session::run, or try_submit + wait_result, on a Tensor made
once) and with the loop in Python (Session.run, Session.stream). The difference per frame is
what Python adds: argument handling, the GIL released and taken back, outputs wrapped as numpy
arrays, the generator. Inputs:
  run, in place   an ordinary C-contiguous float32 numpy array: read where it lies, no copy
  run, copied     a float64 array: converted and copied into a Tensor (what the target excludes)
  stream          every frame is copied into the pipeline in both loops (the API keeps it)
The network is tests/python's tiny one (three 3x3 convolutions on 4x8x8), so that per-frame
compute is a few microseconds and the overhead is not lost in its noise. Wall time: medians and
minimums over --repeats (the minimum: the cost without preemption on a shared host); CPU time of
the calling thread: Python's own work per frame, the least disturbed by other load.
"""

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

import co_up

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "python"))
from tiny_model import INPUT_SHAPE, write_tiny_model  # noqa: E402

TWO_CPUS = {"name": "two-cpus", "processors": [
    {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
    {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1]}]}


def per_frame_us(seconds, frames):
    return seconds / frames * 1e6


def timed(loop):
    """(wall seconds, CPU seconds of this thread) of loop(). The CPU time is the caller's own work
    per frame, which the other processes on a shared host disturb much less than the wall time."""
    wall, cpu = time.perf_counter(), time.thread_time()
    loop()
    return time.perf_counter() - wall, time.thread_time() - cpu


def bench(session, frames, repeats):
    x = np.random.default_rng(0).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
    in_place = x
    copied = x.astype(np.float64)
    stream_frames = [x] * frames
    inner = session._s
    results = {}

    def run_loop(array):
        run = session.run
        for _ in range(frames):
            run(array)

    def stream_loop():
        for _ in session.stream(stream_frames):
            pass

    cases = {
        "run, in place": (lambda: inner.time_run_loop(x, frames), lambda: run_loop(in_place)),
        "run, copied": (lambda: inner.time_run_loop(x, frames), lambda: run_loop(copied)),
        "stream": (lambda: inner.time_stream_loop(x, frames), stream_loop),
    }
    for name, (cpp, python) in cases.items():
        timed(cpp), timed(python)  # warm up
        cpp_wall, cpp_cpu, py_wall, py_cpu = [], [], [], []
        for _ in range(repeats):  # interleaved, so that load on the machine hits both alike
            wall, cpu = timed(cpp)
            cpp_wall.append(per_frame_us(wall, frames))
            cpp_cpu.append(per_frame_us(cpu, frames))
            wall, cpu = timed(python)
            py_wall.append(per_frame_us(wall, frames))
            py_cpu.append(per_frame_us(cpu, frames))
        results[name] = {
            "cpp_us": statistics.median(cpp_wall),
            "python_us": statistics.median(py_wall),
            "overhead_us": statistics.median(p - c for p, c in zip(py_wall, cpp_wall)),
            # On a shared host the minimum is the cost without preemption (bench/README.md).
            "overhead_min_us": min(py_wall) - min(cpp_wall),
            # The calling thread's CPU time per frame: Python's own work over the C++ loop's.
            "cpp_cpu_us": statistics.median(cpp_cpu),
            "python_cpu_us": statistics.median(py_cpu),
            "overhead_cpu_us": statistics.median(py_cpu) - statistics.median(cpp_cpu),
        }
    return results


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        model = write_tiny_model(scratch / "tiny.onnx")
        platform = scratch / "platform.json"
        platform.write_text(json.dumps(TWO_CPUS))
        rows = {}
        for order, mode in (("BBB", "switch"), ("BLL", "pipeline")):
            with co_up.Session(model, order=order, mode=mode, platform_file=platform) as s:
                for name, r in bench(s, args.frames, args.repeats).items():
                    rows[f"{name} ({order} {mode})"] = r

    print(f"per frame over {args.repeats} x {args.frames} frames, microseconds: wall time (median, the "
          f"overhead's median and from the minimums) and the calling thread's CPU time (medians)")
    print(f"  {'case':<34} {'C++ API':>8} {'Python':>8} {'overhead':>8} {'(min)':>7} |"
          f" {'CPU C++':>8} {'CPU Py':>8} {'overhead':>8}")
    for name, r in rows.items():
        print(f"  {name:<34} {r['cpp_us']:>8.1f} {r['python_us']:>8.1f} {r['overhead_us']:>8.1f}"
              f" {r['overhead_min_us']:>7.1f} | {r['cpp_cpu_us']:>8.1f} {r['python_cpu_us']:>8.1f}"
              f" {r['overhead_cpu_us']:>8.1f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
