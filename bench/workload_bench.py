#!/usr/bin/env python3
"""Several networks at once: co_up --workload against the one-core baseline and ONNX Runtime.

Driven by bench/workload_bench.sh (one command; see that file and bench/README.md for the method).
Prints the header (date, commit, host load, method) and the tables; every measured run goes to
OUT_DIR/runs.jsonl.
"""
import json
import math
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The transformer of the mix: ViT-Tiny (bench/export_transformers.py vit_tiny_SIZE) at the mix's
# image size, an ONNX network (co_up --model) where the CNNs are zoo graphs; docs/multi_network.md
# says why this one and this size.
TRANSFORMERS = {"vit_tiny": lambda size: f"vit_tiny_{size}"}


def die(msg):
    print(f"workload_bench: {msg}", file=sys.stderr)
    sys.exit(1)


def git_commit():
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("+local changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def read_text(path):
    with open(path) as f:
        return f.read()


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_plan(path):
    """A workload file written by co_up plan, its model and input paths made absolute (they are
    relative to the file's folder), so the derived files written elsewhere name the same files."""
    plan = read_json(path)
    for n in plan["networks"]:
        for key in ("model", "input"):
            if n.get(key) and not os.path.isabs(n[key]):
                n[key] = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), n[key]))
    return plan


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def cpu_stat():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = sum(v) - v[3] - v[4]  # all but idle and iowait
    return busy, v[7] if len(v) > 7 else 0


HZ = os.sysconf("SC_CLK_TCK")


def measured(cmd, **kw):
    """Runs cmd (list, or a list of lists run side by side); returns (wall_s, others_cores).

    others_cores: other processes' CPU use during the run, in cores (system-wide busy time from
    /proc/stat minus the run's own user+sys, over wall time). A quiet host reads about 0.
    """
    cmds = cmd if isinstance(cmd[0], list) else [cmd]
    # stdout and stderr go to files, not pipes: a pipe read only after wait4 fills (64 KiB) and
    # blocks the child forever.
    outs = [open(kw["outs"][i], "w") if len(cmds) > 1 else None for i in range(len(cmds))]
    errs = [tempfile.TemporaryFile("w+") for _ in cmds]
    try:
        b0, _ = cpu_stat()
        t0 = time.monotonic()
        procs = [subprocess.Popen(c, stdout=outs[i] or kw.get("stdout", subprocess.DEVNULL), stderr=errs[i])
                 for i, c in enumerate(cmds)]
        if "between" in kw:
            kw["between"]()
        own = 0.0
        for i, p in enumerate(procs):
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            own += ru.ru_utime + ru.ru_stime
            if p.returncode != 0:
                errs[i].seek(0)
                die(f"command failed ({p.returncode}): {' '.join(p.args)}: {errs[i].read().strip()[-400:]}")
        wall = time.monotonic() - t0
    finally:
        for f in outs + errs:
            if f is not None:
                f.close()
    b1, _ = cpu_stat()
    others = max(0.0, ((b1 - b0) / HZ - own) / wall)
    return wall, others


def write_npy(path, shape, seed):
    rng = random.Random(seed)
    n = math.prod(shape)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(f"{d}, " for d in shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{n}f", *[rng.uniform(-1, 1) for _ in range(n)]))


def percentile(values, p):  # nearest rank, as co_up's workload report
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def spread(v):
    return f"{statistics.median(v):.2f} [{min(v):.2f}-{max(v):.2f}]" if v else "n/a"


def loss_breakdown(prof, alone_ms, alone_cpu_ms):
    """Where a two-processor run loses against 2.0x the one-core baseline, in processor units of
    the run's window W: 2.0 - T1/W = (bubble + idle) / W + (busy - T1) / W, T1 the baseline's
    one-core time for the same requests (its runs' walls in the same round). busy includes the
    hand-offs' transfer events; `handoff` is those alone (the copies between sub-graphs, not the
    input and output copies)."""
    w = prof["wall_ms"]
    t1 = sum(alone_ms.values())
    procs = {p["letter"]: p for p in prof["processors"]}
    busy = sum(p["busy_ms"] for p in procs.values())
    waiting = sum(p["bubble_ms"] + p["idle_ms"] for p in procs.values())
    handoff_ns, handoffs = 0, 0
    by_network = {}
    for n in prof["networks"]:
        pr = n["profile"]
        for e in pr["events"]:
            if e.get("kind") == "transfer" and isinstance(e.get("to"), int) and e["to"] != e["subgraph"] \
                    and e["to"] < len(pr["subgraphs"]):
                handoff_ns += e["end_ns"] - e["begin_ns"]
                handoffs += 1
    for p in procs.values():
        for name, ms in p["busy_ms_by_network"].items():
            by_network[name] = by_network.get(name, 0.0) + ms
    # The tail: from the end of the last sub-graph run of the processor that finished first to
    # the run's end (the other one was still working).
    last_end = {}
    for n in prof["networks"]:
        pr = n["profile"]
        for e in pr["events"]:
            letter = pr["subgraphs"][e["subgraph"]]["processor"]
            last_end[letter] = max(last_end.get(letter, 0), e["end_ns"])
    tail_ms = (max(last_end.values()) - min(last_end.values())) / 1e6 if len(last_end) > 1 else 0.0
    # Network switches: how often a processor's next sub-graph run was another network's (each
    # switch costs that run its warm caches).
    begun = {}
    for n in prof["networks"]:
        pr = n["profile"]
        for e in pr["events"]:
            if e.get("kind") == "subgraph":
                begun.setdefault(pr["subgraphs"][e["subgraph"]]["processor"], []).append((e["begin_ns"], n["name"]))
    switches = 0
    for runs in begun.values():
        runs.sort()
        switches += sum(1 for i in range(1, len(runs)) if runs[i][1] != runs[i - 1][1])
    b, l = procs.get("B", {}).get("busy_ms", 0.0), procs.get("L", {}).get("busy_ms", 0.0)
    # The same extra work counted in the processor threads' CPU time, which time taken by other
    # processes does not inflate (a memory stall does): co-run slowdown plus hand-offs.
    cpu = sum(p.get("run_cpu_ms", 0) for p in procs.values())
    cpu_alone = sum(alone_cpu_ms.values())
    return {"x": t1 / w, "waiting": waiting / w, "inflation": (busy - t1) / w,
            "extra_cpu_pct": 100 * (cpu / cpu_alone - 1) if cpu_alone > 0 else float("nan"),
            "handoff": handoff_ns / 1e6 / w, "handoff_us": handoff_ns / 1e3 / handoffs if handoffs else 0.0,
            "handoffs": handoffs, "imbalance_pct": 100 * (b - l) / w, "tail_ms": tail_ms, "wall_ms": w,
            "switches": switches,
            "work_x": {name: by_network.get(name, 0.0) / ms for name, ms in alone_ms.items()}}


def print_losses(losses, rounds):
    print(f"Where the two-processor arrangements lose against 2.0x (median [min-max] over {rounds} rounds, in "
          f"processors of the run's window W: 2.0 - x = waiting + inflation): waiting = bubble + idle of B and L / W; "
          f"inflation = (busy of B and L - the baseline's one-core time for the same requests) / W, i.e. co-run "
          f"slowdown plus hand-offs; hand-off = the transfer events between sub-graphs / W (and per hand-off); "
          f"B - L = busy time difference / W; tail = how long one processor had nothing left while the other "
          f"finished; switches = how often a processor's next run was another network's (B and L together); "
          f"extra CPU = the processor threads' CPU time in their runs / the baseline's - 1 (the "
          f"inflation without the time other processes took); work x = a network's busy time on B and L / its "
          f"one-core time alone.")
    print()
    print("| arrangement | x baseline | waiting | inflation | of which hand-offs | us per hand-off | extra CPU | B - L | "
          "tail ms | switches | work x per network |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c, rows in losses.items():
        if not rows:
            continue
        nets = rows[0]["work_x"].keys()
        work = ", ".join(f"{n} {statistics.median([r['work_x'][n] for r in rows]):.2f}" for n in nets)
        print(f"| {c} | {spread([r['x'] for r in rows])} | {spread([r['waiting'] for r in rows])} | "
              f"{spread([r['inflation'] for r in rows])} | {spread([r['handoff'] for r in rows])} | "
              f"{spread([r['handoff_us'] for r in rows])} | {spread([r['extra_cpu_pct'] for r in rows])} % | "
              f"{spread([r['imbalance_pct'] for r in rows])} % | "
              f"{spread([r['tail_ms'] for r in rows])} | {spread([r['switches'] for r in rows])} | {work} |")


def main():
    build, size, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rounds = int(os.environ.get("ROUNDS", "3"))
    nets = os.environ.get("NETS", "resnet50,squeezenet,mobilenet,googlenet,vit_tiny").split(",")
    load_pct = float(os.environ.get("LOAD", "80"))
    co_up = os.path.join(build, "co_up")
    plugins = os.path.join(build, "plugins")
    ort_dir = os.path.join(ROOT, "bench", "ort")
    ort = os.environ.get("ORT", "auto")
    have_ort = os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node"))
    if ort == "1" and not have_ort:
        die(f"onnxruntime-node missing: (cd {ort_dir} && npm install --ignore-scripts)")
    use_ort = have_ort and ort != "0"
    if not os.access(co_up, os.X_OK):
        die(f"{co_up} not found (build co_up and co_up_runtime first)")
    out = os.environ.get("OUT_DIR") or subprocess.run(["mktemp", "-d", "/tmp/workload_bench.XXXXXX"],
                                                      capture_output=True, text=True).stdout.strip()
    os.makedirs(out, exist_ok=True)
    runs_file = open(os.path.join(out, "runs.jsonl"), "w")  # closed at the end of main

    def record(**kw):
        runs_file.write(json.dumps(kw) + "\n")
        runs_file.flush()

    load_before = read_text("/proc/loadavg").split()[:3]
    print(f"workload_bench: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {git_commit()}, "
          f"{os.cpu_count()} CPUs, load average {' '.join(load_before)}; {', '.join(nets)} at image size {size}, "
          f"{frames} requests per network, {rounds} rounds; results in {out}")

    # The transformer is an ONNX export, made once per image size into BUILD_DIR/onnx-fixtures (where
    # the other benches keep their exports) and reused.
    models = {}
    for n in nets:
        if n in TRANSFORMERS:
            fixtures = os.path.join(build, "onnx-fixtures")
            models[n] = os.path.join(os.path.abspath(fixtures), TRANSFORMERS[n](size) + ".onnx")
            if not os.path.exists(models[n]):
                print(f"  exporting {os.path.basename(models[n])} to {fixtures} (bench/export_transformers.py)")
                done = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "export_transformers.py"),
                                       fixtures, TRANSFORMERS[n](size)], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                if done.returncode != 0 or not os.path.exists(models[n]):
                    die(f"exporting {TRANSFORMERS[n](size)} failed: {done.stderr.strip()[-200:] or 'no file written'} "
                        f"(the export runs /usr/bin/python3 with torch, torchvision and onnx; or leave {n} out of NETS)")

    def source(n):  # co_up's option naming the network
        return [f"--model={models[n]}"] if n in models else [f"--graph={n}", f"--image-size={size}"]

    layers = {}
    for n in nets:
        text = subprocess.run([co_up] + source(n) + ["--list-layers"], capture_output=True,
                              text=True, check=True).stdout.strip().splitlines()
        layers[n] = int(text[-1].split()[0])
    inp = os.path.join(out, f"input_{size}.npy")
    write_npy(inp, (1, 3, size, size), 1)
    total = frames * len(nets)

    def network(n, order, **extra):
        d = {"name": n, "model": models[n]} if n in models else {"name": n, "graph": n, "image_size": size}
        d.update({"order": order, "frames": frames, "input": inp})
        d.update(extra)
        return d

    def write_workload(name, networks, **top):
        path = os.path.join(out, name + ".json")
        write_text(path, json.dumps(dict(top, networks=networks), indent=1))
        return path

    # The planned arrangement: co_up profile --workload, then co_up plan --workload (hetero2pipe).
    mix = write_workload("mix", [{k: v for k, v in network(n, "").items() if k != "order"} for n in nets])
    t0 = time.monotonic()
    with open(os.path.join(out, "profile.txt"), "w") as profile_txt:
        subprocess.run([co_up, "profile", f"--plugins={plugins}", f"--workload={mix}", "--processors=BL",
                        "--repetitions=6", f"--profile-out={out}/mix_profile.json"], check=True,
                       stdout=profile_txt, stderr=subprocess.DEVNULL)
    plan_text = subprocess.run([co_up, "plan", f"--plugins={plugins}", f"--workload={mix}",
                                f"--profile={out}/mix_profile.json", f"--out={out}/plans"], check=True,
                               capture_output=True, text=True).stdout
    write_text(os.path.join(out, "plan.txt"), plan_text)
    predicted = {m.group(1): float(m.group(2))
                 for m in re.finditer(r"^(\S+)\s+([0-9.]+) fps aggregate", plan_text, re.M)}
    planned = read_plan(f"{out}/plans/hetero2pipe.json")
    print(f"planned: co_up profile --workload --processors=BL --repetitions=6, then co_up plan --workload "
          f"({time.monotonic() - t0:.1f} s): hetero2pipe predicts {predicted.get('hetero2pipe', 0):.2f} requests/s "
          f"(balanced {predicted.get('balanced', 0):.2f}, hetero2pipe-h {predicted.get('hetero2pipe-h', 0):.2f}); "
          "orders " + ", ".join(f"{n['name']} {'|'.join([n['order']] + n.get('replicas', []))}"
                                for n in planned["networks"]))

    # Arrangements without a planner, for comparison.
    alone, split = [], []
    for i, n in enumerate(nets):
        alone.append(network(n, ("B" if i % 2 == 0 else "L") * layers[n]))
        h = layers[n] // 2
        split.append(network(n, "B" * h + "L" * (layers[n] - h)))
    # The planned file as written (co_up plan sets "affinity": whole networks run their requests
    # back to back on a processor) and the same file without it (each processor interleaves the
    # networks request by request, in the plan's order): the A/B of the affinity.
    # The same for the balanced plan (whole networks with replicas), which affinity is for, whichever
    # plan hetero2pipe keeps.
    def without_affinity(name, plan):
        rest = {k: v for k, v in plan.items() if k not in ("affinity", "networks")}
        return write_workload(name, plan["networks"], **rest)

    # The planner batches networks where a frame of several requests costs less per request
    # (planner/batch_time.h); the baseline stays unbatched, and two more rows show what batching
    # alone buys: the plan with every batch 1, and the baseline with the plan's batches.
    batches = {n["name"]: n.get("batch", 1) for n in planned["networks"]}
    batched = any(b > 1 for b in batches.values())

    def unbatched(name, plan):
        rest = {k: v for k, v in plan.items() if k != "networks"}
        return write_workload(name, [dict(n, batch=1) for n in plan["networks"]], **rest)

    files = {"planned": f"{out}/plans/hetero2pipe.json",
             "planned-interleaved": without_affinity("planned_interleaved", planned),
             "balanced": f"{out}/plans/balanced.json",
             "balanced-interleaved": without_affinity("balanced_interleaved", read_plan(f"{out}/plans/balanced.json")),
             "pipelines": f"{out}/plans/hetero2pipe-h.json",
             "alone-per-processor": write_workload("alone", alone), "split-pipelines": write_workload("split", split)}
    if batched:
        files["planned-unbatched"] = unbatched("planned_unbatched", planned)
    for n in nets:
        files["B-" + n] = write_workload("b_" + n, [network(n, "B" * layers[n])])
        files["B-batched-" + n] = write_workload("b_batched_" + n, [network(n, "B" * layers[n], batch=batches.get(n, 1))])

    def run_co_up(path, tag):
        prof = os.path.join(out, tag + ".profile.json")
        wall, others = measured([co_up, f"--plugins={plugins}", f"--workload={path}", f"--profile-out={prof}"])
        return read_json(prof), others

    def on_cpu(prof):
        """The processor threads' CPU time over the wall time of their sub-graph runs (1.0: never
        waiting for a core inside a run)."""
        wall = sum(p.get("run_wall_ms", 0) for p in prof["processors"])
        return sum(p.get("run_cpu_ms", 0) for p in prof["processors"]) / wall if wall > 0 else float("nan")

    onnx = {}
    if use_ort:
        for n in nets:
            if n in models:  # ONNX Runtime runs the very file co_up imports
                onnx[n] = models[n]
                continue
            d = os.path.join(out, "onnx_" + n)
            subprocess.run([co_up, f"--plugins={plugins}", f"--graph={n}", f"--image-size={size}",
                            "--order=" + "N" * layers[n], f"--export-partitions={d}"], check=True,
                           stdout=subprocess.DEVNULL)
            onnx[n] = os.path.join(d, os.listdir(d)[0])

    def run_ort(tag, rate=None):
        """Every network as its own ONNX Runtime session (one intra-op thread) in its own process, all
        side by side on both cores; they start their timed requests at one instant after warm-up."""
        sync = os.path.join(out, tag + "_sync")
        # A reused OUT_DIR's start and .ready files would let the sessions start unsynchronised.
        shutil.rmtree(sync, ignore_errors=True)
        os.makedirs(sync)
        start_file = os.path.join(sync, "start")
        cmds, outs, ready = [], [], []
        for n in nets:
            ready.append(os.path.join(sync, n + ".ready"))
            c = ["node", os.path.join(ort_dir, "ort_bench.js"), onnx[n], "--threads=1", "--warmup=3",
                 f"--runs={frames}", f"--input={inp}", f"--ready={ready[-1]}", f"--start-file={start_file}"]
            if rate:
                c.append(f"--rate={rate}")
            cmds.append(c)
            outs.append(os.path.join(out, f"{tag}_{n}.ort.json"))

        def start_when_ready():  # every session loaded and warm: all start 100 ms from now
            deadline = time.monotonic() + 600
            while not all(os.path.exists(r) for r in ready) and time.monotonic() < deadline:
                time.sleep(0.005)
            with open(start_file + ".tmp", "w") as f:
                f.write(str(int(time.time() * 1000) + 100))
            os.rename(start_file + ".tmp", start_file)

        _, others = measured(cmds, outs=outs, between=start_when_ready)
        res = [json.loads(read_text(o).splitlines()[0]) for o in outs]
        spread_ms = max(r["timed_start_ms"] for r in res) - min(r["timed_start_ms"] for r in res)
        if spread_ms > 20:
            print(f"  note: the ONNX Runtime sessions started their timed requests {spread_ms:.0f} ms apart")
        t0 = min(r["timed_start_ms"] for r in res)
        t1 = max(r["timed_end_ms"] for r in res)
        return res, total * 1000 / (t1 - t0), others

    # Throughput: rounds of every arrangement, forward on odd rounds and reversed on even ones.
    configs = (["baseline"] + (["baseline-batched"] if batched else []) + ["planned"] +
               (["planned-unbatched"] if batched else []) +
               ["planned-interleaved", "balanced", "balanced-interleaved", "pipelines", "alone-per-processor",
                "split-pipelines"] + (["ort"] if use_ort else []))
    fps = {c: [] for c in configs}
    ratio = {c: [] for c in configs}
    others = {c: [] for c in configs}
    cpu_share = {c: [] for c in configs}
    busy = {}
    # per round: where the arrangement loses against 2.0x
    losses = {"planned": [], "planned-interleaved": [], "balanced": [], "balanced-interleaved": [], "pipelines": []}
    if batched:
        losses["planned-unbatched"] = []
    for r in range(1, rounds + 1):
        order = configs if r % 2 else configs[::-1]
        got, profs = {}, {}
        alone_ms, alone_cpu_ms = {"baseline": {}, "baseline-batched": {}}, {"baseline": {}, "baseline-batched": {}}
        for c in order:
            if c in ("baseline", "baseline-batched"):
                ms, oth, share = 0.0, [], []
                for n in nets:
                    key = ("B-" if c == "baseline" else "B-batched-") + n
                    prof, o = run_co_up(files[key], f"r{r}_{key}")
                    ms += prof["wall_ms"]
                    alone_ms[c][n] = prof["wall_ms"]
                    alone_cpu_ms[c][n] = sum(p.get("run_cpu_ms", 0) for p in prof["processors"])
                    oth.append(o)
                    share.append(on_cpu(prof))
                got[c], o = total * 1000 / ms, statistics.mean(oth)
                cpu_share[c].append(statistics.mean(share))
            elif c == "ort":
                _, got[c], o = run_ort(f"r{r}")
            else:
                prof, o = run_co_up(files[c], f"r{r}_{c}")
                profs[c] = prof
                got[c] = prof["aggregate_requests_per_s"]
                cpu_share[c].append(on_cpu(prof))
                if c == "planned":
                    for p in prof["processors"]:
                        busy.setdefault(p["letter"], []).append(p["utilisation"])
            others[c].append(o)
            record(kind="throughput", round=r, config=c, fps=got[c], others_cores=o,
                   on_cpu=cpu_share[c][-1] if cpu_share[c] and c != "ort" else None)
        for c in losses:
            # Against the one-core run of the same requests in the same frames: the written plans'
            # batches, or none.
            base = "baseline-batched" if batched and c != "planned-unbatched" else "baseline"
            losses[c].append(loss_breakdown(profs[c], alone_ms[base], alone_cpu_ms[base]))
            record(kind="loss", round=r, config=c, **losses[c][-1])
        for c in configs:
            fps[c].append(got[c])
            ratio[c].append(got[c] / got["baseline"])
        print(f"  round {r}: " + "  ".join(f"{c} {got[c]:.1f}/s [{others[c][-1]:.1f}]" for c in configs))

    batch_text = ", ".join(f"{n} {b}" for n, b in batches.items() if b > 1)
    names = {"baseline": "one after another, each alone on B (baseline)",
             "baseline-batched": f"the baseline with the plan's batches ({batch_text})",
             "planned": "planned (co_up plan --workload: hetero2pipe)",
             "planned-unbatched": "the same plan with every batch 1",
             "planned-interleaved": "the same plan without affinity (networks interleaved per request)",
             "balanced": "balanced plan (co_up plan --workload: whole networks, replicas)",
             "balanced-interleaved": "the balanced plan without affinity",
             "pipelines": "pipelines, no replicas (co_up plan --workload: hetero2pipe-h)",
             "alone-per-processor": "each network whole, B and L alternately",
             "split-pipelines": "each network first half B, second half L",
             "ort": "ONNX Runtime: one session per network, 1 intra-op thread, side by side"}
    print()
    print(f"Aggregate throughput = all {total} requests / the time from the first request's arrival to the last "
          f"completion (co_up: its workload profile; baseline: the sum of the {len(nets)} runs' walls; ORT: first timed "
          f"start to last end, after 3 warm-up runs per session). Median [min-max] over {rounds} rounds; the x "
          f"columns are ratios within a round. [others] = other processes' CPU use during the run, in cores; "
          f"on CPU = co_up's processor threads' CPU time / wall time of their sub-graph runs (below 100 %: they "
          f"waited for a core inside their runs).")
    print()
    print("| arrangement | requests/s | x one-core baseline | x ONNX Runtime | others (cores) | on CPU % |")
    print("|---|---|---|---|---|---|")
    for c in configs:
        vs_ort = spread([a / b for a, b in zip(fps[c], fps["ort"])]) if use_ort else "n/a"
        share = spread([100 * v for v in cpu_share[c]]) if cpu_share[c] else "n/a"
        print(f"| {names[c]} | {spread(fps[c])} | {spread(ratio[c])} | {vs_ort} | {spread(others[c])} | {share} |")
    if busy:
        print("planned: processor utilisation " + ", ".join(f"{k} {spread([100 * u for u in v])} %"
                                                              for k, v in busy.items()))
    print()
    if batched:
        print(f"The written plans batch {batch_text} (co_up plan --workload: the affine batch time of each network "
              f"from co_up profile --workload); the losses below compare the batched arrangements with the baseline "
              f"run with the same batches, the unbatched plan with the baseline.")
    print_losses(losses, rounds)
    print()
    for c, planner in (("planned", "hetero2pipe"), ("planned-interleaved", "hetero2pipe"), ("balanced", "balanced"),
                       ("balanced-interleaved", "balanced"), ("pipelines", "hetero2pipe-h")):
        if predicted.get(planner):
            per_round = [f / predicted[planner] for f in fps[c]]
            print(f"prediction ({planner}, co_up plan --workload) for {c}: {predicted[planner]:.2f} requests/s; measured / "
                  f"predicted per round: " + ", ".join(f"r{i + 1} {v:.2f} ({100 * (v - 1):+.0f} %)"
                                                       for i, v in enumerate(per_round)) +
                  f"; median {spread(per_round)}")

    # Latency at LOAD % of the planned arrangement's capacity (its median measured throughput),
    # every network at an equal share of the rate; the same rates for ONNX Runtime. At a rate the
    # planner batches nothing (a batch waits for its last request), so the rated file is the plan
    # with every batch 1 and its capacity is that arrangement's.
    capacity = statistics.median(fps["planned-unbatched" if batched else "planned"])
    rate = capacity * load_pct / 100 / len(nets)
    rated = dict(planned)
    rated["networks"] = [dict(n, rate=round(rate, 3), batch=1) for n in planned["networks"]]
    rated_path = write_workload("planned_rate", rated["networks"], **{k: v for k, v in rated.items()
                                                                      if k != "networks"})
    p99 = {"co_up": [], "ort": []}
    pooled = {"co_up": [], "ort": []}
    lat_others = {"co_up": [], "ort": []}
    for r in range(1, rounds + 1):
        for side in (["co_up", "ort"] if r % 2 else ["ort", "co_up"]):
            if side == "ort" and not use_ort:
                continue
            if side == "co_up":
                prof, o = run_co_up(rated_path, f"r{r}_rate")
                lat = [q["end_ms"] - q["arrival_ms"] for n in prof["networks"] for q in n["requests"]]
            else:
                res, _, o = run_ort(f"r{r}_rate", rate)
                lat = [x for q in res for x in q["latency_ms"]]
            p99[side].append(percentile(lat, 99))
            pooled[side] += lat
            lat_others[side].append(o)
            record(kind="latency", round=r, config=side, p99_ms=p99[side][-1], p50_ms=percentile(lat, 50),
                   others_cores=o)
    print()
    print(f"Latency at {load_pct:.0f} % of the planned arrangement's capacity ({capacity:.1f} requests/s"
          f"{', the plan without batches' if batched else ''}): every "
          f"network {rate:.2f} requests/s, evenly spaced; per-request latency from arrival to completion, all "
          f"networks' requests together; p99 per round (nearest rank), median [min-max] over {rounds} rounds.")
    print()
    print("| runtime | p99 ms | p50 ms (all rounds) | others (cores) |")
    print("|---|---|---|---|")
    for side in ("co_up", "ort"):
        if p99[side]:
            label = "co_up, planned arrangement" if side == "co_up" else "ONNX Runtime, sessions side by side"
            print(f"| {label} | {spread(p99[side])} | {percentile(pooled[side], 50):.2f} | {spread(lat_others[side])} |")
    if p99["ort"]:
        print(f"co_up p99 / ONNX Runtime p99 per round: {spread([a / b for a, b in zip(p99['co_up'], p99['ort'])])}")
    # The requirement in one place, each from the tables above (medians of per-round ratios).
    print()
    print("Targets (median of the per-round ratios; met / NOT met):")
    # The arrangements without a planner are the baselines a plan must beat.
    best_other = [max(fps[c][i] for c in ("alone-per-processor", "split-pipelines")) for i in range(rounds)]
    checks = [("planned >= 1.9x the one-core baseline", statistics.median(ratio["planned"]), 1.9, True)]
    if use_ort:
        checks.append(("planned >= 1.0x ONNX Runtime", statistics.median([a / b for a, b in zip(fps["planned"], fps["ort"])]),
                       1.0, True))
    if p99["ort"]:
        checks.append(("p99 co_up / p99 ONNX Runtime < 1.0", statistics.median([a / b for a, b in zip(p99["co_up"], p99["ort"])]),
                       1.0, False))
    if predicted.get("hetero2pipe"):
        err = abs(statistics.median(fps["planned"]) / predicted["hetero2pipe"] - 1)
        checks.append(("|measured / predicted - 1| <= 0.10 (planned)", err, 0.10, False))
    checks.append(("planned >= the best arrangement without a planner", statistics.median(
        [a / b for a, b in zip(fps["planned"], best_other)]), 1.0, True))
    for label, value, bound, at_least in checks:
        ok = value >= bound if at_least else value <= bound if "<=" in label else value < bound
        print(f"  {label}: {value:.2f} {'met' if ok else 'NOT met'}")
    if batched:
        print(f"For reference, not targets: planned / the baseline with the plan's batches "
              f"{statistics.median([a / b for a, b in zip(fps['planned'], fps['baseline-batched'])]):.2f}; "
              f"the plan without batches / the baseline {statistics.median(ratio['planned-unbatched']):.2f}.")
    print(f"load average after: {' '.join(read_text('/proc/loadavg').split()[:3])}")
    runs_file.close()


if __name__ == "__main__":
    main()
