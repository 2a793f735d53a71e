// What the executor adds to a multi-exit frame's compute (Map-and-Conquer stages as co_up runs
// them), and a least-squares fit of it from measured runs.
//
// Why a model of its own: Eq. 8-14 (stage_latency_model.h) count compute and transfers and let a
// frame's stages overlap. co_up's executor runs a frame's stages one after another (stage i+1
// waits for exit i's decision, docs/early_exits.md); a frame that stops at exit m completes there
// and never reaches a later sub-graph. On a network of ~1 MMAC the hand-offs and dispatches are
// larger than the compute, so the runtime model of a frame that stops at exit m is
//
//   latency = sum_{i <= m} ( own_i + sum_{k < i reusing} u[k][i] )      compute and transfers
//           + sum_{i <= m}                     run(p_i)                  dispatch
//           + sum_{0 < i <= m, p_i != p_i-1}   boundary(p_i)             hand-off
//           + sum_{0 < i <= m, p_i == p_i-1}   next_stage(p_i)           next stage, same thread
//
// own_i is the sum of stage i's sub-layer times (tau); every stage is a sub-graph of its own, p_i
// its processor (the partition cuts after each exit, also between stages on one letter, so a
// frame that stops at exit m runs no later stage on any processor; no transfer counted between
// stages on one letter); a boundary is each change of letter in the order, p the processor
// after it, paid only by the frames that continue past it; next_stage(p) is the same for two
// consecutive stages on p (one thread: the decided exit's commit, its next scheduling pass, the
// copy of the features the next stage reads). run(p) is what running a sub-graph on p costs beyond its profiled operators
// (binding, the backend's launch and finish); boundary(p) what the executor adds when the next
// sub-graph is on p (commit and publish, p's thread waking up and claiming the frame).
// Both are fitted from frames measured through the runtime one at a time (switch mode), per exit:
// the exits of one order differ by the run and boundary costs of the stages they add, the orders
// by which letters those are (fit_stage_overheads).
//
// compute_scale(p) multiplies the profiled sub-layer times of the stages on p: the profile times
// each operator as a unit of its own (--units=ops), which is not what the same operators cost run
// back to back in one stage's sub-graph (one dispatch instead of one per operator, warm caches).
// On a network whose stages are compute-bound that ratio, not the fixed costs, decides the
// error; it is fitted with the fixed costs when the samples carry their compute per processor,
// never below 1 (a scale below 1 lets noisy samples trade compute for dispatch cost) and never
// above kMaxComputeScale (below).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "planner/stage_latency_model.h"

namespace co_up::planner {

// The most a stage's operators run back to back may cost per profiled millisecond: the same
// kernels on the same processor, one dispatch instead of one per operator. On a quiet host the
// fit gave 1.0-1.45; on a loaded one 2.4-2.6 (the stages measured 2-3x their profile), and fits
// of 3-15.5 came from load bursts in the fit runs and mispredicted the orders they were not fitted
// on by 2.4-3.6x. A scale above this says the fit runs were slowed by something the profile did
// not see (other load, a lower DVFS level); it is held at the bound and the fixed costs refitted.
inline constexpr double kMaxComputeScale = 3.0;

struct StageOverheads {
  std::map<char, double> run_ms;       // per processor letter; absent: 0
  std::map<char, double> boundary_ms;  // per processor letter after the boundary; absent: 0
  // Per processor letter: the next stage on the same processor (its thread commits the decided
  // exit, picks the next sub-graph and copies the features it reads); absent: 0.
  std::map<char, double> next_stage_ms;
  // Per processor letter: measured / profiled time of its stages' sub-layers; absent: 1.
  std::map<char, double> compute_scale;
  // Per processor letter whose fitted scale exceeded kMaxComputeScale: the value the fit wanted
  // (compute_scale holds the bound; the other costs were fitted with it).
  std::map<char, double> unbounded_compute_scale;

  double run(char p) const;
  double boundary(char p) const;
  double next_stage(char p) const;
  double scale(char p) const;
};

// The runtime model above for each exit m: the latency of a frame that stops there (ms).
// `order[i]` is stage i's processor; costs.tau/reuse/transfer as in stage_latency_model.h.
// Consecutive stages on one letter are sub-graphs on one thread (next_stage, no transfer). Throws InputError when the
// order does not have one letter per stage.
std::vector<double> runtime_exit_latency(const StageCosts& costs, const std::string& order,
                                         const StageOverheads& overheads);

// One measurement: frames of a run with stages on `order` that stopped at `exit` took
// `measured_ms` on average; the runtime model with zero overheads predicts `compute_ms` for them.
struct OverheadSample {
  std::string order;
  size_t exit = 0;
  double measured_ms = 0;
  double compute_ms = 0;
  double weight = 1;  // e.g. the number of frames behind the mean
  // The part of compute_ms that is the stages' own sub-layer times, per processor letter (the
  // rest is transfers). Empty: compute_ms is taken as it is (no compute scale is fitted).
  std::map<char, double> compute_by_processor;
};

// Weighted least squares of (measured - compute) = the sample's run, boundary and next-stage costs
// (with compute_by_processor also (compute_scale(p) - 1) x the compute on p, for every letter with
// compute: the scale is at least 1, the profile a floor, and at most kMaxComputeScale, a scale
// the fit puts above it held there and the rest fitted again), every unknown >= 0 (non-negative
// least squares: Lawson and Hanson's active-set method, exact).
// Letters whose cost the samples do not determine (e.g. two letters only ever seen together)
// are absent from the result: the model cannot predict orders that use them.
// Throws InputError for an empty order or a non-positive weight.
StageOverheads fit_stage_overheads(const std::vector<OverheadSample>& samples);

}  // namespace co_up::planner
