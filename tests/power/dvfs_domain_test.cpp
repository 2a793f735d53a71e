// DVFS domains of the detected host: each CPU processor gets exactly the cpufreq policies of its
// own cores; a policy shared by two processors is one domain — reported, set once, saved and
// restored once, and two different levels asked for it at once are an error naming both.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/platform.h"
#include "power/dvfs_schedule.h"
#include "power/frequency_plan.h"
#include "power/sysfs_dvfs.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::power {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using test::get;
using test::SimSysfs;

const char* const kFreqs = "800000 1600000 2400000";

// A 2-core host with one policy per core (any x86 host, several ARM SoCs).
void add_policy_per_core(SimSysfs& sim) {
  sim.add_policy(0, "0", true, kFreqs, "800000", "2400000");
  sim.add_policy(1, "1", true, kFreqs, "800000", "2400000");
}

// A 2-core host whose cores share one policy.
void add_shared_policy(SimSysfs& sim) { sim.add_policy(0, "0-1", true, kFreqs, "800000", "2400000"); }

DvfsSchedule resolve(const Platform& platform, const std::string& freq, const std::string& order,
                     bool pipeline) {
  std::string letters;
  std::vector<uint32_t> sg_of_layer;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || order[i] != order[i - 1]) letters += order[i];
    sg_of_layer.push_back(static_cast<uint32_t>(letters.size() - 1));
  }
  // Best effort: the detected host's G has no table, which {{l-b-g}} would otherwise refuse.
  return resolve_schedule(parse_frequency(freq, order, letters), platform, order, sg_of_layer,
                          pipeline, DvfsPolicy::kBestEffort, [](const std::string&) {});
}

std::string error_of(const Platform& platform, const std::string& freq, const std::string& order,
                     bool pipeline) {
  try {
    resolve(platform, freq, order, pipeline);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HostDvfsDomainTest, OnePolicyPerCoreGivesEachProcessorItsOwn) {
  SimSysfs sim("percore");
  add_policy_per_core(sim);
  const Platform p = detect_host_platform(sim.root());
  ASSERT_NE(p.find('B'), nullptr);
  ASSERT_NE(p.find('L'), nullptr);
  EXPECT_EQ(p.find('B')->cores, std::vector<int>{0});
  EXPECT_EQ(p.find('L')->cores, std::vector<int>{1});
  EXPECT_THAT(p.find('B')->dvfs.nodes, ElementsAre("devices/system/cpu/cpufreq/policy0"));
  EXPECT_THAT(p.find('L')->dvfs.nodes, ElementsAre("devices/system/cpu/cpufreq/policy1"));
  EXPECT_THAT(p.find('L')->dvfs.frequencies_khz, ElementsAre(800000, 1600000, 2400000));
  EXPECT_EQ(p.dvfs_domain('B'), "B");
  EXPECT_EQ(p.dvfs_domain('L'), "L");
  // Levels for B and L go to their own policies only.
  SysfsDvfs dvfs(p, sim.root());
  EXPECT_EQ(dvfs.set_level('B', 2), "");
  EXPECT_EQ(dvfs.set_level('L', 0), "");
  EXPECT_EQ(get(sim / "devices/system/cpu/cpufreq/policy0/scaling_setspeed"), "2400000");
  EXPECT_EQ(get(sim / "devices/system/cpu/cpufreq/policy1/scaling_setspeed"), "800000");
  EXPECT_EQ(resolve(p, "{{1-3-1}}", "BL", false).at_setup.size(), 2u);
}

TEST(HostDvfsDomainTest, FourCoresTwoPoliciesEach) {
  SimSysfs sim("quad");
  for (int c = 0; c < 4; ++c) sim.add_policy(c, std::to_string(c), true, kFreqs, "800000", "2400000");
  const Platform p = detect_host_platform(sim.root());
  EXPECT_THAT(p.find('B')->dvfs.nodes,
              ElementsAre("devices/system/cpu/cpufreq/policy0", "devices/system/cpu/cpufreq/policy1"));
  EXPECT_THAT(p.find('L')->dvfs.nodes,
              ElementsAre("devices/system/cpu/cpufreq/policy2", "devices/system/cpu/cpufreq/policy3"));
}

TEST(HostDvfsDomainTest, SharedPolicyIsOneDomainOfBoth) {
  SimSysfs sim("shared");
  add_shared_policy(sim);
  const Platform p = detect_host_platform(sim.root());
  EXPECT_EQ(p.find('B')->cores, std::vector<int>{0});
  EXPECT_EQ(p.find('L')->cores, std::vector<int>{1});
  EXPECT_THAT(p.find('B')->dvfs.nodes, ElementsAre("devices/system/cpu/cpufreq/policy0"));
  EXPECT_THAT(p.find('L')->dvfs.nodes, ElementsAre("devices/system/cpu/cpufreq/policy0"));
  EXPECT_EQ(p.dvfs_domain('B'), "BL");
  EXPECT_EQ(p.dvfs_domain('L'), "BL");
  EXPECT_EQ(p.dvfs_domain('G'), "");
}

TEST(HostDvfsDomainTest, SharedNodeIsSavedOnceAndRestoredExactly) {
  SimSysfs sim("sharednode");
  add_shared_policy(sim);
  const Platform p = detect_host_platform(sim.root());
  const std::string policy = "devices/system/cpu/cpufreq/policy0/";
  {
    SysfsDvfs dvfs(p, sim.root());
    EXPECT_EQ(dvfs.set_level('B', 2), "");
    EXPECT_EQ(dvfs.set_level('L', 1), "");  // same clock: B follows
    EXPECT_EQ(get(sim / (policy + "scaling_setspeed")), "1600000");
    EXPECT_EQ(dvfs.level('B'), 1);
    EXPECT_EQ(dvfs.level('L'), 1);
  }
  // Saved once, before the first write: the original governor, not B's "userspace".
  EXPECT_EQ(get(sim / (policy + "scaling_governor")), "schedutil");
}

TEST(HostDvfsDomainTest, DifferentLevelsForOneDomainAtOnceNameBoth) {
  SimSysfs sim("conflict");
  add_shared_policy(sim);
  const Platform p = detect_host_platform(sim.root());
  // Pipeline: both stages run at once.
  EXPECT_EQ(error_of(p, "{3-2}", "BL", true),
            "--frequency: 'B' and 'L' share one DVFS domain (cpufreq "
            "devices/system/cpu/cpufreq/policy0) but get different levels at once: 'B' level 3 "
            "(2400 MHz) from token 1 (sub-graph 0, 'B'), 'L' level 2 (1600 MHz) from token 2 "
            "(sub-graph 1, 'L'); give both the same level (use --mode=switch for per-layer DVFS)");
  // {{l-b-g}}: set together at setup.
  EXPECT_THAT(error_of(p, "{{1-3-1}}", "BL", false),
              HasSubstr("'L' and 'B' share one DVFS domain"));
  EXPECT_THAT(error_of(p, "{{1-3-1}}", "BL", false),
              HasSubstr("'L' level 1 (800 MHz) from {{l-b-g}} level 1, 'B' level 3 (2400 MHz)"));
  // The same level for both is one setting of the domain.
  const DvfsSchedule same = resolve(p, "{2-2}", "BL", true);
  ASSERT_EQ(same.at_setup.size(), 1u);
  EXPECT_EQ(same.at_setup[0].domain, 'B');
  EXPECT_EQ(same.at_setup[0].level, 1);
  EXPECT_EQ(resolve(p, "max", "BL", false).at_setup.size(), 1u);
  // Switch mode: one layer at a time, so B and L may differ; L's layers set the domain.
  const DvfsSchedule sw = resolve(p, "3-2", "BL", false);
  ASSERT_EQ(sw.per_layer.size(), 2u);
  ASSERT_EQ(sw.per_layer[1].size(), 1u);
  EXPECT_EQ(sw.per_layer[1][0].domain, 'B');
  EXPECT_EQ(sw.per_layer[1][0].level, 1);
}

}  // namespace
}  // namespace co_up::power
