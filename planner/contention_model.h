// Co-execution slowdown between two networks on two processors (Hetero2Pipe section III):
// instead of measuring every combination, a few co-runs are measured and a ridge regression
// (the paper's eq. 1, W = (X^T X + alpha I)^-1 X^T Y) predicts the rest from features of the two
// networks' solo runs.
//
// Sample: network v runs alone on processor P (solo_us per frame), then at the same time as
// network a on processor Q (corun_us): slowdown = corun_us / solo_us - 1 (0.2 = 20 % slower).
// Features of a (network, processor) solo run, from the layer profile and the graph:
//   traffic  bytes moved per microsecond: (weights + 2 x activations) / solo time; a proxy for the
//            memory-bus pressure the paper reads from perf counters (cache misses, backend stalls),
//            which a container or a board without perf access cannot read.
//   compute  MACs per microsecond.
// One regression per ordered processor pair (victim's, aggressor's), on
//   x = [1, traffic_v, traffic_a, traffic_v * traffic_a, compute_a]
// with traffic and compute divided by the largest value seen in fitting (stored with the model),
// so alpha means the same for every pair. The intercept is not penalised: it carries the pair's
// base interference (on a host where the GPU is OpenCL on the CPU cores it is large).
// A pair with no fitted sample predicts nothing (has_pair() false).
// Threading: pure values.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace co_up::planner {

struct ContentionFeatures {
  double traffic = 0;  // bytes per microsecond
  double compute = 0;  // MACs per microsecond
};

struct CoRunSample {
  int corun = 0;  // which co-run it came from (both directions of one co-run share it)
  std::string victim, aggressor;  // network names
  char victim_processor = 0, aggressor_processor = 0;
  ContentionFeatures victim_features, aggressor_features;
  double solo_us = 0, corun_us = 0;
  double slowdown() const { return solo_us > 0 ? corun_us / solo_us - 1 : 0; }
};

// Ridge regression: weights minimising |Xw - y|^2 + alpha * sum_{j >= penalty_from} w_j^2.
// Throws std::invalid_argument for ragged X, no rows, or a singular system (alpha 0 and
// collinear columns).
std::vector<double> ridge_fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y, double alpha,
                              size_t penalty_from = 0);

class ContentionModel {
 public:
  static constexpr double kDefaultAlpha = 0.01;

  // Fits every ordered processor pair that has samples.
  static ContentionModel fit(const std::vector<CoRunSample>& samples, double alpha = kDefaultAlpha);

  bool has_pair(char victim_processor, char aggressor_processor) const;
  // Predicted fractional slowdown (not clamped; callers clamp at 0). Throws std::out_of_range
  // for a pair without samples.
  double predict(char victim_processor, char aggressor_processor, const ContentionFeatures& victim,
                 const ContentionFeatures& aggressor) const;
  std::vector<double> feature_row(const ContentionFeatures& victim, const ContentionFeatures& aggressor) const;

  nlohmann::json to_json() const;
  // Throws InputError naming `origin` and the key for a malformed model.
  static ContentionModel from_json(const nlohmann::json& j, const std::string& origin);

  double alpha() const { return alpha_; }
  const std::map<std::pair<char, char>, std::vector<double>>& weights() const { return weights_; }

 private:
  double alpha_ = kDefaultAlpha;
  double traffic_scale_ = 1, compute_scale_ = 1;
  std::map<std::pair<char, char>, std::vector<double>> weights_;  // (victim, aggressor) processors
};

struct HeldOutError {
  size_t samples = 0;           // predictions compared (two per co-run)
  double mean_abs_points = 0;   // mean |predicted - measured| slowdown, in percentage points
  double max_abs_points = 0;
  double mean_abs_time_pct = 0; // mean |predicted - measured| co-run time, % of the measured
};

// Splits co-runs (both directions of one stay together) into fitted and held out: every
// `hold_every`-th co-run of each processor pair, starting with the second, is held out.
std::pair<std::vector<CoRunSample>, std::vector<CoRunSample>> split_held_out(const std::vector<CoRunSample>& samples,
                                                                             int hold_every = 3);
// The model's error on `held_out` (samples of pairs it has; others are skipped).
HeldOutError held_out_error(const ContentionModel& model, const std::vector<CoRunSample>& held_out);
// Each ordered (victim, aggressor) processor pair's mean slowdown over `samples` (unclamped: a
// noisy host can measure a co-run faster than the solo runs); pairs without samples are absent.
std::map<std::pair<char, char>, double> pair_mean_slowdowns(const std::vector<CoRunSample>& samples);
// The same for the simplest alternative, each ordered processor pair's mean slowdown over
// `fitted`: what the features must beat to be worth having.
HeldOutError held_out_error_of_pair_mean(const std::vector<CoRunSample>& fitted,
                                         const std::vector<CoRunSample>& held_out);

nlohmann::json samples_to_json(const std::vector<CoRunSample>& samples);
std::vector<CoRunSample> samples_from_json(const nlohmann::json& j, const std::string& origin);

}  // namespace co_up::planner
