// DAG cost model: latency of a mapping whose sub-graphs form a DAG (independent branches of one
// frame on different processors), as the executor (core/executor.h) runs it.
//
// Sub-graphs are the runs of one letter of the order, cut also around a split layer whose parts
// are on several processors (core/partition.h, graph/split_units.h); sub-graph s feeds d when
// a unit of d reads a unit of s (graph::UnitDag). A sub-graph's time on its processor is the sum
// of its units' times (CostModel::layer_us) plus, per edge it sends (receives), the profile's
// transfer of the producing unit's outputs (CostModel::send_us / receive_us, the copies only: a
// pipeline's hand-off is a delay on the edge, below; an edge between two sub-graphs of one
// processor, e.g. around a
// spread split layer, is copied all the same: it costs the sender's send and the receiver's
// receive as profiled towards / from another processor, the fastest such pair, with no hand-off
// and no wake-up; in switch mode nothing between two processors whose backends share
// boundaries in place, ProfileProcessor::in_place_boundaries) plus, in switch mode, a wake-up
// per cross-processor edge it receives
// (a waiting processor thread coming back: `switch_edge_us` when set, else the pair's
// LayerProfile::switch_edges as `co_up profile` measured it, else 0) and per megabyte of that
// edge's tensor (the producing unit's ProfileLayer::output_bytes) read from the other core's
// caches (`switch_edge_mb_us` when set, else LayerProfile::switch_edge_mb, else 0), plus the
// input transfer for the sub-graph that reads the network input.
//
// Latency: the executor is simulated, event by event. One thread per processor; an idle
// processor starts, among its sub-graphs that are ready (every input holds the frame, every
// receiver it feeds has a free slot, in switch mode the previous frame has left), the one with the
// oldest frame, then the lowest index; a sub-graph publishes its outputs when it ends, so a branch
// waits for the whole sub-graph that produces its input. In pipeline mode a published frame
// reaches a reader on another processor a delay later (the receiver learning of it; neither
// processor's work, as each has other frames to run meanwhile), and every sub-graph run costs its
// processor the executor's work around it (scheduling lock, claim, commit, waking the other
// thread: DagCostOptions::pipeline_subgraph_us), and its layers take `pipeline_work_factor`
// times their profiled times (both processors computing at once share the last-level cache
// and memory bandwidth; the profile timed layers one processor at a time). These are the
// profile's pipeline fit
// (LayerProfile::pipeline_subgraphs / pipeline_edges, planner/pipeline_cost_fit.h: fitted
// against this model's simulation of the profile's own pipeline runs); a profile without it
// delays an edge by the pair's hand-off (CostModel::handoff_us, fitted for the chain model) and
// charges nothing per sub-graph.
// Receivers hold receiver_capacities(.., receiver_buffers) frames (core/partition.h). Concurrent
// branches on different processors overlap; branches on one processor run in sequence in that
// order.
//   switch:   latency = one frame's makespan; period = latency.
//   pipeline: a run simulated as the executor runs `co_up run --n=N` and `plan --verify`: frames
//             all admitted at once. Latency = their median latency (queueing included).
//             `pipeline_frames` = N > 0, the run measured: period = as profiler::summarize
//             measures it, (end of the last - end of the first) / (N - 1), over a short run above
//             the steady rate (the first frame ends late: its processors ran later frames' early
//             sub-graphs meanwhile). 0 (the default), the steady state: 64 frames, the mean period
//             over the middle half (not the first frames, ending late, nor the last, the early
//             stages done). predict_run(): the run's median over simulations with the
//             profile's layer-time noise (one run is chaotic; see there).
//             pipeline_period_us() is the busiest resource (sub-graph times, the per-sub-graph
//             cost included, summed per resource), the searches' objective and bound.
//   overlap:  the executor's overlap mode: frame g enters once g - 2 completed, and runs on a
//             processor only when g - 1 has nothing left there and, for a tensor shared in
//             place with another processor, that processor's readers finished g - 1; boundary
//             copies and wake-ups as in switch mode. Latency = median frame latency over
//             `pipeline_frames` frames (0: 64); period = mean time between completions over the frames
//             after the first quarter (the gate's idle time counts; not the busiest resource).
// Co-run slowdown, switch and overlap mode: where two processors compute at once (spread
// branches, a split layer's parts, overlap's two frames), they share the last-level cache and
// memory bandwidth, as in a pipeline. So a running sub-graph's layers progress at rate 1 / f
// while a sub-graph of another resource runs, and at rate 1 otherwise: f = the pair's
// pipeline work factor (the same physical cause, nothing new to fit), at least 1 (a fit below 1
// is noise around 1; it keeps the lower bounds below the value). The simulation re-computes the
// running sub-graphs' ends whenever one starts or ends. A sub-graph runs its receive side first
// (input, receives, wake-ups), then its layers, then its sends; the copies progress at rate 1,
// as pipeline mode leaves them (the profile timed them in runs of both processors). Processors
// of one resource (a GPU's host thread on its CPU cluster) do not slow each other here (their
// cores are time-shared, which the model does not simulate); a GPU or accelerator against another
// resource takes its pair's factor when `co_up profile` fitted one (its own pipeline runs
// measure its contention for memory), else 1. Pipeline mode keeps its constant factor on every
// layer (fitted on always-busy pipelines, where both compute nearly all the time: applying the
// rate there too would count the slowdown twice). DagCostOptions::corun_work_factor 1 turns it
// off (the model as before).
// Energy: CostModel::energy_mj over the sub-graph times per processor (as profiled in switch and
// overlap mode: the co-run stretch is in the latency and period, not in the busy times).
// Resources that share cores (a GPU's host thread) are not slowed by each other here.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/parallel_regions.h"
#include "graph/split_units.h"
#include "planner/cost_model.h"

namespace co_up::planner {

struct DagCostOptions {
  // Per cross-processor edge, switch mode; negative: the profile's per-pair value (0 if absent).
  double switch_edge_us = -1;
  // Per megabyte of a cross-processor edge's tensor, switch and overlap mode (us per 10^6 bytes);
  // negative: the profile's per-pair value (0 if absent).
  double switch_edge_mb_us = -1;
  // Pipeline mode, per sub-graph run: work of its processor's thread outside its layers and
  // copies (the executor's scheduling lock, claim, commit and wake-up of the other thread);
  // negative: the profile's (LayerProfile::pipeline_subgraphs, at least kExecutorRunUs; 0 if
  // absent).
  double pipeline_subgraph_us = -1;
  // Pipeline mode, per cross-processor edge: the delay between a frame's publishing and its
  // reader seeing it; negative: the profile's (LayerProfile::pipeline_edges where the profile
  // has them, else the pair's hand-off, CostModel::handoff_us).
  double pipeline_edge_us = -1;
  // Pipeline mode, a factor on every layer time: how much longer layers take in a pipeline,
  // where both processors compute at once and share the last-level cache and memory bandwidth,
  // than profiled one processor at a time (copies are not scaled: the profile timed them in
  // runs of both processors). Not positive: the profile's (LayerProfile::pipeline_work_factors,
  // 1 if absent). At least 1 either way (a value below is taken as 1): the other processor's
  // work slows layers, it never speeds them up.
  double pipeline_work_factor = -1;
  // Switch and overlap mode, the co-run slowdown (above): the factor on a sub-graph's layer
  // times while a sub-graph of another resource runs. Not positive: the pair's pipeline work
  // factor (LayerProfile::pipeline_work_factors, 1 if absent); positive: this for every pair of
  // processors on different resources. At least 1; 1: no slowdown (the model before it).
  double corun_work_factor = -1;
  // Simulated frames for pipeline and overlap mode, all admitted at once: those of the run the
  // prediction is compared with (at least 2), or 0: the steady state (64 frames).
  uint32_t pipeline_frames = 0;
  uint32_t receiver_buffers = 3; // ExecutorOptions::receiver_buffers
};

// One sub-graph run of a simulated frame.
struct ScheduledSubGraph {
  uint32_t index = 0;  // sub-graph index (order of first unit)
  char processor = 0;
  uint32_t first_layer = 0, last_layer = 0;
  double start_us = 0, end_us = 0;  // from the frame's start
};

// One frame as the model sees it (switch mode): every sub-graph's start and end, the critical
// path (sub-graph indices, first to last: each waited for the one before it, by data or because
// it held the processor) and each used processor's idle time inside the frame.
struct FrameSchedule {
  double latency_us = 0;
  std::vector<ScheduledSubGraph> subgraphs;
  std::vector<uint32_t> critical_path;
  std::string processors;             // used letters, in order of first use
  std::vector<double> busy_us, idle_us;  // per letter of `processors`
};

// A sub-graph of a mapping as the model charges it in overlap mode (copies and wake-ups of its
// edges included), for schedulers that place sub-graphs of several frames themselves.
struct SubGraphCost {
  size_t processor = 0;  // index in CostModel::letters()
  uint32_t first_layer = 0, last_layer = 0;
  double cost_us = 0;    // alone on the processors
  double corun_us = 0;   // while a sub-graph of another resource runs all along (the co-run slowdown)
  std::vector<uint32_t> sources;  // the sub-graphs it reads, ascending
  // The executor's buffer guards: sub-graphs of other processors touching a buffer it shares in
  // place; it runs frame g only once they finished g - 1.
  std::vector<uint32_t> guards;
};

// One entry of a processor's cyclic sequence: sub-graph `subgraph` of frame (cycle - lag).
struct CyclicEntry {
  uint32_t subgraph = 0;
  uint32_t lag = 0;
  bool operator==(const CyclicEntry&) const = default;
};
// Per processor (CostModel::letters() order): the entries it runs in that order, cycle after
// cycle, each once its frame's inputs are there (planner/modulo_schedule.h makes them).
using CyclicOrder = std::vector<std::vector<CyclicEntry>>;

// The executor's own work per sub-graph run, timed around every step of its loop (docs/design.md,
// "What one sub-graph run costs the executor"): 1.1-1.4 us median per run, 2.0-2.3 us in runs where
// the two vCPUs landed farther apart, a hand-off to the other thread 1.1-3.6 us. A profile's
// pipeline fit below the least of it (a network of few, long sub-graphs leaves it loose: the
// Inception-v4-style fixture's profiles fitted 0.3-0.4 us) is taken as kExecutorRunUs, and
// predict_run() draws each run's cost within kExecutorRunSpreadUs of the one charged.
inline constexpr double kExecutorRunUs = 1.1;
inline constexpr double kExecutorRunSpreadUs = 1.0;

class DagCostModel {
 public:
  // `dag` must have model.layer_count() units; throws InputError otherwise. `model` must outlive
  // this object.
  DagCostModel(const CostModel& model, graph::UnitDag dag, DagCostOptions options = {});

  const CostModel& model() const { return *model_; }
  const graph::UnitDag& dag() const { return dag_; }
  const DagCostOptions& options() const { return options_; }
  void set_switch_edge_us(double us) { options_.switch_edge_us = us; }  // negative: the profile's
  // The wake-up charged per switch-mode edge from processor index `a` to `b` (CostModel order).
  double switch_edge_us(size_t a, size_t b) const;
  void set_switch_edge_mb_us(double us) { options_.switch_edge_mb_us = us; }  // negative: the profile's
  // The cold-read cost charged per megabyte of a switch-mode edge from `a` to `b`.
  double switch_edge_mb_us(size_t a, size_t b) const;
  void set_pipeline_subgraph_us(double us) { options_.pipeline_subgraph_us = us; }  // negative: the profile's
  void set_pipeline_edge_us(double us) { options_.pipeline_edge_us = us; }  // negative: the profile's
  // Pipeline mode: the cost charged per sub-graph run on processor `p` (CostModel order): the
  // most of its pairs' values (one per pair in the profile).
  double pipeline_subgraph_us(size_t p) const;
  // Pipeline mode: the delay on an edge from processor `a` to `b` (0 when a == b).
  double pipeline_edge_us(size_t a, size_t b) const;
  void set_pipeline_work_factor(double factor) { options_.pipeline_work_factor = factor; }  // not positive: the profile's
  // Pipeline mode: the factor on the layer times of processor `p` (the most of its pairs' values).
  double pipeline_work_factor(size_t p) const;
  void set_corun_work_factor(double factor) { options_.corun_work_factor = factor; }  // not positive: the profile's
  // Switch and overlap mode: the factor on the layer times of processor `p` while `q` runs (1
  // when they share a resource).
  double corun_work_factor(size_t p, size_t q) const;

  // Throws InputError as CostModel::check does.
  Prediction predict(const Mapping& mapping) const;
  // A measured run's prediction: the median over `draws` simulations of the run, each sub-graph
  // run's layer time drawn anew from the noise the profile measured, as a run's layers vary from
  // frame to frame. A pipeline run of frames admitted at once is chaotic: which ready sub-graph
  // an idle processor takes next turns on small differences, so one simulation with the median
  // layer times may queue frames quite differently from the typical run (docs/para_pipe.md, "DAG
  // cost model"). The draw: normal with the layers' standard deviation 1.4826 x MAD (the MAD of
  // a normal; mad_us of the profile's layer times at the mapping's level, relative to the median,
  // applied to the layer time as charged) summed over the sub-graph's units, as if they varied
  // together (a host's interference slows consecutive layers alike), cut at 3 deviations;
  // copies as predict(); the cost per sub-graph run (pipeline_subgraph_us) uniform within
  // kExecutorRunSpreadUs of it (at most the cost itself: never below 0), as the executor's own
  // work varies from run to run. That spread decides which sub-graph an idle processor takes
  // where a tiny sub-graph of the other processor ends just before or after its choice: whether
  // frames alternate between two latencies (a 30-frame run's median then falls between them,
  // which no frame had) or a processor starts the next frame first and most frames wait for it
  // (docs/para_pipe.md, "How close the model is"). Latency, period and throughput are the medians
  // over the simulations; energy is predict()'s at that period. Deterministic for a given seed
  // (std::mt19937_64 and its own normal draw: the standard distributions differ between
  // libraries). Pipeline mode only: switch mode (one frame, no queueing) and overlap mode (its
  // gate keeps two frames in flight), a profile without spread, or `draws` 0 give predict()
  // exactly. The searches keep predict(): this one costs `draws` simulations.
  static constexpr uint32_t kRunDraws = 15;
  static constexpr uint64_t kRunSeed = 1;
  Prediction predict_run(const Mapping& mapping, uint32_t draws = kRunDraws, uint64_t seed = kRunSeed) const;
  // The standard deviation of unit `u`'s time on processor `p` at `levels` as predict_run draws
  // it (before a pipeline's work factor): 1.4826 x the profile's MAD relative to its median, x
  // the unit's time; 0 where the profile has no MAD.
  double layer_sigma_us(uint32_t u, size_t p, const std::vector<int>& levels) const;
  FrameSchedule schedule(const Mapping& mapping) const;  // switch mode, one frame
  // The sub-graphs of `mapping` as overlap mode charges them (the mapping's mode is ignored).
  std::vector<SubGraphCost> subgraph_costs(const Mapping& mapping) const;
  // Overlap mode's costs and buffer guards, but each processor runs `order`'s sequence for it
  // (entries of frames before the first or past the last skipped) instead of the oldest ready
  // frame: latency = median frame latency, period = mean time between completions over the
  // middle half of `pipeline_frames` frames (0: 64), between the sequences' prologue and
  // epilogue. Throws InputError when a processor's sequence does not hold each of its sub-graphs
  // exactly once, or when the sequences deadlock.
  Prediction predict_cyclic(const Mapping& mapping, const CyclicOrder& order) const;
  // The searches' objectives without the rest of predict(): one switch frame's latency, and the
  // pipeline period as the busiest resource (the steady state; predict() simulates the run).
  double switch_latency_us(const Mapping& mapping) const;
  double pipeline_period_us(const Mapping& mapping) const;

  // Whether unit `u` is an output or feeds one: a frame is done when its outputs are, so only
  // these units bound its latency (a unit that feeds none may still be running).
  bool feeds_output(uint32_t u) const { return feeds_output_.at(u); }
  // Lower bounds for branch-and-bound: with units [0, assigned) placed as `order` says and the
  // rest free, no completion has a smaller switch latency (longest unit path with free units at
  // their fastest, or one processor's sum of its units) or a smaller pipeline period (busiest
  // resource over the placed units); the latency bound counts only units that feed_output().
  // `order` has one character per unit; units whose character is
  // not one of the model's letters ('?') are free.
  double latency_lower_bound_us(const std::string& order, const std::vector<int>& levels) const;
  double period_lower_bound_us(const std::string& order, const std::vector<int>& levels, Mode mode) const;

 private:
  struct Plan;
  struct RunNoise;  // predict_run's draws (the .cpp)
  Prediction predict(const Plan& plan, const Mapping& mapping, RunNoise* noise) const;
  // `capacities`: receiver capacities as the runtime's (a pipeline simulation needs them); else
  // every edge gets the base (one switch frame, or no simulation at all).
  Plan build(const Mapping& mapping, bool capacities) const;
  // Overlap mode: the executor's buffer guards per sub-graph (see the .cpp).
  void set_guards(Plan& plan, const std::vector<uint32_t>& sg_of,
                  const std::vector<std::pair<uint32_t, uint32_t>>& shared_edges) const;
  // One latency per frame; `ends`, when given, gets each frame's completion time.
  // `noise`, when given, draws each sub-graph run's time (predict_run).
  // `cyclic`, when given: each processor runs its sequence (predict_cyclic) instead of the
  // oldest ready frame, with overlap mode's guards but not its gate.
  std::vector<double> simulate(const Plan& plan, uint32_t frames, Mode mode, FrameSchedule* first,
                               std::vector<double>* ends = nullptr, RunNoise* noise = nullptr,
                               const CyclicOrder* cyclic = nullptr) const;

  const CostModel* model_;
  graph::UnitDag dag_;
  DagCostOptions options_;
  std::vector<graph::SplitUnitGroup> split_units_;  // from the profile's unit names
  std::vector<std::vector<double>> profile_edge_us_;  // [from][to], LayerProfile::switch_edges
  std::vector<std::vector<double>> profile_edge_mb_us_;  // [from][to], LayerProfile::switch_edge_mb
  std::vector<double> profile_subgraph_us_;  // [processor], LayerProfile::pipeline_subgraphs
  std::vector<double> profile_work_factor_;  // [processor], LayerProfile::pipeline_work_factors (1 if absent)
  // [p][q]: the pair's pipeline work factor, at least 1; 1 for one resource.
  std::vector<std::vector<double>> profile_corun_factor_;
  std::vector<std::vector<double>> profile_delay_us_;  // [from][to], pipeline_edges or the hand-off
  std::vector<double> output_mb_;  // per unit: ProfileLayer::output_bytes / 10^6 (0 when unknown)
  // Per unit, from the profile's op names (false when unknown): the unit starts with a Concat
  // (`concat_first_`; `concat_only_`: it is nothing else) or ends with a convolution. What
  // overlap mode needs to find the executor's joins (a Concat written in place by convolutions).
  std::vector<bool> concat_first_, concat_only_, conv_last_;
  std::vector<uint32_t> sole_successor_;  // per unit: its one successor, UINT32_MAX if none or several
  // [processor][unit]: a cut between two sub-graphs of one processor, which the runtime hands
  // over as any other (the sender copies into the receiver's slot, the receiver binds it).
  std::vector<std::vector<double>> same_send_us_, same_receive_us_;
  std::vector<bool> feeds_output_;
  // Per processor: ProfileProcessor::in_place_boundaries (switch-mode edges between two such
  // processors cost no transfer).
  std::vector<bool> in_place_;
  // [processor][level][unit]: the profile's MAD over its median at that level (a level not
  // measured: level 0's, else the first measured level's; 0 without a MAD), for predict_run.
  std::vector<std::vector<std::vector<double>>> relative_mad_;
  std::vector<double> fastest_us_;  // per unit: min over processors at fastest levels (bounds)
};

}  // namespace co_up::planner
