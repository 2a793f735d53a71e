#!/usr/bin/env python3
"""Per-layer time of one network at one thread and at two, on cpu-xnnpack, to find the layers
whose second thread does not pay (unsplit layers, uneven slices, passes on the caller alone).

    bench/intraop_layers.py NET [--reps=N] [--frames=N] [--build=DIR] [--fixtures=DIR] [--plugins=DIR]

NET is a fixture name (FIXTURES/NET.onnx with NET_input.npy). Per rep, in alternating order:
co_up all-B with --units=ops (one unit per Conv/Gemm and what is fused into it) at one thread
(B = core 0 of the detected host platform, taskset core 0) and at two
(platforms/host-2core-cluster.json, taskset cores 0-1), switch mode, --profile=2. A layer's time
is its fastest over every timed frame of every rep (on a shared host, the frames whose second
core was free: the loss left there is the layer's own, not the neighbours'). Rows are sorted by
the time lost against a perfect split, t1/2 - t2 (most lost first).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("net")
ap.add_argument("--reps", type=int, default=2)
ap.add_argument("--frames", type=int, default=60)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--build", default=os.path.join(root, "build"))
ap.add_argument("--fixtures", default=None)
ap.add_argument("--plugins", default=None, help="plugin directory (e.g. another commit's cpu-xnnpack)")
args = ap.parse_args()
fixtures = args.fixtures or os.path.join(args.build, "onnx-fixtures")
co_up = os.path.join(args.build, "co_up")
model = os.path.join(fixtures, args.net + ".onnx")
image = os.path.join(fixtures, args.net + "_input.npy")
for f in (co_up, model, image):
    if not os.path.exists(f):
        sys.exit(f"intraop_layers.py: {f} not found")
listing = subprocess.run([co_up, f"--model={model}", "--units=ops", "--list-layers"],
                         capture_output=True, text=True, check=True).stdout
count = int(listing.strip().splitlines()[-1].split()[0])
out_dir = tempfile.mkdtemp(prefix="intraop_layers.")


def run(threads):
    out = os.path.join(out_dir, f"{threads}.json")
    cmd = ["taskset", "-c", "0" if threads == 1 else "0-1", co_up, f"--model={model}", "--units=ops",
           "--order=" + "B" * count, "--mode=switch", f"--n={args.warmup + args.frames}",
           f"--input={image}", "--profile=2", f"--profile-out={out}"]
    if args.plugins:
        cmd.append(f"--plugins={args.plugins}")
    if threads == 2:
        cmd.append(f"--platform={os.path.join(root, 'platforms', 'host-2core-cluster.json')}")
    subprocess.run(cmd, check=True, capture_output=True)
    d = json.load(open(out))
    per = {}
    for e in d["events"]:
        if e["kind"] == "layer" and e["frame"] >= args.warmup:
            per.setdefault(e["layer"], []).append((e["end_ns"] - e["begin_ns"]) / 1e3)
    frames = [(b - a) / 1e6 for a, b in zip(d["frames"]["start_ns"][args.warmup:], d["frames"]["end_ns"][args.warmup:])]
    return d["layers"], per, frames


times = {1: {}, 2: {}}
frames = {1: [], 2: []}
layers = []
load_before = open("/proc/loadavg").read().split()[:3]
for rep in range(args.reps):
    for t in ((1, 2) if rep % 2 == 0 else (2, 1)):
        layers, per, fr = run(t)
        frames[t] += fr
        for k, v in per.items():
            times[t].setdefault(k, []).extend(v)
load_after = open("/proc/loadavg").read().split()[:3]
commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"{args.net}: commit {commit}{', plugins ' + args.plugins if args.plugins else ''}, {args.reps} reps x {args.frames} frames per thread count, "
      f"load average before {' '.join(load_before)}, after {' '.join(load_after)}")
print(f"frame, fastest: 1 thread {min(frames[1]):.2f} ms, 2 threads {min(frames[2]):.2f} ms")
rows = []
for layer in layers:
    i = layer["index"]
    a, b = min(times[1][i]), min(times[2][i])
    rows.append((a / 2 - b, i, layer["ops"], layer["output_shape"], layer["macs"], a, b))
total1 = sum(r[5] for r in rows)
total2 = sum(r[6] for r in rows)
print(f"sum of layers, fastest: 1 thread {total1 / 1e3:.2f} ms, 2 threads {total2 / 1e3:.2f} ms "
      f"({total1 / total2:.2f}x; a perfect split {total1 / 2e3:.2f} ms)")
print("layer  ops                                    output shape        MMACs   1t us   2t us  1->2   lost us")
for loss, i, ops, shape, macs, a, b in sorted(rows):
    print(f"{i:5d}  {ops[:38]:38s} {shape:18s} {macs / 1e6:6.2f} {a:7.1f} {b:7.1f} {a / b:5.2f}x {-loss:7.1f}")
