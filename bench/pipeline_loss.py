#!/usr/bin/env python3
"""Where a two-stage pipeline loses against twice one core, from the profiles of one run each.

    bench/pipeline_loss.py PIPELINE_PROFILE.json ONE_CORE_PROFILE.json [WARMUP] [--json]

Both are `co_up --profile=1 --profile-out=...` files (profile level >= 1: sub-graph and transfer
events per frame): a pipeline run with two stages (two sub-graphs, one per processor) and a run of
the same network on one core. Frames before WARMUP (default 3) are left out of both.

Per frame f the stage time is the stage's sub-graph run plus its transfers (binding its input,
copying its outputs into the receivers' slots): B_f and L_f. The speed-up of the pipeline over one
core (one core's median frame time / the pipeline's median frame period, the ort_compare
statistic) is 2 / (work x imbalance x lock-step), where
  work       = (median B + median L) / one core's median frame: the stages' work next to each
               other against the whole network alone (boundary copies, the second core's caches,
               shared L3 and memory bandwidth); 1.00 = no cost
  imbalance  = max(median B, median L) / the mean of the two: the split's balance as run
  lock-step  = the pipeline's median period / max(median B, median L): hand-offs, wake-ups and
               frames whose slower stage changes from frame to frame (with two receive buffers a
               producer cannot run ahead of its consumer by a whole frame, so every period is the
               slower of the pair)
The period a given receive-buffer count would give with the same stage times is simulated (the
recurrences of a two-stage pipeline with C slots per boundary), so that the lock-step loss can be
told from noise: "sim C=2" should match the measured period; "sim C=3" is what one frame of slack
would give.
"""
import json
import statistics
import sys


def frame_gaps_ms(profile, warmup):
    end = profile["frames"]["end_ns"][warmup:]
    return [(b - a) / 1e6 for a, b in zip(end, end[1:])]


def stage_times(profile, warmup):
    """{sub-graph index: {frame: ms}}, sub-graph run plus its transfers."""
    stages = {}
    for e in profile["events"]:
        if e["kind"] not in ("subgraph", "transfer") or e.get("frame", 0) < warmup:
            continue
        per_frame = stages.setdefault(e["subgraph"], {})
        per_frame[e["frame"]] = per_frame.get(e["frame"], 0.0) + (e["end_ns"] - e["begin_ns"]) / 1e6
    return stages


def simulate_period(b, l, slots):
    """Median frame period of a two-stage pipeline with `slots` receive buffers at the boundary:
    B reserves a slot when it starts a frame; L holds it until it finishes the frame."""
    b_end, l_end = [], []
    for f, (tb, tl) in enumerate(zip(b, l)):
        start = b_end[-1] if b_end else 0.0
        if f >= slots:
            start = max(start, l_end[f - slots])
        b_end.append(start + tb)
        l_end.append(max(l_end[-1] if l_end else 0.0, b_end[-1]) + tl)
    return statistics.median([y - x for x, y in zip(l_end, l_end[1:])])


def processor_times(profile, warmup):
    """{processor letter: {frame: ms}}: each processor's sub-graph runs plus transfers per frame,
    for a pipeline whose cut falls inside a split op (its parts and their Concat are sub-graphs of
    their own, so one processor runs several per frame)."""
    letter = {s["index"]: s["processor"] for s in profile.get("subgraphs", [])}
    out = {}
    for sg, per_frame in stage_times(profile, warmup).items():
        mine = out.setdefault(letter.get(sg, sg), {})
        for f, ms in per_frame.items():
            mine[f] = mine.get(f, 0.0) + ms
    return out


def analyse(pipeline, one_core, warmup=3):
    med = statistics.median
    stages = stage_times(pipeline, warmup)
    if len(stages) != 2:
        # Several sub-graphs per processor: each processor's share of a frame is one stage (the
        # lock-step and buffer simulation then treat them as two stages in a row, an approximation).
        stages = processor_times(pipeline, warmup)
    if len(stages) != 2:
        raise SystemExit(f"pipeline_loss.py: needs two processors, the profile has {len(stages)}")
    first, second = sorted(stages)
    frames = sorted(set(stages[first]) & set(stages[second]))
    b = [stages[first][f] for f in frames]
    l = [stages[second][f] for f in frames]
    period = med(frame_gaps_ms(pipeline, warmup))
    one = med(frame_gaps_ms(one_core, warmup))
    mb, ml = med(b), med(l)
    slow = max(mb, ml)
    return {
        "one_core_ms": one, "period_ms": period, "speedup": one / period,
        "stage_ms": [mb, ml],
        "work": (mb + ml) / one, "imbalance": slow / ((mb + ml) / 2), "lock_step": period / slow,
        "sim_period_ms": {str(c): simulate_period(b, l, c) for c in (2, 3)},
    }


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if len(args) < 2:
        raise SystemExit(__doc__)
    warmup = int(args[2]) if len(args) > 2 else 3
    r = analyse(json.load(open(args[0])), json.load(open(args[1])), warmup)
    if "--json" in sys.argv:
        print(json.dumps(r))
        return
    print(f"one core {r['one_core_ms']:.3f} ms/frame, pipeline period {r['period_ms']:.3f} ms: "
          f"{r['speedup']:.3f}x = 2 / (work {r['work']:.3f} x imbalance {r['imbalance']:.3f} x "
          f"lock-step {r['lock_step']:.3f}); stages {r['stage_ms'][0]:.3f} / {r['stage_ms'][1]:.3f} ms; "
          f"simulated period with 2 buffers {r['sim_period_ms']['2']:.3f} ms, 3 buffers "
          f"{r['sim_period_ms']['3']:.3f} ms")


if __name__ == "__main__":
    main()
