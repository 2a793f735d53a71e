// Overlap mode (Mode::kOverlap): frame g may enter while g - 1 is in flight, never while g - 2
// is, and runs on a processor only once g - 1 has nothing left there. Checked on GoogLeNet with
// spread splits and branches (boundaries shared in place, as in switch mode, and copied): the
// output of every frame is the single-processor output bit for bit, every frame is delivered
// once and in order, and the profile's events show the gate and the two-frame limit held. And
// frame 1 does begin while frame 0 is held in flight (which switch mode never lets happen).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/layer_observer.h"
#include "core/mapping.h"
#include "core/network.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::have_xnnpack;
using testing::distinct_inputs;

constexpr uint64_t kFrames = 12;

struct OverlapRun {
  std::vector<std::pair<uint64_t, std::vector<float>>> outputs;  // in delivery order
  profiler::RunProfile profile;
  std::vector<char> processor_of;  // per sub-graph
};

OverlapRun run_order(const graph::Graph& g, const std::string& order, Mode mode, bool share) {
  Executor executor = testing::profiled_executor(g, order, mode, share);
  RunRequest request;
  request.frames = kFrames;
  request.input_sets = distinct_inputs(g, 3, 5);  // neighbouring frames differ
  OverlapRun r;
  std::mutex mutex;
  request.on_output = [&](uint64_t frame, uint32_t, std::span<const float> values) {
    std::lock_guard lock(mutex);
    r.outputs.emplace_back(frame, std::vector<float>(values.begin(), values.end()));
  };
  r.profile = executor.run(request).profile;
  for (const SubGraph& sg : executor.partition().subgraphs()) r.processor_of.push_back(sg.processor);
  return r;
}

// GoogLeNet at 64x64, one unit per branch, conv1, conv2/3x3 and inception_3a/3x3 split in two.
graph::Graph split_googlenet() {
  NetworkSpec spec{"googlenet", "branches", 64, 7, ""};
  spec.split = "0:2,2:2,5:2";
  return build_network(spec);
}

// The split layers' second parts on L (the rest on B), every unit alternating, some inception
// branches on L, and conv1's second part alone on L. In the last, L has nothing else to do: it
// would write frame g's slice of conv1's Concat output (one buffer) as soon as frame g may
// enter, while B has not yet read frame g - 1's, but for the shared buffer's guard.
std::vector<std::string> orders() {
  std::string spread(82, 'B'), alternating(82, 'B'), branches(82, 'B'), first_split(82, 'B');
  for (uint32_t first : {0u, 4u, 9u}) spread[first + 1] = 'L';
  for (size_t u = 0; u < alternating.size(); u += 2) alternating[u] = 'L';
  for (size_t u = 12; u < 40; u += 3) branches[u] = 'L';  // inception branches now and then
  first_split[1] = 'L';
  return {spread, alternating, branches, first_split};
}

TEST(OverlapMode, OutputsEqualOneProcessorBitForBitEveryFrameOnceInOrder) {
  if (!have_xnnpack()) GTEST_SKIP() << "cpu-xnnpack is not built here (no libxnnpack-dev)";
  const graph::Graph g = split_googlenet();
  const OverlapRun reference = run_order(g, std::string(82, 'B'), Mode::kSwitch, false);
  ASSERT_EQ(reference.outputs.size(), kFrames);
  for (const std::string& order : orders()) {
    for (bool share : {true, false}) {
      SCOPED_TRACE(order + (share ? " shared" : " copied"));
      const OverlapRun r = run_order(g, order, Mode::kOverlap, share);
      EXPECT_EQ(r.profile.mode, "overlap");
      EXPECT_EQ(r.profile.frames_completed, kFrames);
      ASSERT_EQ(r.outputs.size(), kFrames);
      for (uint64_t f = 0; f < kFrames; ++f) {
        EXPECT_EQ(r.outputs[f].first, f) << "frames delivered out of order or twice";
        EXPECT_TRUE(r.outputs[f].second == reference.outputs[f].second)
            << "frame " << f << " differs from the single-processor output";
      }
    }
  }
}

TEST(OverlapMode, SharesBoundariesInPlaceAsSwitchModeDoes) {
  if (!have_xnnpack()) GTEST_SKIP() << "cpu-xnnpack is not built here (no libxnnpack-dev)";
  const graph::Graph g = split_googlenet();
  const OverlapRun r = run_order(g, orders()[0], Mode::kOverlap, true);
  std::map<std::string, std::string> in_place;
  for (const profiler::ReceiverInfo& info : r.profile.receivers) in_place[info.tensor] = info.in_place;
  for (const char* layer : {"conv2/3x3", "inception_3a/3x3"}) {
    EXPECT_EQ(in_place.at(std::string(layer) + "#2"), "slice") << layer;
  }
  EXPECT_EQ(in_place.at("pool1/3x3_s2#2"), "shared");  // conv1's part, pooled before the Concat
  EXPECT_EQ(in_place.at("conv2/3x3_reduce"), "shared");
}

TEST(OverlapMode, AProcessorFinishesAFrameBeforeItStartsTheNextAndTwoFramesAtMostAreInFlight) {
  if (!have_xnnpack()) GTEST_SKIP() << "cpu-xnnpack is not built here (no libxnnpack-dev)";
  const graph::Graph g = split_googlenet();
  for (const std::string& order : orders()) {
    SCOPED_TRACE(order);
    const OverlapRun r = run_order(g, order, Mode::kOverlap, true);
    ASSERT_EQ(r.profile.frame_end_ns.size(), kFrames);
    // Per processor, its sub-graph runs in time order: the frame never goes back (frame g's
    // sub-graph never runs while frame g - 1 still has one to run there).
    std::map<char, std::vector<const profiler::Event*>> runs;
    for (const profiler::Event& e : r.profile.events) {
      if (e.kind == profiler::EventKind::kSubGraph) runs[r.processor_of.at(e.subgraph)].push_back(&e);
    }
    ASSERT_EQ(runs.size(), 2u);
    for (auto& [letter, list] : runs) {
      std::sort(list.begin(), list.end(), [](const auto* a, const auto* b) { return a->begin_ns < b->begin_ns; });
      for (size_t i = 1; i < list.size(); ++i) {
        EXPECT_GE(list[i]->frame, list[i - 1]->frame)
            << letter << " ran frame " << list[i]->frame << " (sub-graph " << list[i]->subgraph
            << ") before frame " << list[i - 1]->frame << " (sub-graph " << list[i - 1]->subgraph << ")";
      }
    }
    // Frame g runs nothing before frame g - 2 has completed.
    for (const profiler::Event& e : r.profile.events) {
      if (e.kind != profiler::EventKind::kSubGraph || e.frame < 2) continue;
      EXPECT_GE(e.begin_ns, r.profile.frame_end_ns[e.frame - 2])
          << "frame " << e.frame << " ran sub-graph " << e.subgraph << " while frame " << e.frame - 2
          << " was in flight";
    }
  }
}

// Holds frame 0's last sub-graph (on B) at its start until frame 1's first (on L) has begun, or
// until `limit` passes: whether frame 1 began while frame 0 was still in flight.
class HoldFrameZero : public LayerObserver {
 public:
  HoldFrameZero(uint32_t held, std::chrono::seconds limit) : held_(held), limit_(limit) {}
  void on_subgraph_begin(char, uint32_t subgraph, uint64_t frame) override {
    std::unique_lock lock(mutex_);
    if (subgraph == 0 && frame == 1) {
      second_began_ = true;
      changed_.notify_all();
    } else if (subgraph == held_ && frame == 0) {
      entered_while_held_ = changed_.wait_for(lock, limit_, [&] { return second_began_; });
    }
  }
  bool entered_while_held() {
    std::lock_guard lock(mutex_);
    return entered_while_held_;
  }

 private:
  const uint32_t held_;
  const std::chrono::seconds limit_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool second_began_ = false;
  bool entered_while_held_ = false;
};

bool second_frame_enters_while_the_first_is_in_flight(Mode mode, std::chrono::seconds limit) {
  // MobileNet's first half on L, its second on B: sub-graphs 0 (L) and 1 (B). Boundaries copied,
  // so frame 1's L sub-graph has its own buffer to write while frame 0's B sub-graph waits.
  const graph::Graph g = build_network({"mobilenet", "layers", 64, 7, ""});
  HoldFrameZero hold(1, limit);
  ExecutorOptions options;
  options.mode = mode;
  options.share_boundaries = false;
  options.observers = {&hold};
  Executor executor(g, Partition::create(g, "LLLLLLLBBBBBBB"), testing::host_platform(), build_plugins(), options);
  EXPECT_EQ(executor.partition().subgraphs().size(), 2u);
  RunRequest request;
  request.frames = 3;
  request.input_sets = distinct_inputs(g, 1, 5);
  EXPECT_EQ(executor.run(request).profile.frames_completed, 3u);
  return hold.entered_while_held();
}

TEST(OverlapMode, ASecondFrameEntersWhileTheFirstIsInFlight) {
  // Overlap mode must let frame 1 begin on L while frame 0 is held on B (10 s: failing, not
  // hanging, if it never does).
  EXPECT_TRUE(second_frame_enters_while_the_first_is_in_flight(Mode::kOverlap, std::chrono::seconds(10)));
  // Switch mode never does: frame 1 enters once frame 0 has completed, so the hold times out
  // whatever the timing (a short one suffices).
  EXPECT_FALSE(second_frame_enters_while_the_first_is_in_flight(Mode::kSwitch, std::chrono::seconds(1)));
}

TEST(OverlapMode, ModeNamesRoundTripAndABadOneSaysWhatToUse) {
  EXPECT_EQ(parse_mode("overlap"), Mode::kOverlap);
  EXPECT_STREQ(mode_name(Mode::kOverlap), "overlap");
  try {
    parse_mode("overlapped");
    FAIL() << "no error for an unknown mode";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown mode 'overlapped' (use --mode=pipeline, --mode=switch or --mode=overlap)");
  }
}

}  // namespace
}  // namespace co_up
