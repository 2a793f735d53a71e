"""examples/python/compare_orders.py on a tiny network: both orders measured, the plot written."""

import os
import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(os.environ.get("CO_UP_SOURCE_DIR", "")) / "examples/python/compare_orders.py"


def run_example(*args):
    return subprocess.run([sys.executable, str(EXAMPLE), *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_compares_two_orders_and_plots_them(tiny_model, platform_file, scratch):
    png = scratch / "orders.png"
    e = run_example("--model", tiny_model, "--platform", platform_file, "--frames", 20,
                    "--png", png, "BBB", "BLG")
    assert e.returncode == 0, e.stderr
    lines = e.stdout.splitlines()
    assert lines[0] == f"{tiny_model}, mode pipeline, 20 frames"
    assert lines[2].split()[0] == "BBB" and lines[3].split()[0] == "BLG"
    assert all(float(line.split()[1]) > 0 for line in lines[2:4])
    assert lines[-1] == f"per-layer profile plotted to {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 5000


def test_a_bad_order_is_reported_in_one_line(tiny_model, platform_file, scratch):
    e = run_example("--model", tiny_model, "--platform", platform_file, "--png", scratch / "bad.png",
                    "BBB", "BX")
    assert e.returncode == 2
    assert e.stderr.startswith("compare_orders: order 'BX'") and e.stderr.count("\n") == 1, e.stderr
    assert not (scratch / "bad.png").exists()
