// Shared helpers for runtime tests: the plugins of this build and this host's platform.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/mapping.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"

namespace co_up::testing {

inline const PluginRegistry& build_plugins() {
  static const PluginRegistry registry = [] {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    return PluginRegistry::load_directory(dir != nullptr ? dir : "plugins");
  }();
  return registry;
}

// Whether this build has cpu-xnnpack (libxnnpack-dev present when it was configured).
inline bool have_xnnpack() { return build_plugins().find("cpu-xnnpack") != nullptr; }

// B = first half of the cores, L = second half (core 0 / core 1 on a 2-core machine).
inline Platform host_platform() { return detect_host_platform("/nonexistent-sysfs"); }

// An executor of `g` in `order` on this host whose run records sub-graph and transfer events
// (profile level 1), in `mode`, with boundaries shared in place or copied.
inline Executor profiled_executor(const graph::Graph& g, const std::string& order, Mode mode,
                                  bool share_boundaries) {
  ExecutorOptions options;
  options.mode = mode;
  options.profile_level = 1;
  options.share_boundaries = share_boundaries;
  return Executor(g, Partition::create(g, order), host_platform(), build_plugins(), options);
}

// `count` input sets for `g` (one vector per graph input), uniform in [-1, 1) from `seed`: frames
// whose outputs differ, so that a lost, repeated or reordered frame shows.
inline std::vector<std::vector<std::vector<float>>> distinct_inputs(const graph::Graph& g, size_t count,
                                                                    uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<std::vector<std::vector<float>>> sets;
  for (size_t s = 0; s < count; ++s) {
    std::vector<std::vector<float>> set;
    for (graph::TensorId t : g.inputs()) {
      std::vector<float> v(static_cast<size_t>(g.tensor(t).desc.element_count()));
      for (float& x : v) x = dist(rng);
      set.push_back(std::move(v));
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace co_up::testing
