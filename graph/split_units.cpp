#include "graph/split_units.h"

namespace co_up::graph {
namespace {

// "inception_3a/3x3#2" -> {"inception_3a/3x3", 2}; part 0 when the name has no "#k" suffix.
std::pair<std::string, uint32_t> split_part(const std::string& name) {
  const size_t hash = name.rfind('#');
  if (hash == std::string::npos || hash + 1 >= name.size() || name.size() - hash > 6 ||
      name.find_first_not_of("0123456789", hash + 1) != std::string::npos) {
    return {name, 0};
  }
  return {name.substr(0, hash), static_cast<uint32_t>(std::stoul(name.substr(hash + 1)))};
}

}  // namespace

std::vector<SplitUnitGroup> find_split_units(const std::vector<std::string>& unit_names) {
  std::vector<SplitUnitGroup> runs;
  for (uint32_t u = 0; u < unit_names.size(); ++u) {
    const auto [name, part] = split_part(unit_names[u]);
    if (part == 1) {
      runs.push_back({name, u, 1, false});
    } else if (part >= 2 && !runs.empty() && runs.back().layer == name && runs.back().first + runs.back().parts == u &&
               runs.back().parts + 1 == part) {
      ++runs.back().parts;
    }
  }
  std::vector<SplitUnitGroup> groups;
  for (SplitUnitGroup& g : runs) {
    if (g.parts < 2) continue;
    const uint32_t after = g.first + g.parts;
    g.concat_unit = after < unit_names.size() && unit_names[after] == g.layer + "#concat";
    groups.push_back(std::move(g));
  }
  return groups;
}

std::vector<bool> split_subgraph_starts(const std::vector<SplitUnitGroup>& groups, const std::string& order) {
  std::vector<bool> starts(order.size(), false);
  for (const SplitUnitGroup& g : groups) {
    const uint32_t units = g.parts + (g.concat_unit ? 1u : 0u);
    if (g.first + units > order.size()) continue;
    const std::string parts = order.substr(g.first, g.parts);
    if (parts.find_first_not_of(parts[0]) == std::string::npos) continue;
    for (uint32_t i = 0; i < units; ++i) starts[g.first + i] = true;
  }
  return starts;
}

}  // namespace co_up::graph
