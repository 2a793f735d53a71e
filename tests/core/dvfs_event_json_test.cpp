// A DVFS event in the profile JSON: one writer for the single-network and the workload profile,
// so both write the same fields the same way.
#include <gtest/gtest.h>

#include <cstdint>

#include "profiler/report.h"
#include "profiler/workload_report.h"

namespace co_up::profiler {
namespace {

DvfsEvent setup_event() {
  DvfsEvent d;
  d.processor = 'B';
  d.level = 2;
  d.khz = 1200000;
  d.layer = UINT32_MAX;
  d.issue_ns = 10;
  d.apply_ns = 20;
  return d;
}

TEST(DvfsEventJson, WritesLevelsOneBasedAndSetupAsALayerName) {
  const nlohmann::json j = dvfs_event_to_json(setup_event());
  EXPECT_EQ(j, nlohmann::json::parse(R"({"processor":"B","level":3,"khz":1200000,"frame":0,"issue_ns":10,
                                         "apply_ns":20,"superseded":false,"layer":"setup"})"));
  DvfsEvent failed = setup_event();
  failed.layer = 4;
  failed.frame = 7;
  failed.error = "cannot write scaling_setspeed";
  const nlohmann::json f = dvfs_event_to_json(failed);
  EXPECT_EQ(f["layer"], 4);
  EXPECT_EQ(f["frame"], 7);
  EXPECT_EQ(f["error"], "cannot write scaling_setspeed");
}

TEST(DvfsEventJson, TheWorkloadProfileWritesItsSetupLevelsTheSameWay) {
  WorkloadProfile w;
  w.mode = "pipeline";
  w.dvfs = {setup_event()};
  const nlohmann::json j = workload_to_json(w);
  ASSERT_TRUE(j.contains("dvfs")) << j.dump();
  ASSERT_EQ(j["dvfs"].size(), 1u);
  EXPECT_EQ(j["dvfs"][0], dvfs_event_to_json(setup_event()));
}

}  // namespace
}  // namespace co_up::profiler
