// Hetero2Pipe's building blocks (papers/hetero2pipe.txt, section V): planning several networks
// that share the processors of one SoC as one pipeline of K stages (stage k = the k-th processor
// of a fixed pipeline order, the same for every network).
//
//   horizontal_partition   per network, independently: contiguous layer slices over the K stages
//                          minimising the slowest stage (the paper's P1, its DP recurrence
//                          S*(j,k) = min_i max(S*(i-1,k-1), T_k(i,j)); a stage may stay empty).
//   mitigate_contention    the request sequence re-arranged so that no contention window (K
//                          consecutive requests, the ones whose slices co-run) holds two
//                          high-contention networks, where enough low-contention requests allow:
//                          one Kuhn-Munkres assignment per round (planner/kuhn_munkres.h).
//   align_by_work_stealing per contention window: the critical network (largest total time), and
//                          every other network's slices moved layer by layer towards the stage
//                          time of the critical slice they co-run with; then a local search over
//                          single-layer moves (the paper's tail phase).
//   simulate               the runtime's behaviour as a model: one thread per processor, each
//                          running the oldest ready slice; slices that run at once slow each other
//                          down by the contention table (rates recomputed at every event).
//
// Times are microseconds per frame. Everything here is a prediction from profiled numbers.
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace co_up::planner {

// One network's costs on the K stages (pipeline order).
struct NetworkCosts {
  std::string name;
  std::vector<std::vector<double>> layer_us;    // [stage][layer]
  // Cut after layer b: what the sending stage pays (send_us[k][b]) and the receiving one
  // (receive_us[k][b]); averaged over peers, as the paper's memory-copy term T^c_k(l_i, l_j).
  std::vector<std::vector<double>> send_us;     // [stage][boundary], layers-1 entries
  std::vector<std::vector<double>> receive_us;  // [stage][boundary]
  std::vector<double> input_us;                 // [stage]: receiving the network input

  uint32_t layers() const { return layer_us.empty() ? 0 : static_cast<uint32_t>(layer_us[0].size()); }
  size_t stages() const { return layer_us.size(); }
};

// Throws std::invalid_argument for inconsistent sizes (tests and readers build these).
void check_costs(const NetworkCosts& costs);

// Stage boundaries: cuts[k] is the first layer of stage k; K+1 entries, cuts[0] = 0,
// cuts[K] = layers, non-decreasing (cuts[k] == cuts[k+1]: stage k is empty).
using StageCuts = std::vector<uint32_t>;

// T_k(first, end): layers [first, end) on stage k with their transfers; 0 when empty.
double stage_us(const NetworkCosts& costs, size_t stage, uint32_t first, uint32_t end);
double stage_us(const NetworkCosts& costs, const StageCuts& cuts, size_t stage);
// The order string of a partition: letters[k] for each layer of stage k.
std::string order_of(const StageCuts& cuts, const std::string& letters);
// Whole network on one stage.
StageCuts single_stage_cuts(uint32_t layers, size_t stages, size_t stage);

struct HorizontalPartition {
  StageCuts cuts;
  double bottleneck_us = 0;  // max over stages of stage_us
};
// Exact, O(K n^2) with prefix sums.
HorizontalPartition horizontal_partition(const NetworkCosts& costs);
// Every partition (for tests; refuses more than 5 million).
HorizontalPartition horizontal_brute_force(const NetworkCosts& costs);

// Fractional slowdown of a slice of network `victim` on stage `victim_stage` while a slice of
// `aggressor` runs on `aggressor_stage` (0.2 = 20 % longer). Slowdowns of several co-runners add.
class Interference {
 public:
  Interference() = default;
  Interference(size_t networks, size_t stages);
  double at(size_t victim, size_t victim_stage, size_t aggressor, size_t aggressor_stage) const;
  void set(size_t victim, size_t victim_stage, size_t aggressor, size_t aggressor_stage, double s);
  size_t networks() const { return networks_; }
  size_t stages() const { return stages_; }
  // How much network i slows the others, on average over networks and stage pairs: the
  // contention intensity the paper splits into high and low.
  double intensity(size_t network) const;

 private:
  size_t index(size_t a, size_t ka, size_t b, size_t kb) const;
  size_t networks_ = 0, stages_ = 0;
  std::vector<double> slowdown_;
};

struct SimulationSettings {
  int cycles = 24;        // the request sequence is repeated this often
  int warmup_cycles = 4;  // completions before the end of this many cycles are not counted
  int in_flight = 0;      // frames of one network in the pipeline at once; 0: its stages + 1
  // true: a finite run as the runtime measures it, every request counted from time 0 (all
  // arrived) to the last completion, fill and drain included; warmup_cycles is then ignored and
  // cycles (>= 1) is the frames per network.
  bool whole_run = false;
};

struct SimulationResult {
  double throughput_fps = 0;          // all networks' requests together, steady state
  double period_us = 0;               // one cycle of the sequence (every request once)
  std::vector<double> busy_fraction;  // per stage, over the measured interval
  double bubble_fraction = 0;         // idle share of the stages that have work, same interval
};

// Requests arrive as `sequence` (network indices; one cycle) repeated; every network's frames
// leave in order. replica_stages (optional, per network): stages that also run the network whole
// (its cuts must put it whole on one stage); each of its requests then runs, whole, on whichever
// of those stages takes it first, as the runtime's replicas do. Throws std::invalid_argument for
// mismatched inputs.
SimulationResult simulate(const std::vector<NetworkCosts>& networks, const std::vector<StageCuts>& cuts,
                          const std::vector<size_t>& sequence, const Interference& interference,
                          const SimulationSettings& settings = {},
                          const std::vector<std::vector<size_t>>& replica_stages = {});

// Networks whose intensity is at or above the `high_fraction` quantile (0.5: the top half).
std::vector<bool> high_contention(const Interference& interference, double high_fraction = 0.5);

// Windows of K consecutive requests (cyclic: the sequence repeats) holding two or more
// high-contention requests.
int contention_conflicts(const std::vector<size_t>& sequence, const std::vector<bool>& high, size_t stages);

// Algorithm 2: rounds of one Kuhn-Munkres assignment of movable low-contention requests (rows)
// to conflict places (columns: a high request that shares a window with an earlier one), cost
// the displacement |i - j|, forbidden when i lies within K-1 of j or when taking it away makes a
// new conflict where it was; every request moves at most once. Stops when no conflict is left,
// no movable request is, or a round does not reduce the conflicts.
std::vector<size_t> mitigate_contention(const std::vector<size_t>& sequence, const std::vector<bool>& high,
                                        size_t stages);

// Algorithm 3 (work stealing within each contention window, windows slid by K), then the tail
// phase as a local search over single-layer boundary moves; a change is kept only when the
// simulated throughput does not drop. Returns the updated cuts.
std::vector<StageCuts> align_by_work_stealing(const std::vector<NetworkCosts>& networks,
                                              std::vector<StageCuts> cuts, const std::vector<size_t>& sequence,
                                              const Interference& interference,
                                              const SimulationSettings& settings = {}, int max_rounds = 50);

}  // namespace co_up::planner
