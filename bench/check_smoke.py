#!/usr/bin/env python3
"""Runs a benchmark's quick mode and checks its output, for the bench smoke tests in ctest.

  bench/check_smoke.py KIND -- COMMAND...

KIND names what to expect (pipeline, planning, planner, npu_overhead, power). Beyond the exit status, the
output must hold the rows that bench prints, with numbers that are finite and in a sane range:
the bench ran what it says, not only ran. Exit status: the bench's when it failed (77 = skipped
passes through), 1 when the output does not look right, 0 otherwise.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def number(text):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def table_rows(text, first_cell):
    """Markdown table rows (lists of stripped cells) whose first cell is first_cell."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0] == first_cell:
                rows.append(cells)
    return rows


def check_pipeline(out, data):
    networks = data.get("networks", [])
    if not check(len(networks) == 1, f"want 1 network in the JSON, got {len(networks)}"):
        return
    net = networks[0]
    check(net.get("network") == "squeezenet", f"network is {net.get('network')!r}")
    candidates = net.get("candidates", [])
    # Up to 2 per unit granularity (layers, ops, split), fewer when two give the same order; the
    # JSON must hold what the text says was measured.
    said = re.search(r"squeezenet: (\d+) candidates measured", out)
    check(said and int(said.group(1)) == len(candidates) and 2 <= len(candidates) <= 6,
          f"{len(candidates)} candidates in the JSON, the text says {said and said.group(1)}")
    check(net.get("b_only", {}).get("fps_median", 0) > 0, "no B-only fps")
    for c in candidates:
        order = c.get("order", "")
        check(re.fullmatch(r"[BL]+", order) and "B" in order and "L" in order,
              f"candidate order {order!r} is not a B|L split")
        fps = c.get("fps_median")
        check(isinstance(fps, (int, float)) and 0 < fps < 1e6, f"candidate {order} fps {fps}")
        speedup = c.get("speedup_median")
        # A ratio of two timings: a smoke run shares the machine (the suite runs two tests at
        # once), so only its presence and sign are checked; bounds on speed belong to the bench.
        check(isinstance(speedup, (int, float)) and 0 < speedup < math.inf,
              f"candidate {order} speedup {speedup}")
    check(re.search(r"^  squeezenet +\w+ +6 +[0-9.]+ +[0-9.]+ +[0-9.]+x ", out, re.M),
          "no 'best two-stage split' row for squeezenet")
    check("synchronisation cost" in out, "no synchronisation cost table")


def check_planning(out):
    for objective in ("throughput", "latency", "energy", "pareto"):
        rows = table_rows(out, f"plan --objective={objective}")
        check(len(rows) >= 1, f"no row for plan --objective={objective}")
        for cells in rows:
            value = number(cells[1])
            check(value is not None and value > 0, f"plan --objective={objective}: {cells[1]!r}")
            if len(cells) >= 4:
                check(re.fullmatch(r"[BLGN]{20}", cells[3]), f"order {cells[3]!r} is not 20 letters")
    match = re.search(r"slowest objective: ([0-9.]+) s \(target: under 10 s\)", out)
    # The time itself is the bench's number, not a test's: a loaded machine may take longer.
    check(match and float(match.group(1)) > 0, "no 'slowest objective' line")
    best = table_rows(out, "best single processor")
    check(len(best) == 1 and number(best[0][1]) and number(best[0][1]) > 0,
          "no sane 'best single processor' row")


def check_planner(out):
    rows = table_rows(out, "squeezenet")
    # Summary (a): profile seconds, then "x% (n)" for pipeline and switch.
    errors = [r for r in rows if len(r) == 6 and number(r[1]) is not None and "(" in r[2]]
    pipe = switch = None
    if check(len(errors) == 1, "no summary row (a) for squeezenet"):
        pipe = re.fullmatch(r"([0-9.]+)% \((\d+)\)", errors[0][2])
        switch = re.fullmatch(r"([0-9.]+)% \((\d+)\)", errors[0][3])
        # 18 two-stage splits, B and L only, the planner's best, the hand-off fit set (3 orders, one
        # of them a split) and held-out random orders: 20 to 26 distinct pipeline mappings.
        check(pipe and 20 <= int(pipe.group(2)) <= 26, f"pipeline mappings {errors[0][2]!r}, want 20-26")
        # 4 switch mappings, the planner's best when it is none of them, 2 random orders.
        check(switch and 4 <= int(switch.group(2)) <= 7, f"switch mappings {errors[0][3]!r}, want 4-7")
        total = re.search(r"median \|error\| over all (\d+) mappings: [0-9.]+%", out)
        if check(total, "no median error over all mappings") and pipe and switch:
            check(int(total.group(1)) == int(pipe.group(2)) + int(switch.group(2)),
                  f"median over {total.group(1)} mappings, not the {pipe.group(2)} + {switch.group(2)} measured")
    # Held out vs fit: the fit set is the 2-3 hand-off orders, everything else is held out, and
    # the held-out rows include mappings of 3 or more sub-graphs.
    held = [r for r in rows if len(r) == 6 and number(r[1]) is None and "(" in r[1]]
    if check(len(held) == 1, "no held-out vs fit row for squeezenet") and pipe and switch:
        cells = [re.fullmatch(r"([0-9.]+)% \((\d+)\)", c) for c in held[0][1:4]]
        if check(all(cells), f"held-out row {held[0]}"):
            fit_n, held_n = int(cells[0].group(2)), int(cells[1].group(2))
            check(2 <= fit_n <= 3, f"fit set of {fit_n} mappings, want 2-3")
            check(fit_n + held_n == int(pipe.group(2)) + int(switch.group(2)),
                  f"fit {fit_n} + held out {held_n} is not every mapping measured")
            check(re.fullmatch(r"[0-9.]+% \((\d+)\)", held[0][4]) and int(re.search(r"\((\d+)\)", held[0][4]).group(1)) >= 1,
                  f"no held-out mapping of 3+ sub-graphs: {held[0][4]!r}")
    bound = re.search(r"held-out median \|error\| ([0-9.]+)% over (\d+) mappings: within the bound ([0-9]+)%", out)
    check(bound, "no 'held-out median |error| ... within the bound' line")
    best = [r for r in rows if len(r) == 8 and r[2].startswith("`")]
    if check(len(best) == 1, "no row (b) for squeezenet"):
        ratio = number(best[0][7])
        check(ratio is not None and ratio > 0, f"planner / best {best[0][7]!r}")
        check(re.fullmatch(r"`[BL]{10}`", best[0][2]), f"planner mapping {best[0][2]!r}")


def check_power(out):
    # Both paces, each with how many requests the worker applied.
    for pace in ("back to back", "one per ~50 us layer"):
        m = re.search(rf"DVFS request on the inference thread, {re.escape(pace)}: (\d+) requests, (\d+) issued, "
                      r"(\d+) applied \(([0-9.]+) %\)\n  median ([0-9.]+) us   p90 ([0-9.]+) us   p99 ([0-9.]+) us", out)
        if not check(m, f"no DVFS request block for '{pace}'"):
            continue
        requests, issued, applied = (int(m.group(i)) for i in (1, 2, 3))
        check(requests > 0 and issued == requests, f"{pace}: {issued} issued of {requests} requests")
        check(1 <= applied <= requests, f"{pace}: {applied} applied of {requests}")
        median, p90, p99 = (float(m.group(i)) for i in (5, 6, 7))
        check(0 < median <= p90 <= p99, f"{pace}: median/p90/p99 {median}/{p90}/{p99} us")
    m = re.search(r"layers/s without: ([0-9]+)   with sampling \+ tags \+ spans: ([0-9]+)   overhead (-?[0-9.]+)%", out)
    if check(m, "no sampling overhead line"):
        check(int(m.group(1)) > 0 and int(m.group(2)) > 0, f"layers/s {m.group(1)} / {m.group(2)}")


def check_npu_overhead(out):
    layouts = ["f32 NCHW in/out (no conversion)", "f32 NCHW in/out (no conversion)",
               "int8 NHWC in, f32 NHWC out", "int8 NHWC in, f32 NHWC out",
               "f16 NHWC in, f32 NCHW out"]
    rows = [r for r in (table_rows(out, l) for l in dict.fromkeys(layouts)) for r in r]
    check([r[0] for r in rows] == layouts, f"layout rows {[r[0] for r in rows]}, want {layouts}")
    worst = 0.0
    for r in rows:
        values = [number(c) for c in r[2:7]]
        # The overhead is the run's median less its parts' medians: on a busy host it can come out
        # slightly negative; the parts themselves cannot.
        if not check(all(v is not None for v in values) and all(v >= 0 for v in values[:4]) and
                     values[4] >= -0.25 * values[0], f"row {r}: bad numbers"):
            continue
        run, compute, copies, conversion, overhead = values
        check(run > 0 and run >= max(compute, copies, conversion, overhead),
              f"row {r}: run time below a part of it")
        if "no conversion" in r[0]:
            check(conversion == 0, f"row {r}: conversion without one")
        worst = max(worst, overhead)
    match = re.search(r"worst median overhead ([0-9.]+) us \(target < 50 us\)", out)
    if check(match, "no 'worst median overhead' line"):
        check(abs(float(match.group(1)) - worst) < 0.051, f"worst overhead {match.group(1)} is not the table's {worst}")


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    kind, command = sys.argv[1], sys.argv[3:]
    with tempfile.TemporaryDirectory(prefix="co_up_bench_smoke_") as scratch:
        json_path = os.path.join(scratch, "bench.json")
        if kind == "pipeline":
            command = command + [f"--json={json_path}"]
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(result.stdout)
        if result.returncode != 0:
            return result.returncode
        out = result.stdout
        if kind == "pipeline":
            if check(os.path.exists(json_path), "the bench wrote no --json file"):
                with open(json_path) as f:
                    check_pipeline(out, json.load(f))
        elif kind == "planning":
            check_planning(out)
        elif kind == "planner":
            check_planner(out)
        elif kind == "npu_overhead":
            check_npu_overhead(out)
        elif kind == "power":
            check_power(out)
        else:
            sys.exit(f"check_smoke: unknown kind {kind!r}")
    for p in problems:
        print(f"check_smoke: {kind}: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
