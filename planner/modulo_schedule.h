// Modulo scheduling of one mapping's sub-graphs (software pipelining; Rau, "Iterative modulo
// scheduling", 1994): a frame enters every `ii_us` (the initiation interval), and each processor
// runs a fixed cyclic sequence of (sub-graph, frame lag) entries, so that the gaps one frame leaves
// on a processor (a branch waiting for the other processor) hold the next or the previous frame's
// sub-graphs that fit there, placed offline from their known costs, instead of whatever is ready.
//
// One frame's sub-graphs get start times t_s (from the frame's start) such that
//  - s starts after every source ends (t_s >= t_src + d_src, the edges' copies being in d),
//  - on each processor, the intervals [t_s, t_s + d_s) taken modulo ii_us do not overlap (frame g's
//    run of s is at g * ii_us + t_s: no two runs of one processor ever overlap),
//  - the executor's buffer guards hold (s runs frame g only once every guard finished g - 1:
//    t_s + ii_us >= t_g + d_g for each guard g, both ways),
// with d_s the sub-graph's time while the other processor computes all along (the co-run slowdown,
// SubGraphCost::corun_us): in a full modulo schedule both processors compute nearly all the time.
// Placement is list scheduling in sub-graph index order (a topological order), each at its
// earliest start whose interval modulo ii_us is free: no backtracking, so a tight ii_us can be
// refused where a cleverer placement exists. A processor's sequence is its sub-graphs by start
// modulo ii_us, each with lag floor(t_s / ii_us): in cycle c it runs sub-graph s of frame c - lag.
//
// Throughput is at most 1 / the busiest processor's summed d (`modulo_min_ii_us`): interleaving
// fills idle time, it does not shorten work; the latency is the placed frame's length.
// DagCostModel::predict_cyclic simulates the sequences as the executor would run them.
#pragma once

#include <optional>
#include <vector>

#include "planner/dag_cost_model.h"

namespace co_up::planner {

struct ModuloSchedule {
  double ii_us = 0;      // initiation interval: a frame enters every ii_us
  double length_us = 0;  // one frame's schedule length (its planned latency)
  std::vector<double> start_us;  // per sub-graph, from its frame's start
  CyclicOrder order;             // per processor: by start modulo ii_us, lag = floor(start / ii_us)
};

// The lower bound on the initiation interval: the busiest processor's summed d, and no sub-graph
// longer than it. `processors`: CostModel::letters().size().
double modulo_min_ii_us(const std::vector<SubGraphCost>& subgraphs, size_t processors);

// The schedule at `ii_us`, or nothing where the placement above finds none (ii_us below the
// bound, fragmentation of a processor's cycle, or a guard that cannot hold).
std::optional<ModuloSchedule> modulo_schedule(const std::vector<SubGraphCost>& subgraphs, size_t processors,
                                              double ii_us);

// The schedules trading throughput for latency: initiation intervals from the lower bound up to
// `max_ii_us`, each `step` (relative) above the last, keeping those whose length is below every
// faster one's (the front of (ii_us, length_us), fastest first).
std::vector<ModuloSchedule> modulo_schedule_front(const std::vector<SubGraphCost>& subgraphs, size_t processors,
                                                  double max_ii_us, double step = 0.0025);

}  // namespace co_up::planner
