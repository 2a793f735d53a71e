#!/usr/bin/env python3
"""Compares two processor orders of one network: streams the same frames through each, prints
their throughput and latency, and plots both per-layer profiles into a PNG.

    PYTHONPATH=build/python python3 examples/python/compare_orders.py \
        --graph alexnet --image-size 64 BBBBBBBB BBBLLLLL --png orders.png

Per-layer times come from co_up's profiler (profile_level=2): the median over frames of each
layer's execution time on the processor its order gives it.
"""

import argparse
import sys
import time

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import co_up  # noqa: E402


def measure(args, order):
    """Streams args.frames frames through `order`; returns (frames per second, profile)."""
    options = dict(order=order, mode=args.mode, profile_level=2)
    if args.platform:
        options["platform_file"] = args.platform
    if args.graph:
        session = co_up.Session.zoo(args.graph, image_size=args.image_size, **options)
    else:
        session = co_up.Session(args.model, **options)
    with session:
        shape = session.inputs[0][1]
        rng = np.random.default_rng(0)
        frames = [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(args.frames)]
        start = time.perf_counter()
        received = sum(1 for _ in session.stream(frames))
        seconds = time.perf_counter() - start
        if received != args.frames:
            raise SystemExit(f"compare_orders: {received} of {args.frames} frames came back")
        return received / seconds, session.profile


def plot(path, title, results):
    """Grouped bars: one group per layer, one bar per order, labelled with the layer's processor."""
    layers = results[0][2]["layers"]
    names = [layer["name"] for layer in layers]
    width = 0.8 / len(results)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(names) + 2), 4))
    for i, (order, fps, profile) in enumerate(results):
        times = [layer["median_ms"] for layer in profile["layers"]]
        bars = ax.bar(x + (i - (len(results) - 1) / 2) * width, times, width,
                      label=f"{order} ({fps:.1f} frames/s)")
        for bar, layer in zip(bars, profile["layers"]):
            ax.annotate(layer["processor"], (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=45, ha="right")
    ax.set_ylabel("median execution time per frame (ms)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    network = parser.add_mutually_exclusive_group(required=True)
    network.add_argument("--graph", help="a zoo network (alexnet, googlenet, ...)")
    network.add_argument("--model", help="an ONNX model file")
    parser.add_argument("orders", nargs=2, help="the two orders to compare (one letter per layer unit)")
    parser.add_argument("--image-size", type=int, default=0, help="zoo networks: input size (0: its own)")
    parser.add_argument("--mode", default="pipeline", choices=["pipeline", "switch"])
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--platform", help="platform JSON (default: this machine)")
    parser.add_argument("--png", default="compare_orders.png", help="where the plot goes")
    args = parser.parse_args(argv)
    if args.frames < 1:
        parser.error("--frames must be at least 1")

    try:
        results = [(order, *measure(args, order)) for order in args.orders]
    except co_up.Error as error:
        print(f"compare_orders: {error}", file=sys.stderr)
        return 2 if isinstance(error, co_up.InputError) else 1

    name = args.graph or args.model
    print(f"{name}, mode {args.mode}, {args.frames} frames")
    print(f"  {'order':<24} {'frames/s':>10} {'latency ms':>11}")
    for order, fps, profile in results:
        print(f"  {order:<24} {fps:>10.2f} {profile['latency_median_ms']:>11.3f}")
    (first, fps_a, _), (second, fps_b, _) = results
    faster = first if fps_a >= fps_b else second
    print(f"  {faster} is {max(fps_a, fps_b) / min(fps_a, fps_b):.2f}x the other's throughput")
    plot(args.png, f"{name}: per-layer time by order", results)
    print(f"per-layer profile plotted to {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
