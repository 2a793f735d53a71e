#!/usr/bin/env python3
"""Per-frame overhead of the Python package over the C++ API, on the same Session.

    PYTHONPATH=build/python CO_UP_PLUGIN_PATH=build/plugins python3 bench/python_overhead.py

Each case runs the same frames through one Session twice: with the loop in C++ (the module's
time_run_loop / time_stream_loop: Session::run, or try_submit + wait_result, on a Tensor made
once) and with the loop in Python (Session.run, Session.stream). The difference per frame is
what Python adds: argument handling, the GIL released and taken back, outputs wrapped as numpy
arrays, the generator. Inputs:
  run, in place   an array from Session.new_input(): read where it lies, no copy
  run, copied     an ordinary numpy array: one copy into a Tensor (what the target excludes)
  stream          every frame is copied into the pipeline in both loops (the API keeps it)
The network is tests/python's tiny one (three 3x3 convolutions on 4x8x8), so that per-frame
compute is a few microseconds and the overhead is not lost in its noise. Medians and minimums
over --repeats (the minimum: the cost without preemption on a shared host).
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "python"))
from tiny_model import INPUT_SHAPE, write_tiny_model  # noqa: E402

TWO_CPUS = {"name": "two-cpus", "processors": [
    {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
    {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1]}]}


def per_frame_us(seconds, frames):
    return seconds / frames * 1e6


def time_python(loop):
    start = time.perf_counter()
    loop()
    return time.perf_counter() - start


def bench(session, frames, repeats):
    x = np.random.default_rng(0).uniform(-1, 1, INPUT_SHAPE).astype(np.float32)
    in_place = session.new_input()
    in_place[...] = x
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
        "run, in place": (lambda: inner.time_run_loop(x, frames), lambda: time_python(lambda: run_loop(in_place))),
        "run, copied": (lambda: inner.time_run_loop(x, frames), lambda: time_python(lambda: run_loop(x))),
        "stream": (lambda: inner.time_stream_loop(x, frames), lambda: time_python(stream_loop)),
    }
    for name, (cpp, python) in cases.items():
        cpp(), python()  # warm up
        cpp_us, python_us = [], []
        for _ in range(repeats):  # interleaved, so that load on the machine hits both alike
            cpp_us.append(per_frame_us(cpp(), frames))
            python_us.append(per_frame_us(python(), frames))
        results[name] = {
            "cpp_us": statistics.median(cpp_us),
            "python_us": statistics.median(python_us),
            "overhead_us": statistics.median(p - c for p, c in zip(python_us, cpp_us)),
            # On a shared host the minimum is the cost without preemption (bench/README.md).
            "cpp_min_us": min(cpp_us),
            "python_min_us": min(python_us),
            "overhead_min_us": min(python_us) - min(cpp_us),
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

    print(f"per frame over {args.repeats} x {args.frames} frames (microseconds): median, and minimum")
    print(f"  {'case':<34} {'C++ API':>9} {'Python':>9} {'overhead':>9} | {'min C++':>8} {'min Py':>8} {'overhead':>9}")
    for name, r in rows.items():
        print(f"  {name:<34} {r['cpp_us']:>9.1f} {r['python_us']:>9.1f} {r['overhead_us']:>9.1f} | "
              f"{r['cpp_min_us']:>8.1f} {r['python_min_us']:>8.1f} {r['overhead_min_us']:>9.1f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
