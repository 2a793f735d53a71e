#include "planner/split_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "planner/search/search_support.h"

namespace co_up::planner {
std::vector<SplitGroup> split_groups(const CostModel& model) {
  std::vector<std::string> names;
  for (const ProfileLayer& l : model.profile().network.layers) names.push_back(l.name);
  if (names.size() != model.layer_count()) return {};
  return graph::find_split_units(names);
}

namespace {
uint32_t group_units(const SplitGroup& g) { return g.parts + (g.concat_unit ? 1u : 0u); }
}  // namespace

double split_choice_count(const SplitGroup& g, size_t letters) {
  return std::pow(static_cast<double>(letters), static_cast<double>(group_units(g)));
}

std::string apply_split_choice(std::string order, const SplitGroup& g, size_t choice, const std::string& letters) {
  const size_t n = letters.size();
  for (uint32_t i = 0; i < group_units(g); ++i) {
    order.at(g.first + i) = letters[choice % n];
    choice /= n;
  }
  return order;
}

SplitPlanResult plan_splits(const DagCostModel& model, const std::string& base, const SplitPlanOptions& options) {
  const CostModel& cost = model.model();
  const std::string& letters = cost.letters();
  if (base.size() != cost.layer_count() ||
      base.find_first_not_of(letters) != std::string::npos) {
    throw InputError("split plan: the start order '" + base + "' needs one of the letters " + letters +
                     " per layer unit (" + std::to_string(cost.layer_count()) + ")");
  }
  const std::vector<int> levels = options.levels.empty() ? cost.fastest_levels() : options.levels;
  const std::vector<SplitGroup> groups = split_groups(cost);
  SplitPlanResult result;
  auto score = [&](const std::string& order) {
    ++result.evaluated;
    const Mapping m{order, options.mode, levels};
    if (!cost.runs(order)) return kInf;
    return options.mode == Mode::kSwitch ? model.switch_latency_us(m) : model.pipeline_period_us(m);
  };
  std::string best = base;
  double best_score = score(base);

  double space = 1;
  for (const SplitGroup& g : groups) space *= split_choice_count(g, letters.size());
  if (!groups.empty() && space <= options.exhaustive_limit) {
    result.exact = true;
    // Every count is at most exhaustive_limit here, so it fits a size_t.
    std::vector<size_t> counts;
    for (const SplitGroup& g : groups) counts.push_back(static_cast<size_t>(split_choice_count(g, letters.size())));
    std::vector<size_t> digit(groups.size(), 0);
    while (true) {
      std::string order = base;
      for (size_t g = 0; g < groups.size(); ++g) order = apply_split_choice(order, groups[g], digit[g], letters);
      const double s = score(order);
      if (s < best_score) {
        best_score = s;
        best = order;
      }
      size_t g = groups.size();
      while (g > 0 && ++digit[g - 1] == counts[g - 1]) digit[--g] = 0;
      if (g == 0) break;
    }
  } else if (!groups.empty()) {
    // Largest groups first: they gain most from spreading and decide the others' best choice.
    std::vector<double> fastest(groups.size(), 0);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (uint32_t i = 0; i < groups[g].parts; ++i) {
        double t = kInf;
        for (size_t p = 0; p < letters.size(); ++p) t = std::min(t, cost.layer_us(groups[g].first + i, p, levels));
        fastest[g] += t;
      }
    }
    std::vector<size_t> by_time(groups.size());
    std::iota(by_time.begin(), by_time.end(), 0);
    std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) { return fastest[a] > fastest[b]; });
    for (int pass = 0; pass < options.max_passes; ++pass) {
      bool changed = false;
      auto consider = [&](const std::string& order) {
        if (order == best) return;
        const double s = score(order);
        if (s < best_score) {
          best_score = s;
          best = order;
          changed = true;
        }
      };
      for (size_t g : by_time) {
        const double choices = split_choice_count(groups[g], letters.size());
        if (choices <= options.group_choice_limit) {
          for (size_t c = 0; c < static_cast<size_t>(choices); ++c) consider(apply_split_choice(best, groups[g], c, letters));
        } else {
          // Too many assignments to list (a layer cut into many parts): one unit at a time.
          for (uint32_t i = 0; i < group_units(groups[g]); ++i) {
            for (char letter : letters) {
              std::string order = best;
              order[groups[g].first + i] = letter;
              consider(order);
            }
          }
        }
      }
      if (!changed) break;
    }
  }
  for (const SplitGroup& g : groups) {
    const std::string parts = best.substr(g.first, g.parts);
    if (parts.find_first_not_of(parts[0]) != std::string::npos) ++result.spread_groups;
  }
  result.best.mapping = Mapping{best, options.mode, levels};
  result.best.prediction = model.predict(result.best.mapping);
  result.best.source = result.exact ? "split-exact" : "split-descent";
  return result;
}

}  // namespace co_up::planner
