// DvfsSchedule: a parsed --frequency resolved against the platform's DVFS tables and the
// partition — which domain goes to which level, and when.
//
// A token sets only the domains it names: a CPU layer its cluster, a GPU layer ([g,h]) the GPU
// and its host cluster, an NPU/DSP layer its host cluster. Other clusters keep their level (they
// may be running another pipeline stage) — unlike ARM-CO-UP, which forces them to the minimum.
//   min / max / {{l-b-g}}   at setup
//   per sub-graph / layer   pipeline mode: at setup, and every layer that sets a domain must ask
//                           for the same level (else InputError); switch mode: at layer starts
//                           (per sub-graph tokens apply to every layer of their sub-graph)
// Processors that share a clock (Platform::dvfs_domain: one cpufreq policy for B and L) are one
// domain, named by its first letter, the level moved to that processor's table by frequency.
// Settings in force at once (at setup; one layer's in switch mode) that give one domain two
// levels are an InputError naming both processors, levels and tokens.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/platform.h"
#include "power/frequency_plan.h"
#include "power/sysfs_dvfs.h"

namespace co_up::power {

struct DvfsSetting {
  char domain = 0;
  int level = 0;
};

struct DvfsSchedule {
  std::vector<DvfsSetting> at_setup;
  std::vector<std::vector<DvfsSetting>> per_layer;  // empty: nothing changes during the run
  bool empty() const { return at_setup.empty() && per_layer.empty(); }
};

// `subgraph_of_layer[i]` is the sub-graph running layer i. A level outside a domain's table is an
// InputError naming the token and the valid range. A processor without a DVFS table: InputError
// under kStrict; under kBestEffort one `warn` and its settings are dropped.
DvfsSchedule resolve_schedule(const FrequencyPlan& plan, const Platform& platform,
                              const std::string& order,
                              const std::vector<uint32_t>& subgraph_of_layer, bool pipeline,
                              DvfsPolicy policy,
                              const std::function<void(const std::string&)>& warn);

}  // namespace co_up::power
