// Inside a frame: the critical path and idle time per processor from a run profile's sub-graph
// events, on the hand-computed schedule the DAG cost model test uses (0 -> {1, 2} -> 3, BLBL).
#include "profiler/frame_analysis.h"

#include <gtest/gtest.h>

#include <sstream>

#include "profiler/report.h"

namespace co_up::profiler {
namespace {

constexpr int64_t kMs = 1000000;

RunProfile diamond(int64_t offset_ms, uint64_t frames) {
  RunProfile p;
  p.level = 1;
  p.order = "BLBL";
  p.processors = {{'B', "big", "cpu", "0", 1}, {'L', "little", "cpu", "1", 1}};
  p.subgraphs = {{0, 'B', "cpu", 0, 0}, {1, 'L', "cpu", 1, 1}, {2, 'B', "cpu", 2, 2}, {3, 'L', "cpu", 3, 3}};
  for (auto [s, d] : {std::pair{0u, 1u}, {0u, 2u}, {1u, 3u}, {2u, 3u}}) {
    ReceiverInfo r;
    r.source = s;
    r.destination = d;
    p.receivers.push_back(r);
  }
  for (uint64_t f = 0; f < frames; ++f) {
    const int64_t t = (offset_ms + static_cast<int64_t>(f) * 100) * kMs;
    p.frame_start_ns.push_back(t);
    p.frame_end_ns.push_back(t + 48 * kMs);
    const int64_t runs[4][2] = {{0, 10}, {10, 35}, {10, 40}, {40, 48}};
    for (uint32_t s = 0; s < 4; ++s) {
      Event e;
      e.kind = EventKind::kSubGraph;
      e.subgraph = s;
      e.frame = f;
      e.begin_ns = t + runs[s][0] * kMs;
      e.end_ns = t + runs[s][1] * kMs;
      p.events.push_back(e);
    }
  }
  return p;
}

TEST(FrameAnalysis, CriticalPathAndIdleTimeOfEachFrame) {
  const std::vector<FrameAnalysis> frames = analyze_frames(diamond(5, 3));
  ASSERT_EQ(frames.size(), 3u);
  for (const FrameAnalysis& f : frames) {
    EXPECT_DOUBLE_EQ(f.latency_ms, 48);
    EXPECT_EQ(f.critical_path, (std::vector<uint32_t>{0, 2, 3}));
    EXPECT_EQ(f.processors, "BL");
    ASSERT_EQ(f.idle_ms.size(), 2u);
    EXPECT_DOUBLE_EQ(f.idle_ms[0], 8);   // B busy 10 + 30
    EXPECT_DOUBLE_EQ(f.idle_ms[1], 15);  // L busy 25 + 8
  }
  EXPECT_EQ(critical_path_text(diamond(0, 1), frames[0].critical_path), "0 (B) -> 2 (B) -> 3 (L)");
}

TEST(FrameAnalysis, ReportsPrintAndWriteIt) {
  const RunProfile p = diamond(0, 2);
  std::ostringstream out;
  print_report(out, p);
  EXPECT_NE(out.str().find("inside a frame (median over 2 frames, latency 48.000 ms): critical path 0 (B) -> 2 (B) "
                           "-> 3 (L) (in 2 of 2 frames); idle B 8.000 ms (17 %), L 15.000 ms (31 %)"),
            std::string::npos)
      << out.str();
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j["inside_frames"]["critical_path"], nlohmann::json({0, 2, 3}));
  EXPECT_DOUBLE_EQ(j["inside_frames"]["idle_ms_median"]["L"].get<double>(), 15.0);
  EXPECT_EQ(j["inside_frames"]["per_frame"].size(), 2u);
}

TEST(FrameAnalysis, NothingBelowLevelOne) {
  RunProfile p = diamond(0, 2);
  p.level = 0;
  EXPECT_TRUE(analyze_frames(p).empty());
}

}  // namespace
}  // namespace co_up::profiler
