// DvfsWorker over several runs of one Session: drain() settles each run's requests and returns
// even when the worker was stopped, and take_records() hands out each run's records once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>

#include "core/platform.h"
#include "power/dvfs_worker.h"
#include "power/sysfs_dvfs.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::power {
namespace {

using test::get;
using test::SimSysfs;

// A hang is the failure here: give up loudly instead of waiting for the suite's timeout.
void within_seconds(int seconds, const std::function<void()>& body, const char* what) {
  auto done = std::async(std::launch::async, body);
  if (done.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    std::cerr << "FAILED: " << what << " did not return within " << seconds << " s\n";
    std::_Exit(1);
  }
  done.get();
}

TEST(DvfsWorkerRunsTest, DrainAfterStopReturns) {
  SimSysfs sim("worker_runs");
  sim.add_standard();
  const Platform platform = parse_platform(sim.platform_json(), "sim");
  SysfsDvfs dvfs(platform, sim.root());
  DvfsWorker worker(dvfs, nullptr);
  worker.request('B', 1, 0, 0);
  worker.stop();
  worker.request('B', 2, 1, 0);  // never applied: nobody is left to apply it
  within_seconds(5, [&] { worker.drain(); }, "drain() on a stopped worker");
  const auto records = worker.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_GT(records[0].apply_ns, 0);
  EXPECT_EQ(records[1].apply_ns, 0);
}

TEST(DvfsWorkerRunsTest, EachRunsRecordsAreTakenOnceAndLaterRunsStillApply) {
  SimSysfs sim("worker_runs");
  sim.add_standard();
  const Platform platform = parse_platform(sim.platform_json(), "sim");
  SysfsDvfs dvfs(platform, sim.root());
  DvfsWorker worker(dvfs, nullptr);
  const std::string setspeed = "devices/system/cpu/cpufreq/policy0/scaling_setspeed";
  for (int run = 0; run < 3; ++run) {
    worker.request('B', 0, 0, 0);
    worker.request('B', 2, 1, 0);
    within_seconds(5, [&] { worker.drain(); }, "drain()");
    EXPECT_EQ(get(sim / setspeed), "1200000") << "run " << run;
    const auto records = worker.take_records();
    ASSERT_EQ(records.size(), 2u) << "run " << run;
    EXPECT_EQ(records[1].level, 2);
    EXPECT_GT(records[1].apply_ns, 0);
    EXPECT_TRUE(worker.records().empty());
  }
  EXPECT_EQ(worker.issued(), 6u);
}

}  // namespace
}  // namespace co_up::power
