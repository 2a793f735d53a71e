#include "planner/contention_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/error.h"
#include "core/json_input.h"

namespace co_up::planner {

std::vector<double> ridge_fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y, double alpha,
                              size_t penalty_from) {
  if (x.empty() || x.size() != y.size()) throw std::invalid_argument("ridge_fit needs one target per row");
  const size_t m = x[0].size();
  if (m == 0 || m > 64) throw std::invalid_argument("ridge_fit takes 1 to 64 features");
  for (const auto& row : x) {
    if (row.size() != m) throw std::invalid_argument("ridge_fit rows differ in length");
  }
  // Normal equations (X^T X + alpha D) w = X^T y, solved by Gaussian elimination with partial
  // pivoting (m is 5: no need for more).
  std::vector<std::vector<double>> a(m, std::vector<double>(m + 1, 0.0));
  for (size_t r = 0; r < x.size(); ++r) {
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < m; ++j) a[i][j] += x[r][i] * x[r][j];
      a[i][m] += x[r][i] * y[r];
    }
  }
  for (size_t i = penalty_from; i < m; ++i) a[i][i] += alpha;
  for (size_t c = 0; c < m; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < m; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    if (std::abs(a[pivot][c]) < 1e-12) throw std::invalid_argument("ridge_fit: singular system (raise alpha)");
    std::swap(a[c], a[pivot]);
    for (size_t r = 0; r < m; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k <= m; ++k) a[r][k] -= f * a[c][k];
    }
  }
  std::vector<double> w(m);
  for (size_t i = 0; i < m; ++i) w[i] = a[i][m] / a[i][i];
  return w;
}

std::vector<double> ContentionModel::feature_row(const ContentionFeatures& v, const ContentionFeatures& a) const {
  const double tv = v.traffic / traffic_scale_, ta = a.traffic / traffic_scale_;
  return {1.0, tv, ta, tv * ta, a.compute / compute_scale_};
}

ContentionModel ContentionModel::fit(const std::vector<CoRunSample>& samples, double alpha) {
  ContentionModel model;
  model.alpha_ = alpha;
  for (const CoRunSample& s : samples) {
    model.traffic_scale_ = std::max({model.traffic_scale_, s.victim_features.traffic, s.aggressor_features.traffic});
    model.compute_scale_ = std::max({model.compute_scale_, s.victim_features.compute, s.aggressor_features.compute});
  }
  std::map<std::pair<char, char>, std::pair<std::vector<std::vector<double>>, std::vector<double>>> rows;
  for (const CoRunSample& s : samples) {
    auto& [x, y] = rows[{s.victim_processor, s.aggressor_processor}];
    x.push_back(model.feature_row(s.victim_features, s.aggressor_features));
    y.push_back(s.slowdown());
  }
  // alpha > 0 keeps a pair with fewer samples than weights solvable; a tiny floor keeps alpha 0
  // solvable when only the intercept is determined.
  for (const auto& [pair, xy] : rows) model.weights_[pair] = ridge_fit(xy.first, xy.second, std::max(alpha, 1e-9), 1);
  return model;
}

bool ContentionModel::has_pair(char vp, char ap) const { return weights_.count({vp, ap}) != 0; }

double ContentionModel::predict(char vp, char ap, const ContentionFeatures& v, const ContentionFeatures& a) const {
  const std::vector<double>& w = weights_.at({vp, ap});
  const std::vector<double> x = feature_row(v, a);
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += w[i] * x[i];
  return s;
}

nlohmann::json ContentionModel::to_json() const {
  nlohmann::json pairs = nlohmann::json::array();
  for (const auto& [pair, w] : weights_) {
    pairs.push_back({{"victim", std::string(1, pair.first)}, {"aggressor", std::string(1, pair.second)}, {"weights", w}});
  }
  return {{"regression", "ridge"},
          {"features", {"1", "traffic_v", "traffic_a", "traffic_v*traffic_a", "compute_a"}},
          {"alpha", alpha_},
          {"traffic_scale", traffic_scale_},
          {"compute_scale", compute_scale_},
          {"pairs", pairs}};
}

ContentionModel ContentionModel::from_json(const nlohmann::json& j, const std::string& origin) {
  const auto need = [&](const nlohmann::json& o, const std::string& key, const std::string& where) -> const nlohmann::json& {
    if (!o.is_object() || !o.contains(key)) throw InputError(origin + ": " + where + " lacks key '" + key + "'");
    return o.at(key);
  };
  ContentionModel m;
  m.alpha_ = json_number(need(j, "alpha", "contention model"), origin + ": contention.alpha", 0, 1e9);
  m.traffic_scale_ = json_number(need(j, "traffic_scale", "contention model"), origin + ": contention.traffic_scale", 1e-12, 1e300);
  m.compute_scale_ = json_number(need(j, "compute_scale", "contention model"), origin + ": contention.compute_scale", 1e-12, 1e300);
  const nlohmann::json& pairs = need(j, "pairs", "contention model");
  if (!pairs.is_array()) throw InputError(origin + ": contention.pairs must be an array");
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string where = "contention.pairs[" + std::to_string(i) + "]";
    const nlohmann::json& v = need(pairs[i], "victim", where);
    const nlohmann::json& a = need(pairs[i], "aggressor", where);
    const nlohmann::json& w = need(pairs[i], "weights", where);
    if (!v.is_string() || v.get<std::string>().size() != 1 || !a.is_string() || a.get<std::string>().size() != 1) {
      throw InputError(origin + ": " + where + " victim and aggressor must be processor letters");
    }
    if (!w.is_array() || w.size() != 5) throw InputError(origin + ": " + where + ".weights must have 5 numbers");
    std::vector<double> weights;
    for (size_t k = 0; k < w.size(); ++k) {
      weights.push_back(json_number(w[k], origin + ": " + where + ".weights[" + std::to_string(k) + "]", -1e9, 1e9));
    }
    m.weights_[{v.get<std::string>()[0], a.get<std::string>()[0]}] = weights;
  }
  return m;
}

std::pair<std::vector<CoRunSample>, std::vector<CoRunSample>> split_held_out(const std::vector<CoRunSample>& samples,
                                                                             int hold_every) {
  // Co-runs per unordered processor pair, in the order they appear.
  std::map<std::pair<char, char>, std::vector<int>> coruns;
  std::set<int> seen;
  for (const CoRunSample& s : samples) {
    if (!seen.insert(s.corun).second) continue;
    const auto key = std::minmax(s.victim_processor, s.aggressor_processor);
    coruns[{key.first, key.second}].push_back(s.corun);
  }
  std::set<int> held;
  for (const auto& [pair, ids] : coruns) {
    for (size_t i = 1; i < ids.size(); i += static_cast<size_t>(std::max(1, hold_every))) held.insert(ids[i]);
  }
  std::pair<std::vector<CoRunSample>, std::vector<CoRunSample>> out;
  for (const CoRunSample& s : samples) (held.count(s.corun) ? out.second : out.first).push_back(s);
  return out;
}

namespace {

// Error of `predict` (nullopt: no prediction for that sample) over `held_out`.
template <typename Predict>
HeldOutError error_of(const std::vector<CoRunSample>& held_out, Predict predict) {
  HeldOutError e;
  double points = 0, time = 0;
  for (const CoRunSample& s : held_out) {
    if (s.solo_us <= 0 || s.corun_us <= 0) continue;
    const std::optional<double> p = predict(s);
    if (!p) continue;
    const double predicted = *p;
    const double err = std::abs(predicted - s.slowdown()) * 100;
    points += err;
    e.max_abs_points = std::max(e.max_abs_points, err);
    time += std::abs(s.solo_us * (1 + predicted) - s.corun_us) / s.corun_us * 100;
    ++e.samples;
  }
  if (e.samples > 0) {
    e.mean_abs_points = points / static_cast<double>(e.samples);
    e.mean_abs_time_pct = time / static_cast<double>(e.samples);
  }
  return e;
}

}  // namespace

HeldOutError held_out_error(const ContentionModel& model, const std::vector<CoRunSample>& held_out) {
  return error_of(held_out, [&](const CoRunSample& s) -> std::optional<double> {
    if (!model.has_pair(s.victim_processor, s.aggressor_processor)) return std::nullopt;
    return model.predict(s.victim_processor, s.aggressor_processor, s.victim_features, s.aggressor_features);
  });
}

std::map<std::pair<char, char>, double> pair_mean_slowdowns(const std::vector<CoRunSample>& samples) {
  std::map<std::pair<char, char>, std::pair<double, int>> sum;
  for (const CoRunSample& s : samples) {
    auto& [total, count] = sum[{s.victim_processor, s.aggressor_processor}];
    total += s.slowdown();
    ++count;
  }
  std::map<std::pair<char, char>, double> means;
  for (const auto& [pair, total_count] : sum) means[pair] = total_count.first / total_count.second;
  return means;
}

HeldOutError held_out_error_of_pair_mean(const std::vector<CoRunSample>& fitted,
                                         const std::vector<CoRunSample>& held_out) {
  const std::map<std::pair<char, char>, double> means = pair_mean_slowdowns(fitted);
  return error_of(held_out, [&](const CoRunSample& s) -> std::optional<double> {
    const auto it = means.find({s.victim_processor, s.aggressor_processor});
    if (it == means.end()) return std::nullopt;
    return it->second;
  });
}

nlohmann::json samples_to_json(const std::vector<CoRunSample>& samples) {
  nlohmann::json a = nlohmann::json::array();
  for (const CoRunSample& s : samples) {
    a.push_back({{"corun", s.corun},
                 {"victim", s.victim},
                 {"victim_processor", std::string(1, s.victim_processor)},
                 {"aggressor", s.aggressor},
                 {"aggressor_processor", std::string(1, s.aggressor_processor)},
                 {"victim_traffic", s.victim_features.traffic},
                 {"victim_compute", s.victim_features.compute},
                 {"aggressor_traffic", s.aggressor_features.traffic},
                 {"aggressor_compute", s.aggressor_features.compute},
                 {"solo_us", s.solo_us},
                 {"corun_us", s.corun_us}});
  }
  return a;
}

std::vector<CoRunSample> samples_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_array()) throw InputError(origin + ": co-run samples must be an array");
  std::vector<CoRunSample> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = origin + ": coruns[" + std::to_string(i) + "]";
    const nlohmann::json& o = j[i];
    const auto get = [&](const std::string& key) -> const nlohmann::json& {
      if (!o.is_object() || !o.contains(key)) throw InputError(where + " lacks key '" + key + "'");
      return o.at(key);
    };
    const auto letter = [&](const std::string& key) {
      const nlohmann::json& v = get(key);
      if (!v.is_string() || v.get<std::string>().size() != 1) throw InputError(where + "." + key + " must be one letter");
      return v.get<std::string>()[0];
    };
    const auto text = [&](const std::string& key) {
      const nlohmann::json& v = get(key);
      if (!v.is_string()) throw InputError(where + "." + key + " must be a string");
      return v.get<std::string>();
    };
    CoRunSample s;
    s.corun = static_cast<int>(json_integer(get("corun"), where + ".corun", 0, 1000000));
    s.victim = text("victim");
    s.aggressor = text("aggressor");
    s.victim_processor = letter("victim_processor");
    s.aggressor_processor = letter("aggressor_processor");
    s.victim_features = {json_number(get("victim_traffic"), where + ".victim_traffic", 0, 1e12),
                         json_number(get("victim_compute"), where + ".victim_compute", 0, 1e15)};
    s.aggressor_features = {json_number(get("aggressor_traffic"), where + ".aggressor_traffic", 0, 1e12),
                            json_number(get("aggressor_compute"), where + ".aggressor_compute", 0, 1e15)};
    s.solo_us = json_number(get("solo_us"), where + ".solo_us", 0, 1e12);
    s.corun_us = json_number(get("corun_us"), where + ".corun_us", 0, 1e12);
    out.push_back(s);
  }
  return out;
}

}  // namespace co_up::planner
