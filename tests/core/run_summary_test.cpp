// The latency and throughput numbers of the run report and of the workload report, from frame
// times set by hand: one helper computes the per-frame latencies both summaries report.
#include <gtest/gtest.h>

#include "profiler/report.h"
#include "profiler/workload_report.h"

namespace co_up::profiler {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(RunSummaryTest, LatenciesPairTheFirstFramesOfBothListsInMs) {
  const Latencies l = latencies_ms({0, 10 * kMs, 20 * kMs, 30 * kMs}, {4 * kMs, 12 * kMs, 29 * kMs});
  ASSERT_EQ(l.ms.size(), 3u);  // the fourth start has no end
  EXPECT_DOUBLE_EQ(l.ms[0], 4.0);
  EXPECT_DOUBLE_EQ(l.ms[1], 2.0);
  EXPECT_DOUBLE_EQ(l.ms[2], 9.0);
  EXPECT_DOUBLE_EQ(l.mean_ms, 5.0);
  EXPECT_DOUBLE_EQ(l.max_ms, 9.0);
  const Latencies none = latencies_ms({}, {1});
  EXPECT_TRUE(none.ms.empty());
  EXPECT_EQ(none.mean_ms, 0.0);
  EXPECT_EQ(none.max_ms, 0.0);
}

TEST(RunSummaryTest, RunSummaryIsMedianMeanMaxAndSteadyStateThroughput) {
  RunProfile p;
  p.frame_start_ns = {0, 5 * kMs, 10 * kMs, 15 * kMs};
  p.frame_end_ns = {10 * kMs, 20 * kMs, 30 * kMs, 55 * kMs};  // latencies 10, 15, 20, 40 ms
  const Summary s = summarize(p);
  EXPECT_DOUBLE_EQ(s.latency_median_ms, 17.5);
  EXPECT_DOUBLE_EQ(s.latency_mean_ms, 21.25);
  EXPECT_DOUBLE_EQ(s.latency_max_ms, 40.0);
  EXPECT_DOUBLE_EQ(s.wall_ms, 55.0);
  EXPECT_DOUBLE_EQ(s.throughput_fps, 3 / 0.045);  // 3 completions after the first, in 45 ms
}

TEST(RunSummaryTest, WorkloadLatencyCountsFromArrival) {
  WorkloadProfile w;
  w.start_ns = 0;
  NetworkRun n;
  n.name = "net";
  n.requests = 3;
  n.arrival_ns = {0, 10 * kMs, 20 * kMs};
  n.end_ns = {5 * kMs, 25 * kMs, 40 * kMs};  // 5, 15, 20 ms from arrival
  w.networks.push_back(n);
  const WorkloadSummary s = summarize_workload(w);
  ASSERT_EQ(s.networks.size(), 1u);
  const NetworkSummary& ns = s.networks[0];
  EXPECT_EQ(ns.frames_completed, 3u);
  EXPECT_DOUBLE_EQ(ns.latency_mean_ms, 40.0 / 3);
  EXPECT_DOUBLE_EQ(ns.latency_max_ms, 20.0);
  EXPECT_DOUBLE_EQ(ns.throughput_fps, 3 / 0.040);  // 3 requests from the start to the last end
}

}  // namespace
}  // namespace co_up::profiler
