#include "core/exit_policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

#include "core/error.h"

namespace co_up {
namespace {

constexpr const char* kForms =
    "use softmax-max>=T, entropy<=T, a threshold per exit such as softmax-max>=0.8,0.9, or none; "
    "T in [0,1] or off";

std::string format_threshold(double t) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", t);
  return text;
}

// Softmax of `values` unless they already are a distribution (non-negative, summing to 1).
std::vector<double> probabilities(std::span<const float> values) {
  std::vector<double> p(values.begin(), values.end());
  double sum = 0;
  bool negative = false;
  for (double v : p) {
    sum += v;
    negative = negative || v < 0;
  }
  if (!negative && std::abs(sum - 1.0) <= 1e-3) return p;
  const double top = p.empty() ? 0 : *std::max_element(p.begin(), p.end());
  sum = 0;
  for (double& v : p) {
    v = std::exp(v - top);
    sum += v;
  }
  for (double& v : p) v /= sum;
  return p;
}

}  // namespace

ExitPolicy ExitPolicy::parse(const std::string& spec) {
  const std::string quoted = "--exit='" + spec + "'";
  ExitPolicy policy;
  if (spec == "none") return policy;
  struct Form {
    const char* name;
    const char* op;
    Criterion criterion;
  };
  static constexpr Form kKnown[] = {{"softmax-max", ">=", Criterion::kSoftmaxMax},
                                    {"entropy", "<=", Criterion::kEntropy}};
  const Form* form = nullptr;
  for (const Form& f : kKnown) {
    const std::string name = f.name;
    if (spec.rfind(name, 0) != 0) continue;
    const std::string rest = spec.substr(name.size());
    if (rest.rfind(f.op, 0) != 0) {
      throw InputError(quoted + ": " + name + " takes " + f.op + " (" + name + f.op + "T, T in [0,1])");
    }
    form = &f;
  }
  if (form == nullptr) throw InputError(quoted + " is not an exit policy (" + kForms + ")");
  policy.criterion_ = form->criterion;
  const std::string list = spec.substr(std::string(form->name).size() + 2);
  size_t begin = 0;
  while (true) {
    const size_t comma = list.find(',', begin);
    const size_t length = comma == std::string::npos ? std::string::npos : comma - begin;
    const std::string item = list.substr(begin, length);
    if (item == "off") {  // this exit never stops a frame (a plan that keeps only later exits)
      policy.thresholds_.push_back(std::numeric_limits<double>::quiet_NaN());
      if (comma == std::string::npos) break;
      begin = comma + 1;
      continue;
    }
    double value = 0;
    const char* end = item.data() + item.size();
    const auto [ptr, ec] = std::from_chars(item.data(), end, value);
    if (item.empty() || ec != std::errc() || ptr != end) {
      throw InputError(quoted + ": '" + item + "' is not a number (each threshold is in [0,1], or off)");
    }
    if (!(value >= 0.0 && value <= 1.0)) {
      throw InputError(quoted + ": threshold " + item + " is outside [0,1]");
    }
    policy.thresholds_.push_back(value);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return policy;
}

void ExitPolicy::check_exit_count(size_t exit_count, const std::string& network) const {
  if (never_stops()) return;
  if (exit_count < 2) {
    throw InputError("--exit='" + describe() + "' needs a network with exits, but " + network +
                     " has none (exits are graph outputs named exit0, exit1, ... or listed in "
                     "<model>.exits.json; see docs/early_exits.md)");
  }
  if (thresholds_.size() != 1 && thresholds_.size() != exit_count - 1) {
    throw InputError("--exit='" + describe() + "' gives " + std::to_string(thresholds_.size()) +
                     " thresholds but " + network + " has " + std::to_string(exit_count) +
                     " exits: give one threshold, or one per exit before the final (" +
                     std::to_string(exit_count - 1) + ")");
  }
}

double ExitPolicy::score(std::span<const float> values) const {
  const std::vector<double> p = probabilities(values);
  if (criterion_ == Criterion::kEntropy) {
    if (p.size() < 2) return 0;
    double h = 0;
    for (double v : p) {
      if (v > 0) h -= v * std::log(v);
    }
    return std::clamp(h / std::log(static_cast<double>(p.size())), 0.0, 1.0);
  }
  return p.empty() ? 0 : *std::max_element(p.begin(), p.end());
}

bool ExitPolicy::stops(uint32_t exit, std::span<const float> values) const {
  if (never_stops()) return false;
  const double t = thresholds_.size() == 1 ? thresholds_[0] : thresholds_.at(exit);
  if (std::isnan(t)) return false;
  const double s = score(values);
  return criterion_ == Criterion::kEntropy ? s <= t : s >= t;
}

std::string ExitPolicy::describe() const {
  if (never_stops()) return "none";
  std::string text = criterion_ == Criterion::kEntropy ? "entropy<=" : "softmax-max>=";
  for (size_t i = 0; i < thresholds_.size(); ++i) {
    if (i > 0) text += ',';
    text += std::isnan(thresholds_[i]) ? std::string("off") : format_threshold(thresholds_[i]);
  }
  return text;
}

}  // namespace co_up
