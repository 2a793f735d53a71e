// --frequency: DVFS levels as ARM-CO-UP writes them, parsed and checked against an order.
//
//   a-b-c-...      one token per layer
//   {a-b-...}      one token per sub-graph
//   {{l-b-g}}      one setting for the whole run: LITTLE, big and GPU levels
//   min | max      every processor at its lowest / highest level
// A token is a level index, except on a GPU layer (letter G), where it is "[g,h]": the GPU's level
// and the level of its host CPU cluster. An NPU layer's token is its host CPU's level. Example
// from the paper: --order=BBLGGNNN --frequency=7-4-6-[3,2]-[4,4]-1-1-1.
//
// This parses and validates the syntax and the token count; checking indices against frequency
// tables and applying them is the power manager's job.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace co_up::power {

struct FrequencyToken {
  int level = 0;
  std::optional<int> host_level;  // GPU tokens only: [level, host_level]
};

struct FrequencyPlan {
  enum class Scope { kNone, kMin, kMax, kPerLayer, kPerSubGraph, kWholeRun };
  Scope scope = Scope::kNone;
  std::vector<FrequencyToken> tokens;  // kWholeRun: exactly {LITTLE, big, GPU}
};

// `order` is the expanded order string; `subgraph_letters` has one letter per sub-graph.
// Throws InputError saying where the string is malformed and what was expected.
FrequencyPlan parse_frequency(const std::string& text, const std::string& order,
                              const std::string& subgraph_letters);

}  // namespace co_up::power
