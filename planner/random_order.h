// Seeded random mappings for measuring a cost model on orders it was not fitted on (the planner
// accuracy bench and its unit test draw their held-out orders here, so both test the same kind),
// and for `co_up profile` to measure orders like those users and the planner run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/parallel_regions.h"

namespace co_up::planner {

// One order of `layers` letters in 3 to 6 contiguous runs (fewer where there are fewer layers),
// cut at distinct random positions, each run a random letter of `letters` other than the run
// before it. Throws std::invalid_argument unless layers >= 2 and `letters` has at least two
// distinct letters (no such order exists otherwise). Draws from `rng` only.
inline std::string random_order(uint32_t layers, const std::string& letters, std::mt19937_64& rng) {
  if (layers < 2) {
    throw std::invalid_argument("random_order: needs at least 2 layers to cut, got " + std::to_string(layers));
  }
  if (letters.find_first_not_of(letters.empty() ? ' ' : letters[0]) == std::string::npos) {
    throw std::invalid_argument("random_order: needs at least two distinct processor letters, got '" + letters + "'");
  }
  const uint32_t segments = std::min<uint32_t>(layers, 3 + static_cast<uint32_t>(rng() % 4));
  std::vector<uint32_t> cuts;  // distinct cut positions in 1..layers-1
  while (cuts.size() + 1 < segments) {
    const uint32_t c = 1 + static_cast<uint32_t>(rng() % (layers - 1));
    if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.push_back(layers);
  std::string order;
  char previous = 0;
  for (const uint32_t end : cuts) {
    char letter;
    do letter = letters[rng() % letters.size()]; while (letter == previous);
    order.append(end - order.size(), letter);
    previous = letter;
  }
  return order;
}

// An order like those users and the planner run on a network with parallel regions: random_order's
// 3 to 6 contiguous runs, then, with probability 1/2 per region (`regions` over the same units,
// graph::find_unit_regions), each branch of it given a random letter of `letters`: many
// sub-graphs, branches interleaving. (co_up_bench_para_pipe's held-out mappings start from one
// processor or two contiguous stages instead.) Throws as random_order; draws from `rng` only.
inline std::string random_branch_order(uint32_t layers, const std::string& letters,
                                       const std::vector<graph::DagRegion>& regions, std::mt19937_64& rng) {
  std::string order = random_order(layers, letters, rng);
  for (const graph::DagRegion& r : regions) {
    if (rng() % 2 != 0) continue;
    for (const std::vector<uint32_t>& branch : r.branches) {
      const char c = letters[rng() % letters.size()];
      for (uint32_t u : branch) {
        if (u < layers) order[u] = c;
      }
    }
  }
  return order;
}

}  // namespace co_up::planner
