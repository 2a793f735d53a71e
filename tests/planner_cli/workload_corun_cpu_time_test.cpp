// measure_corun (the co-runs of `co_up profile --workload`) compares a one-thread CPU cluster's
// frames by its processor thread's CPU time: waiting for a core is not a co-run slowdown. Here B
// and L are both pinned to core 0 (a platform the file parser refuses, built in memory; cpu-reference with one thread computes
// on the processor thread and, unlike cpu-xnnpack, does not refuse clusters sharing a core), so the
// two co-run threads take turns on one core: by wall time each network ran about twice as long
// beside the other (+100 %), by CPU time about as long as alone.
#include <gtest/gtest.h>

#include <cmath>

#include "cli/workload_profile_command.h"
#include "core/network.h"
#include "core/platform.h"
#include "core/plugin_registry.h"

namespace co_up::cli {
namespace {

TEST(WorkloadCoRunCpuTime, ThreadsSharingOneCoreAreNotASlowdown) {
  Platform platform = parse_platform(R"({"name": "one_core", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
      {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1]}]})",
                                     "test platform");
  platform.find('L')->cores = {0};
  const PluginRegistry plugins = PluginRegistry::load_directory(PluginRegistry::default_directory());
  // Frames of a few ms, longer than a scheduler time slice: sharing the core shows in wall time.
  const graph::Graph a = build_network({"squeezenet", "layers", 64, 1, ""});
  const graph::Graph b = build_network({"mobilenet", "layers", 64, 1, ""});
  CoRunParty pa{&a, seeded_inputs(a, 1), std::string(a.layer_count(), 'B')};
  CoRunParty pb{&b, seeded_inputs(b, 1), std::string(b.layer_count(), 'L')};
  pa.cpu_time = pb.cpu_time = true;
  const CoRunTimes t = measure_corun(pa, pb, platform, plugins, 9);
  for (int i = 0; i < 2; ++i) {
    const double slowdown = t.corun_us[i] / t.solo_us[i] - 1;
    EXPECT_LT(std::abs(slowdown), 0.35) << "party " << i << ": solo " << t.solo_us[i] << " us, co-run " << t.corun_us[i]
                                        << " us";
  }
}

}  // namespace
}  // namespace co_up::cli
