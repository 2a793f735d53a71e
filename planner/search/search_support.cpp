#include "planner/search/search_support.h"

#include <set>

#include "core/error.h"
#include "graph/split_units.h"

namespace co_up::planner {

std::vector<int> resolve_levels(const CostModel& model, std::vector<int> levels) {
  if (levels.empty()) return model.fastest_levels();
  if (levels.size() != model.domains().size()) {
    throw InputError("search levels: " + std::to_string(levels.size()) + " given for " +
                     std::to_string(model.domains().size()) + " DVFS domains");
  }
  return levels;
}

Candidate make_candidate(const CostModel& model, Mapping mapping, std::string source) {
  Candidate c;
  c.mapping = model.normalized(std::move(mapping));
  c.prediction = model.predict(c.mapping);
  c.source = std::move(source);
  return c;
}

bool better(const Prediction& a, const Prediction& b, Mode mode) {
  constexpr double kRel = 1e-12;
  const double a1 = mode == Mode::kPipeline ? a.period_us : a.latency_ms;
  const double b1 = mode == Mode::kPipeline ? b.period_us : b.latency_ms;
  if (a1 < b1 * (1 - kRel)) return true;
  if (a1 > b1 * (1 + kRel)) return false;
  const double a2 = mode == Mode::kPipeline ? a.latency_ms : a.period_us;
  const double b2 = mode == Mode::kPipeline ? b.latency_ms : b.period_us;
  return a2 < b2 * (1 - kRel);
}

bool worth_more_subgraphs(const Prediction& more, const Prediction& fewer, double margin) {
  return more.throughput_fps > fewer.throughput_fps * (1 + margin);
}

std::string genome_key(const Mapping& m) {
  std::string key = m.order;
  for (int l : m.levels) key += "," + std::to_string(l);
  return key;
}

size_t subgraph_count(const std::string& order) {
  size_t runs = 0;
  for (size_t i = 0; i < order.size(); ++i) runs += i == 0 || order[i] != order[i - 1] ? 1 : 0;
  return runs;
}

size_t subgraph_count(const CostModel& model, const std::string& order) {
  const std::vector<ProfileLayer>& layers = model.profile().network.layers;
  if (layers.size() != order.size()) return subgraph_count(order);
  std::vector<std::string> names;
  names.reserve(layers.size());
  for (const ProfileLayer& l : layers) names.push_back(l.name);
  const std::vector<bool> starts = graph::split_subgraph_starts(graph::find_split_units(names), order);
  size_t count = 0;
  for (size_t i = 0; i < order.size(); ++i) count += i == 0 || order[i] != order[i - 1] || starts[i] ? 1 : 0;
  return count;
}

bool is_contiguous(const std::string& order) {
  std::set<char> done;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && order[i] != order[i - 1]) {
      if (!done.insert(order[i - 1]).second) return false;
      if (done.count(order[i])) return false;
    }
  }
  return true;
}

}  // namespace co_up::planner
