// Cost model: predicts throughput, latency and energy per frame of a mapping from a layer profile.
//
// Mapping: `order` has one processor letter per layer (the expanded --order), `mode` is pipeline
// or switch, `levels` has one DVFS level per domain of CostModel::domains() (0 = as found, i.e.
// no --frequency for it; else the 1-based table level co_up's --frequency takes). Empty `levels`
// means all 0. One level per domain for the whole run: that is what pipeline mode allows (a
// domain is shared by the stages running concurrently), and what `--frequency={...}` per
// sub-graph expresses for both modes.
//
// Formulas (times in us, per frame):
//   t(i, X, l)   layer i on processor X at its domain's level l: the profile's median for (X, l);
//                when (X, l) was not measured, the median at the nearest measured level m scaled
//                by the frequency ratio f_m / f_l (time ~ 1/f, compute-bound assumption); level 0
//                ("as found") is taken to be the table's highest frequency when scaling from or
//                to it. The exact measurement is always preferred.
//   boundary i   when order[i] != order[i+1]: send_us[i] of (X -> Y) is charged to X,
//                receive_us[i] to Y; input_transfer_us[X] to the processor of layer 0.
//   hand-off     in pipeline mode each boundary between X and Y also charges the profile's
//                handoff_us of the pair (planner/layer_profile.h: handing frames over, a processor
//                switching between stages of different frames) to X and to Y: more sub-graphs
//                cost more even when the bytes moved do not. Not in switch mode: one frame at a
//                time has no stages to switch between, and charging it there overshot measured
//                switch latencies of middle splits by 5-7 % (AlexNet, MobileNet on the 2-core
//                host). Pairs without it (v1 profiles) cost 0 and say so.
//   busy(X)      sum of X's layer times and the transfer costs charged to X.
//   resources    processors whose host_cores overlap (transitively) form one resource: they
//                compete for the same cores, so a resource's time is the sum of its processors'.
//   pipeline     period = max over resources of busy(resource); throughput = 1 / period.
//                latency = sum of every layer, transfer and hand-off time along the frame's path
//                (2 hand-offs per boundary). Queueing is NOT modelled: a frame that waits in a
//                receiver for its next stage's processor (busy with another frame) waits unseen,
//                so pipeline latency is a lower bound (AlexNet on the 2-core development host:
//                measured about 1.0x it for a 2-stage split, 1.5x with 5 sub-graphs, 3.7x with 8).
//   switch       latency = the same sum without hand-offs; period = latency; throughput =
//                1 / latency.
//   energy       per frame over the period T, summed over every processor with power data:
//                busy_w * busy(X) + idle_w * (T - busy(X)). busy_w/idle_w come from the profile's
//                power_w at (X, l); else from its power_model P = alpha V^2 U f + beta V (U = 1
//                busy, 0 idle, V from voltages_mv or 1 V, f in GHz at level l, level 0 = the
//                highest; level 0 without data: the highest level's). Processors with no data
//                that the order does not use are left out; NaN when one it uses has none.
// Everything above is a prediction; `co_up plan --verify` measures.
#pragma once

#include <array>
#include <cstdint>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/mapping.h"
#include "planner/layer_profile.h"

namespace co_up::planner {

// One Mapping type for planner and runtime (core/mapping.h).
using co_up::Mapping;
using co_up::Mode;
using co_up::mode_name;

// The time charged for a layer on a processor that declined it (1000 s): large enough that no
// search prefers it, finite so that sums and comparisons stay ordinary numbers.
inline constexpr double kDeclinedUs = 1e9;
struct ResourceTime {
  std::string processors;  // letters sharing the resource, e.g. "BG"
  double busy_us = 0;      // per frame
};

struct Prediction {
  double throughput_fps = 0;
  double latency_ms = 0;
  double energy_mj_per_frame = std::numeric_limits<double>::quiet_NaN();
  double period_us = 0;                 // 1e6 / throughput_fps
  std::vector<ResourceTime> resources;  // every resource of the profile, in processor order
  bool has_energy() const { return !std::isnan(energy_mj_per_frame); }
};

// The profile compiled into dense tables for fast evaluation during searches.
class CostModel {
 public:
  // Uses the processors that have layer times (others are ignored); throws InputError when
  // none has.
  explicit CostModel(const LayerProfile& profile);

  const LayerProfile& profile() const { return profile_; }
  uint32_t layer_count() const { return layers_; }
  const std::string& letters() const { return letters_; }
  // Distinct non-empty dvfs_domain values, in processor order; Mapping::levels is indexed by it.
  const std::vector<std::string>& domains() const { return domains_; }
  int level_count(size_t domain) const { return level_count_[domain]; }  // table size
  // Whether some processor of the domain was measured at a table level (1..n). Searches vary
  // only such domains; the others stay at level 0 (as found).
  bool domain_profiled(size_t domain) const { return domain_profiled_[domain]; }
  // Whether every processor has power data (measured or modelled) at every level the searches
  // use (1..n of a domain_profiled() domain, else 0); when not, energy_gap() names the first
  // missing (processor, level).
  bool has_energy() const { return energy_gap_.empty(); }
  const std::string& energy_gap() const { return energy_gap_; }
  // Assumptions made while compiling the profile (scaled levels, transfers counted as 0).
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The mapping as its command line runs it: level 0 (as found) for every domain the command
  // does not set (no processor of the order is clocked by it; a GPU's host counts), and, when it
  // sets any, the highest level instead of 0 for the domains it sets. Searches return such
  // mappings, so two with the same command line are the same mapping.
  Mapping normalized(Mapping mapping) const;

  // Throws InputError for an order of the wrong length, an unknown letter or a bad level.
  Prediction predict(const Mapping& mapping) const;
  void check(const Mapping& mapping) const;

  // Building blocks the searches use (processor index p = position in letters()).
  double layer_us(uint32_t layer, size_t p, const std::vector<int>& levels) const;
  // Cost of a boundary on the sending / receiving processor: the measured transfer, plus in
  // pipeline mode the pair's hand-off; 0 when from == to.
  double send_us(uint32_t boundary, size_t from, size_t to, Mode mode) const;
  double receive_us(uint32_t boundary, size_t from, size_t to, Mode mode) const;
  double handoff_us(size_t a, size_t b) const { return a == b ? 0.0 : handoff_[a][b]; }
  // This model with the hand-off of processors `a`, `b` (letters) set to `us` (fitting it).
  CostModel with_handoff(char a, char b, double us) const;
  // This model with every layer time of processor `p` (letter), at every level, `scale` times
  // the profile's (a processor measured faster or slower at another moment: fitting what the
  // other processor's work adds to its layers, planner/pipeline_cost_fit.h).
  CostModel with_layer_scale(char p, double scale) const;
  double input_us(size_t p) const;
  // Energy per frame (mJ) of processors busy `busy_us[p]` per frame over a period of `period_us`
  // at `levels` (the formula above); NaN when a processor with used[p] has no power data.
  double energy_mj(const std::vector<double>& busy_us, const std::vector<bool>& used, double period_us,
                   const std::vector<int>& levels) const;
  size_t resource_of(size_t p) const { return resource_of_[p]; }
  size_t resource_count() const { return resource_count_; }
  int domain_of(size_t p) const { return domain_of_[p]; }  // -1: no domain
  int level_of(size_t p, const std::vector<int>& levels) const {
    return domain_of_[p] < 0 || levels.empty() ? 0 : levels[static_cast<size_t>(domain_of_[p])];
  }
  // letters().size() when absent. A table, not a search: the planner's searches ask for every
  // unit of every candidate they build.
  size_t index_of(char letter) const { return index_of_[static_cast<unsigned char>(letter)]; }
  // Whether layer `layer` can run on processor p (false: it declined the layer when profiled;
  // layer_us then is kDeclinedUs), and whether every layer of `order` runs where it is placed.
  bool runs(uint32_t layer, size_t p) const { return runs_[p][layer]; }
  bool runs(const std::string& order) const;
  // For each domain, the level with the smallest total layer time among the levels searches
  // use (0 for a domain not profiled at table levels).
  std::vector<int> fastest_levels() const;

 private:
  LayerProfile profile_;
  uint32_t layers_ = 0;
  std::string letters_;
  std::array<uint8_t, 256> index_of_{};  // per letter: its index in letters_, else letters_.size()
  std::vector<std::string> domains_;
  std::vector<int> level_count_;
  std::vector<bool> domain_profiled_;
  std::vector<int> domain_of_;
  std::vector<size_t> resource_of_;
  size_t resource_count_ = 0;
  std::string energy_gap_;
  std::vector<std::string> warnings_;
  std::vector<std::vector<bool>> runs_;  // [p][layer]
  // time_[p][level][layer], level 0..table size; NaN-free after construction (declined layers:
  // kDeclinedUs).
  std::vector<std::vector<std::vector<double>>> time_;
  std::vector<std::vector<std::vector<double>>> send_, receive_;  // [from][to][boundary]
  std::vector<double> input_;
  std::vector<std::vector<double>> handoff_;  // [a][b], symmetric, 0 on the diagonal
  // busy/idle watts per [p][level]; NaN when unknown.
  std::vector<std::vector<double>> busy_w_, idle_w_;

};

// Convenience: CostModel(profile).predict(mapping).
Prediction predict(const LayerProfile& profile, const Mapping& mapping);

// The value of co_up's --frequency for the mapping: per sub-graph "{a-b-...}" with each
// sub-graph's domain level ("[g,h]" for a GPU: its level and its host's), "" when all levels are
// 0. Sub-graphs whose processor has no DVFS table get "1", and domains the profile never
// measured at table levels (maybe not settable here) get their highest level: both need
// --dvfs=best-effort, which needs_best_effort says.
std::string frequency_argument(const CostModel& model, const Mapping& mapping);
bool needs_best_effort(const CostModel& model, const Mapping& mapping);

// A runnable command line: co_up --graph=G (or --model=F) --units=... --order=... --mode=...
// [--frequency=... [--dvfs=best-effort]].
std::string command_line(const CostModel& model, const Mapping& mapping);

}  // namespace co_up::planner
