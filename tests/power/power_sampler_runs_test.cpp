// PowerSampler started and stopped once per run of a Session: stop() returns without waiting out
// the sampling period, and each start() begins a new series, so an energy counter's first sample
// of a run does not average over the idle time since the last.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/platform.h"
#include "power/power_sampler.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::power {
namespace {

using test::put;
using test::SimSysfs;

SensorSpec energy_sensor() {
  SensorSpec s;
  s.name = "soc";
  s.kind = "energy";
  s.path = "class/powercap/soc/energy_uj";
  s.scale = 0.001;  // uJ -> mJ
  return s;
}

TEST(PowerSamplerRunsTest, StopDoesNotWaitOutTheSamplingPeriod) {
  SimSysfs sim("sampler_runs");
  put(sim / "class/powercap/soc/energy_uj", "1000");
  PowerSampler sampler({energy_sensor()}, sim.root(), 1.0);  // 1 Hz: a one-second sleep
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  sampler.stop();
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(waited, std::chrono::milliseconds(400)) << "stop() waited for the sleeping sampler";
}

TEST(PowerSamplerRunsTest, EachStartBeginsANewSeries) {
  SimSysfs sim("sampler_runs");
  const std::string counter = "class/powercap/soc/energy_uj";
  put(sim / counter, "1000");
  PowerSampler sampler({energy_sensor()}, sim.root(), 200.0);
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  sampler.stop();
  ASSERT_GE(sampler.samples().count(), 2u);
  // Between runs the board uses energy (1 J); during the second run the counter stands still.
  put(sim / counter, "1001000");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  sampler.stop();
  const profiler::PowerSamples& s = sampler.samples();
  ASSERT_GE(s.count(), 2u);
  for (size_t i = 0; i < s.count(); ++i) {
    EXPECT_GE(s.t_ns[i], s.t_ns[0]);
    EXPECT_EQ(s.at(i, 0), 0.0) << "sample " << i << " of " << s.count() << " counts energy used between runs";
  }
}

}  // namespace
}  // namespace co_up::power
