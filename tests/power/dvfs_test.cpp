// DVFS through a simulated sysfs tree: every write (file, value, order), the restore, error
// messages, schedule resolution, and the per-layer worker (one request per change, never blocks).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "core/platform.h"
#include "power/dvfs_schedule.h"
#include "power/dvfs_worker.h"
#include "power/frequency_plan.h"
#include "power/sysfs_dvfs.h"
#include "profiler/events.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::power {
namespace {

using ::testing::HasSubstr;
using test::get;
using test::SimSysfs;

Platform sim_platform(const SimSysfs& sim) { return parse_platform(sim.platform_json(), "sim"); }

std::vector<std::pair<std::string, std::string>> relative_writes(const SysfsDvfs& d, const SimSysfs& sim) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const SysfsWrite& w : d.writes()) {
    out.emplace_back(std::filesystem::path(w.path).lexically_relative(sim.root()).string(), w.value);
  }
  return out;
}

TEST(SysfsDvfsTest, UserspaceGovernorClampAndDevfreqWritesThenRestore) {
  SimSysfs sim("dvfs");
  sim.add_standard();
  const Platform platform = sim_platform(sim);
  const std::string p0 = "devices/system/cpu/cpufreq/policy0/";
  const std::string p1 = "devices/system/cpu/cpufreq/policy1/";
  const std::string g = "class/devfreq/gpu/";
  {
    SysfsDvfs dvfs(platform, sim.root());
    EXPECT_EQ(dvfs.set_level('B', 2), "");
    EXPECT_EQ(get(sim / (p0 + "scaling_governor")), "userspace");
    EXPECT_EQ(get(sim / (p0 + "scaling_setspeed")), "1200000");
    EXPECT_EQ(dvfs.set_level('L', 1), "");  // going down: min first, then max
    EXPECT_EQ(dvfs.set_level('L', 2), "");  // going up: max first, then min
    EXPECT_EQ(dvfs.set_level('G', 0), "");  // devfreq in Hz
    EXPECT_EQ(get(sim / (g + "userspace/set_freq")), "200000000");
    EXPECT_EQ(dvfs.level('B'), 2);
    using W = std::pair<std::string, std::string>;
    EXPECT_THAT(relative_writes(dvfs, sim),
                ::testing::ElementsAre(W{p0 + "scaling_governor", "userspace"},
                                       W{p0 + "scaling_setspeed", "1200000"},
                                       W{p1 + "scaling_max_freq", "600000"},
                                       W{p1 + "scaling_min_freq", "600000"},
                                       W{p1 + "scaling_max_freq", "1008000"},
                                       W{p1 + "scaling_min_freq", "1008000"},
                                       W{g + "governor", "userspace"},
                                       W{g + "userspace/set_freq", "200000000"}));
  }
  // Restored in reverse order of first use.
  EXPECT_EQ(get(sim / (p0 + "scaling_governor")), "schedutil");
  EXPECT_EQ(get(sim / (p1 + "scaling_min_freq")), "408000");
  EXPECT_EQ(get(sim / (p1 + "scaling_max_freq")), "1008000");
  EXPECT_EQ(get(sim / (g + "governor")), "simple_ondemand");
}

TEST(SysfsDvfsTest, RestoreOrderIsReverseOfFirstUse) {
  SimSysfs sim("dvfs");
  sim.add_standard();
  const Platform platform = sim_platform(sim);
  SysfsDvfs dvfs(platform, sim.root());
  ASSERT_EQ(dvfs.set_level('G', 1), "");
  ASSERT_EQ(dvfs.set_level('B', 0), "");
  const size_t before = dvfs.writes().size();
  EXPECT_TRUE(dvfs.restore().empty());
  const auto all = relative_writes(dvfs, sim);
  ASSERT_EQ(all.size(), before + 2);
  EXPECT_EQ(all[before].first, "devices/system/cpu/cpufreq/policy0/scaling_governor");
  EXPECT_EQ(all[before + 1].first, "class/devfreq/gpu/governor");
  EXPECT_TRUE(dvfs.restore().empty());  // idempotent: nothing more written
  EXPECT_EQ(dvfs.writes().size(), before + 2);
}

TEST(SysfsDvfsTest, UnwritableNodeIsAClearError) {
  SimSysfs sim("dvfs");
  sim.add_standard();
  sim.make_unwritable("devices/system/cpu/cpufreq/policy0/scaling_setspeed");
  SysfsDvfs dvfs(sim_platform(sim), sim.root());
  const std::string error = dvfs.set_level('B', 1);
  EXPECT_THAT(error, HasSubstr("failed to write 816000 to "));
  EXPECT_THAT(error, HasSubstr("policy0/scaling_setspeed: EISDIR"));
  dvfs.restore();
  EXPECT_EQ(get(sim / "devices/system/cpu/cpufreq/policy0/scaling_governor"), "schedutil");
}

TEST(SysfsDvfsTest, MissingNodeIsAClearError) {
  SimSysfs sim("dvfs");  // empty tree
  SysfsDvfs dvfs(sim_platform(sim), sim.root());
  EXPECT_THAT(dvfs.set_level('L', 0), HasSubstr("does not exist (check \"dvfs\".\"node\""));
}

// A level past the table is named as users count levels (from 1), with the range it has.
TEST(SysfsDvfsTest, LevelOutOfRangeIsNamedFromOne) {
  SimSysfs sim("dvfs");
  sim.add_standard();
  SysfsDvfs dvfs(sim_platform(sim), sim.root());
  EXPECT_EQ(dvfs.set_level('L', 3), "no DVFS level 4 for 'L' (it has levels 1..3)");
  EXPECT_EQ(dvfs.set_level('Q', 0), "no DVFS level 1 for 'Q' (it has no DVFS levels)");
  EXPECT_TRUE(dvfs.writes().empty());
}

DvfsSchedule resolve(const std::string& freq, const std::string& order, bool pipeline,
                     DvfsPolicy policy = DvfsPolicy::kStrict, std::vector<std::string>* warnings = nullptr) {
  SimSysfs sim("sched");
  const Platform platform = sim_platform(sim);
  std::string letters;
  std::vector<uint32_t> sg_of_layer;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || order[i] != order[i - 1]) letters += order[i];
    sg_of_layer.push_back(static_cast<uint32_t>(letters.size() - 1));
  }
  return resolve_schedule(parse_frequency(freq, order, letters), platform, order, sg_of_layer, pipeline,
                          policy, [&](const std::string& w) {
                            if (warnings) warnings->push_back(w);
                          });
}

TEST(DvfsScheduleTest, TokensSetOnlyTheDomainsTheyName) {
  const DvfsSchedule s = resolve("4-2-3-[2,1]-3", "BBLGN", false);
  ASSERT_EQ(s.per_layer.size(), 5u);
  EXPECT_TRUE(s.at_setup.empty());
  ASSERT_EQ(s.per_layer[3].size(), 2u);  // GPU and its host B
  EXPECT_EQ(s.per_layer[3][0].domain, 'G');
  EXPECT_EQ(s.per_layer[3][1].domain, 'B');
  EXPECT_EQ(s.per_layer[3][1].level, 0);
  ASSERT_EQ(s.per_layer[4].size(), 1u);  // NPU: its host L only
  EXPECT_EQ(s.per_layer[4][0].domain, 'L');
}

TEST(DvfsScheduleTest, PipelineModeSetsOnceAndChecksAgreement) {
  const DvfsSchedule s = resolve("{4-2}", "BBL", true);
  EXPECT_TRUE(s.per_layer.empty());
  ASSERT_EQ(s.at_setup.size(), 2u);
  try {
    resolve("4-3-2", "BBL", true);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("in pipeline mode a processor runs at one level, but 'B' gets level 4"));
    EXPECT_THAT(e.what(), HasSubstr("--mode=switch"));
  }
  // A GPU's host level must agree with the host's own layers too.
  EXPECT_THROW(resolve("4-[2,3]", "BG", true), InputError);
  EXPECT_NO_THROW(resolve("3-[2,3]", "BG", true));
}

TEST(DvfsScheduleTest, OutOfRangeAndMissingTables) {
  try {
    resolve("5-2", "BL", false);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("token 1 (layer 0, 'B') asks level 5 for 'B'"));
    EXPECT_THAT(e.what(), HasSubstr("levels 1..4, 408..1800 MHz"));
  }
  EXPECT_THROW(resolve("{{4-1-1}}", "BL", false), InputError);  // L has levels 1..3
  const DvfsSchedule whole = resolve("{{3-4-2}}", "BL", false);
  ASSERT_EQ(whole.at_setup.size(), 3u);
  EXPECT_EQ(resolve("max", "BL", false).at_setup.size(), 3u);
}

TEST(DvfsScheduleTest, NoTableStrictFailsBestEffortWarnsOnce) {
  SimSysfs sim("sched");
  Platform platform = sim_platform(sim);
  platform.find('L')->dvfs = {};
  const auto plan = parse_frequency("2-2-2", "LLB", "LB");
  EXPECT_THROW(resolve_schedule(plan, platform, "LLB", {0, 0, 1}, false, DvfsPolicy::kStrict, {}), InputError);
  std::vector<std::string> warnings;
  const DvfsSchedule s = resolve_schedule(plan, platform, "LLB", {0, 0, 1}, false, DvfsPolicy::kBestEffort,
                                          [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("declares no DVFS table for it"));
  EXPECT_TRUE(s.per_layer[0].empty());
  EXPECT_EQ(s.per_layer[2].size(), 1u);
}

TEST(DvfsWorkerTest, OneRequestPerLevelChangeAppliedInOrder) {
  SimSysfs sim("worker");
  sim.add_standard();
  const Platform platform = sim_platform(sim);
  SysfsDvfs dvfs(platform, sim.root());
  DvfsWorker worker(dvfs, nullptr);
  // Switch mode, order BBLB with levels 3-3-1-0: B changes at layers 0 and 3, L at layer 2.
  DvfsObserver observer({{{'B', 3}}, {{'B', 3}}, {{'L', 1}}, {{'B', 0}}}, worker);
  for (uint64_t frame = 0; frame < 3; ++frame) {
    const char procs[] = "BBLB";
    for (uint32_t layer = 0; layer < 4; ++layer) {
      observer.on_layer_begin(procs[layer], layer, frame);
      observer.on_layer_end(procs[layer], layer, frame);
      worker.drain();  // let each apply before the next layer, so the sysfs sequence is exact
    }
  }
  worker.stop();
  // Frame 0: B->3, L->1, B->0. Frames 1, 2: B->3, B->0 (L stays 1).
  EXPECT_EQ(worker.issued(), 7u);
  const auto records = worker.records();
  ASSERT_EQ(records.size(), 7u);
  for (const auto& r : records) {
    EXPECT_GT(r.apply_ns, 0);
    EXPECT_GE(r.apply_ns, r.issue_ns);
    EXPECT_TRUE(r.error.empty());
  }
  EXPECT_EQ(records[1].processor, 'L');
  EXPECT_EQ(records[1].layer, 2u);
  EXPECT_EQ(get(sim / "devices/system/cpu/cpufreq/policy0/scaling_setspeed"), "408000");
}

TEST(DvfsWorkerTest, StalledSysfsWriteNeverBlocksInference) {
  SimSysfs sim("stall");
  sim.add_standard();
  sim.make_fifo("devices/system/cpu/cpufreq/policy0/scaling_setspeed");
  const Platform platform = sim_platform(sim);
  SysfsDvfs dvfs(platform, sim.root());
  DvfsWorker worker(dvfs, nullptr);
  DvfsObserver observer({{{'B', 1}}, {{'B', 2}}, {{'B', 3}}}, worker);
  // "Inference": 300 layer starts while the worker is stuck in open() of the FIFO.
  int64_t worst_ns = 0;
  for (uint64_t frame = 0; frame < 100; ++frame) {
    for (uint32_t layer = 0; layer < 3; ++layer) {
      const int64_t t0 = profiler::now_ns();
      observer.on_layer_begin('B', layer, frame);
      worst_ns = std::max(worst_ns, profiler::now_ns() - t0);
    }
  }
  EXPECT_EQ(worker.issued(), 300u);
  // Shared 2-core machine: allow for preemption, but far below any write stall.
  EXPECT_LT(worst_ns, 20'000'000) << "a request waited for the stalled write";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Unstall: read the FIFO until the worker is done writing.
  const std::string fifo = (sim / "devices/system/cpu/cpufreq/policy0/scaling_setspeed").string();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
      char buf[64];
      for (int i = 0; i < 20; ++i) {
        if (::read(fd, buf, sizeof buf) <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ::close(fd);
    }
  });
  worker.stop();
  done.store(true);
  reader.join();
  const auto records = worker.records();
  size_t applied = 0, superseded = 0;
  for (const auto& r : records) {
    applied += r.apply_ns > 0;
    superseded += r.superseded;
  }
  EXPECT_GE(superseded, 290u);  // the stalled worker skipped stale levels
  EXPECT_GE(applied, 1u);
  EXPECT_EQ(applied + superseded, 300u);
  sim.make_unwritable("devices/system/cpu/cpufreq/policy0/scaling_setspeed");  // let restore finish
}

}  // namespace
}  // namespace co_up::power
