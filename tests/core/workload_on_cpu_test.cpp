// How much of its sub-graph runs a processor's host thread was on a CPU: the summary from the
// events' thread CPU times, the report's line, and a real workload run's profile JSON.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "profiler/workload_report.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

profiler::Event run_event(int64_t begin_ms, int64_t end_ms, int64_t cpu_ms) {
  profiler::Event e;
  e.kind = profiler::EventKind::kSubGraph;
  e.begin_ns = begin_ms * 1'000'000;
  e.end_ns = end_ms * 1'000'000;
  e.thread_cpu_ns = cpu_ms < 0 ? -1 : cpu_ms * 1'000'000;
  return e;
}

profiler::WorkloadProfile one_network(std::vector<profiler::Event> events) {
  profiler::WorkloadProfile w;
  w.mode = "pipeline";
  w.policy = "oldest";
  w.platform = "test";
  profiler::NetworkRun n;
  n.name = "x";
  n.profile.processors.push_back({'B', "big", "cpu", "0", 1});
  n.profile.subgraphs.push_back({0, 'B', "cpu", 0, 1});
  n.profile.events = std::move(events);
  n.arrival_ns = {0};
  n.end_ns = {60'000'000};
  n.profile.frames_requested = n.profile.frames_completed = 1;
  w.networks.push_back(n);
  return w;
}

TEST(WorkloadOnCpu, SumsTheMeasuredRunsOnly) {
  // 10 ms on CPU of 20 ms, 9 of 10; a run without a CPU time (-1) counts as busy, not here.
  const profiler::WorkloadProfile w =
      one_network({run_event(0, 20, 10), run_event(20, 30, 9), run_event(40, 60, -1)});
  const profiler::WorkloadSummary s = profiler::summarize_workload(w);
  ASSERT_EQ(s.processors.size(), 1u);
  EXPECT_DOUBLE_EQ(s.processors[0].run_wall_ms, 30);
  EXPECT_DOUBLE_EQ(s.processors[0].run_cpu_ms, 19);
  EXPECT_DOUBLE_EQ(s.processors[0].on_cpu(), 19.0 / 30.0);
  EXPECT_DOUBLE_EQ(s.processors[0].busy_ms, 50);
  std::ostringstream out;
  profiler::print_workload_report(out, w);
  EXPECT_THAT(out.str(), HasSubstr("\n  on CPU during its sub-graph runs (host thread CPU time / wall): B 63.3 %\n"));
  const nlohmann::json j = profiler::workload_to_json(w);
  EXPECT_DOUBLE_EQ(j["processors"][0]["run_cpu_ms"].get<double>(), 19);
  EXPECT_DOUBLE_EQ(j["processors"][0]["run_wall_ms"].get<double>(), 30);
}

TEST(WorkloadOnCpu, NoLineWithoutMeasuredRuns) {
  const profiler::WorkloadProfile w = one_network({run_event(0, 20, -1)});
  EXPECT_EQ(profiler::summarize_workload(w).processors[0].on_cpu(), 0);
  std::ostringstream out;
  profiler::print_workload_report(out, w);
  EXPECT_THAT(out.str(), Not(HasSubstr("on CPU during")));
}

TEST(WorkloadOnCpu, ARealRunMeasuresEveryProcessorsThread) {
  test::ScratchDir dir;
  const std::string profile = (dir / "w.json").string();
  const test::Exit x = test::finish_process(
      test::spawn_process(CO_UP_BINARY,
                          {"--workload=squeezenet:BBBBBLLLLL:image_size=32:frames=6;mobilenet:LLLLLLLLLLLLLL:"
                           "image_size=32:frames=4",
                           "--profile-out=" + profile},
                          dir.path()),
      dir.path());
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  EXPECT_THAT(x.out, HasSubstr("\n  on CPU during its sub-graph runs (host thread CPU time / wall): B "));
  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  ASSERT_EQ(j["processors"].size(), 2u);
  for (const auto& p : j["processors"]) {
    const double wall = p["run_wall_ms"].get<double>(), cpu = p["run_cpu_ms"].get<double>();
    EXPECT_GT(cpu, 0) << p;
    // One thread per processor computes its runs (cpu-xnnpack, one thread): its CPU time fits in
    // the runs' wall time (plus the clocks' granularity).
    EXPECT_LE(cpu, wall * 1.02 + 0.1) << p;
  }
}

}  // namespace
}  // namespace co_up
