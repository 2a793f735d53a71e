// How run profiles become layer-profile numbers: which kTransfer events count as a boundary's
// send and receive side, medians and MADs, the alternating orders and the step list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "cli/layer_profiler.h"
#include "cli/profile_command.h"
#include "core/error.h"

namespace co_up::cli {
namespace {

using profiler::Event;
using profiler::EventKind;

Event event(EventKind kind, uint32_t subgraph, uint32_t layer, uint32_t peer, uint64_t frame,
            double us) {
  Event e;
  e.kind = kind;
  e.subgraph = subgraph;
  e.layer = layer;
  e.peer = peer;
  e.frame = frame;
  e.begin_ns = 1000000 * static_cast<int64_t>(frame);
  e.end_ns = e.begin_ns + static_cast<int64_t>(us * 1000);
  return e;
}

// Three layers, one sub-graph each, order "BLB", as an alternating run has them.
profiler::RunProfile three_layer_run(uint64_t frames) {
  profiler::RunProfile run;
  run.frames_completed = frames;
  for (uint32_t l = 0; l < 3; ++l) {
    profiler::LayerInfo info;
    info.index = l;
    info.processor = l == 1 ? 'L' : 'B';
    info.subgraph = l;
    run.layers.push_back(info);
  }
  return run;
}

TEST(LayerProfiler, AlternatingOrders) {
  EXPECT_EQ(alternating_order('B', 'L', 5), "BLBLB");
  EXPECT_EQ(alternating_order('L', 'B', 4), "LBLB");
  EXPECT_EQ(alternating_order('B', 'G', 1), "B");
}

TEST(LayerProfiler, TransfersCountTheSendersCopyAndTheReceiversBinding) {
  profiler::RunProfile run = three_layer_run(3);
  for (uint64_t f = 0; f < 3; ++f) {
    const double jitter = static_cast<double>(f);  // medians pick the middle frame
    run.events.push_back(event(EventKind::kTransfer, 0, 0, 0, f, 7));         // network input: not a boundary
    run.events.push_back(event(EventKind::kTransfer, 0, 0, 1, f, 100 + jitter));  // B sends to sub-graph 1
    run.events.push_back(event(EventKind::kTransfer, 0, 0, 2, f, 500));       // skip edge to 2: not boundary 0
    run.events.push_back(event(EventKind::kTransfer, 1, 1, 1, f, 30 + jitter));   // L binds its input
    run.events.push_back(event(EventKind::kTransfer, 1, 1, 2, f, 50 + jitter));   // L sends to sub-graph 2
    run.events.push_back(event(EventKind::kTransfer, 2, 2, 2, f, 20 + jitter));   // B binds its inputs...
    run.events.push_back(event(EventKind::kTransfer, 2, 2, 2, f, 5));             // ...two of them: summed
    run.events.push_back(event(EventKind::kLayer, 1, 1, 0, f, 999));              // not a transfer
    run.events.push_back(event(EventKind::kTransfer, 2, 2, UINT32_MAX, f, 3));   // to the user: ignored
  }
  std::map<std::pair<char, char>, planner::TransferTimes> found;
  collect_transfers(run, found);
  ASSERT_EQ(found.size(), 2u);
  const planner::TransferTimes& bl = found.at({'B', 'L'});
  const planner::TransferTimes& lb = found.at({'L', 'B'});
  ASSERT_EQ(bl.send_us.size(), 2u);
  EXPECT_NEAR(bl.send_us[0], 101, 1e-6);
  EXPECT_NEAR(bl.receive_us[0], 31, 1e-6);
  EXPECT_TRUE(std::isnan(bl.send_us[1]));  // boundary 1 is L->B
  EXPECT_NEAR(lb.send_us[1], 51, 1e-6);
  EXPECT_NEAR(lb.receive_us[1], 26, 1e-6);
  EXPECT_TRUE(std::isnan(lb.receive_us[0]));
  EXPECT_NEAR(input_transfer_from(run), 7, 1e-6);
}

TEST(LayerProfiler, ShiftedRunFillsTheOtherBoundaries) {
  std::map<std::pair<char, char>, planner::TransferTimes> found;
  profiler::RunProfile first = three_layer_run(1);  // BLB
  profiler::RunProfile shifted = three_layer_run(1);
  for (auto& l : shifted.layers) l.processor = l.processor == 'B' ? 'L' : 'B';  // LBL
  for (uint32_t b = 0; b < 2; ++b) {
    first.events.push_back(event(EventKind::kTransfer, b, b, b + 1, 0, 10 + b));
    first.events.push_back(event(EventKind::kTransfer, b + 1, b + 1, b + 1, 0, 1));
    shifted.events.push_back(event(EventKind::kTransfer, b, b, b + 1, 0, 20 + b));
    shifted.events.push_back(event(EventKind::kTransfer, b + 1, b + 1, b + 1, 0, 2));
  }
  collect_transfers(first, found);
  collect_transfers(shifted, found);
  EXPECT_THAT(found.at({'B', 'L'}).send_us, ::testing::ElementsAre(10, 21));
  EXPECT_THAT(found.at({'L', 'B'}).send_us, ::testing::ElementsAre(20, 11));
  EXPECT_THAT(found.at({'B', 'L'}).receive_us, ::testing::ElementsAre(1, 2));
}

TEST(LayerProfiler, LayerMediansAndMads) {
  profiler::RunProfile run = three_layer_run(5);
  const double times[5] = {10, 12, 11, 30, 9};  // one outlier: the median ignores it
  for (uint64_t f = 0; f < 5; ++f) {
    for (uint32_t l = 0; l < 3; ++l) {
      run.events.push_back(event(EventKind::kLayer, 0, l, 0, f, times[f] * (l + 1)));
    }
  }
  const planner::LayerTimes t = layer_times_from(run, 'B', 2);
  EXPECT_EQ(t.processor, 'B');
  EXPECT_EQ(t.level, 2);
  ASSERT_EQ(t.median_us.size(), 3u);
  EXPECT_NEAR(t.median_us[0], 11, 1e-6);
  EXPECT_NEAR(t.mad_us[0], 1, 1e-6);  // |10-11|,|12-11|,0,19,2 -> 1
  EXPECT_NEAR(t.median_us[2], 33, 1e-6);

  profiler::RunProfile missing = three_layer_run(1);
  missing.events.push_back(event(EventKind::kLayer, 0, 0, 0, 0, 1));
  EXPECT_THROW(layer_times_from(missing, 'B', 0), RuntimeError);
}

TEST(LayerProfiler, SpreadIsTheLayersMadsOverTheirMediansWithoutDeclinedLayers) {
  planner::LayerTimes t;
  t.median_us = {100, std::nan(""), 300};
  t.mad_us = {2, std::nan(""), 6};
  EXPECT_NEAR(layer_spread(t), 8.0 / 400.0, 1e-12);
  EXPECT_EQ(layer_spread(planner::LayerTimes{}), 0.0);
}

TEST(ProfileSteps, LevelZeroFirstThenPairsThenHandoffsThenDvfsLevels) {
  planner::LayerProfile p;
  p.network.layer_count = 4;
  planner::ProfileProcessor b, l, g;
  b.letter = 'B';
  b.levels_khz = {400000, 800000};
  l.letter = 'L';
  l.levels_khz = {300000, 600000, 900000};
  g.letter = 'G';
  p.processors = {b, l, g};
  std::vector<std::string> ids;
  for (const ProfileStep& s : profile_steps(p, "BL")) ids.push_back(s.id());
  EXPECT_THAT(ids, ::testing::ElementsAre("layers:BLG:0", "transfers:B:L", "transfers:B:G",
                                          "transfers:L:G", "handoff:B:L", "handoff:B:G",
                                          "handoff:L:G", "layers:B:1", "layers:B:2", "layers:L:1",
                                          "layers:L:2", "layers:L:3"));
  ids.clear();
  for (const ProfileStep& s : profile_steps(p, "")) ids.push_back(s.id());
  EXPECT_EQ(ids.size(), 7u);
  EXPECT_EQ((ProfileStep{ProfileStep::Kind::kHandoff, "BL", 0}.describe(p)), "hand-off B<->L");
  EXPECT_EQ((ProfileStep{ProfileStep::Kind::kLayers, "B", 2}.describe(p)),
            "layers on B at level 2 (800 MHz)");
  EXPECT_EQ((ProfileStep{ProfileStep::Kind::kLayers, "BLG", 0}.describe(p)),
            "layers on B, L, G at level 0 (as found)");
  EXPECT_EQ((ProfileStep{ProfileStep::Kind::kTransfers, "LG", 0}.describe(p)), "transfers L<->G");
  p.network.layer_count = 1;  // no boundaries: no transfer steps
  EXPECT_EQ(profile_steps(p, "").size(), 1u);
}

TEST(LayerProfiler, SamplesFromSeveralRunsSkipTheirRewarmFrames) {
  LayerSamples layers(3);
  TransferSamples transfers;
  for (int run_index = 0; run_index < 2; ++run_index) {
    profiler::RunProfile run = three_layer_run(3);
    for (uint64_t f = 0; f < 3; ++f) {
      // Frame 0 of each run is the discarded re-warm frame: make it an outlier.
      const double us = f == 0 ? 1000 : 10 + static_cast<double>(run_index);
      for (uint32_t l = 0; l < 3; ++l) run.events.push_back(event(EventKind::kLayer, 0, l, 0, f, us));
      run.events.push_back(event(EventKind::kTransfer, 0, 0, 1, f, us));
      run.events.push_back(event(EventKind::kTransfer, 1, 1, 1, f, us / 2));
    }
    layers.add(run, 1);
    transfers.add(run, 1);
  }
  const planner::LayerTimes t = layers.times('B', 0);
  EXPECT_NEAR(t.median_us[0], 10.5, 1e-6);  // samples 10, 10, 11, 11
  EXPECT_NEAR(t.mad_us[0], 0.5, 1e-6);
  const auto found = transfers.times();
  EXPECT_NEAR(found.at({'B', 'L'}).send_us[0], 10.5, 1e-6);
  EXPECT_NEAR(found.at({'B', 'L'}).receive_us[0], 5.25, 1e-6);
}

}  // namespace
}  // namespace co_up::cli
