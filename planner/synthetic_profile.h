// Synthetic layer profiles for the planner's tests and benchmark: random but reproducible times
// for a chain of layers on up to four processors B, L, G, N shaped like a big.LITTLE SoC.
#pragma once

#include <cstdint>

#include "planner/layer_profile.h"

namespace co_up::planner {

struct SyntheticSpec {
  uint32_t layers = 8;
  uint32_t processors = 3;      // the first of B, L, G, N
  uint32_t levels = 0;          // DVFS table size per domain; 0: no tables, level 0 measured only
  uint64_t seed = 1;
  bool shared_hosts = true;     // G hosted on B's core and N on L's (one resource each pair)
  bool transfers = true;        // measured transfers between every pair (else none: cost 0)
  bool power = false;           // power_w at every measured level
  double handoff_us = 0;        // > 0: each pair's hand-off, uniform in [0.5, 1.5] x this
  std::string graph = "synthetic";
};

// Times at table levels follow 1/f exactly, so higher levels are always faster.
LayerProfile make_synthetic_profile(const SyntheticSpec& spec);

}  // namespace co_up::planner
