// The cost model against hand-computed numbers (planner/cost_model.h states the formulas).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "planner/cost_model.h"

namespace co_up::planner {
namespace {

using ::testing::HasSubstr;

// B: big CPU on core 0 with two levels (1 and 2 GHz), measured at level 2 only. L: CPU on core 1,
// no DVFS. G: GPU hosted on B's core 0, no DVFS, no power data.
LayerProfile hand_profile() {
  LayerProfile p;
  p.network.graph = "hand";
  p.network.layer_count = 3;
  p.platform_name = "test";
  p.repetitions = 3;
  ProfileProcessor b{'B', "big", "cpu", "cpu-reference", 'B', {0}, "B", {1000000, 2000000}, {}, {}};
  ProfileProcessor l{'L', "little", "cpu", "cpu-reference", 'L', {1}, "", {}, {}, {}};
  ProfileProcessor g{'G', "gpu", "gpu", "opencl", 'B', {0}, "", {}, {}, ProfilePowerModel{1, 0.5}};
  p.processors = {b, l, g};
  p.layer_times = {{'B', 2, {100, 200, 300}, {0, 0, 0}},
                   {'L', 0, {150, 150, 150}, {0, 0, 0}},
                   {'G', 0, {50, 60, 70}, {0, 0, 0}}};
  p.transfers = {{'B', 'L', {10, 11}, {20, 21}},
                 {'L', 'B', {1, 2}, {3, 4}},
                 {'B', 'G', {5, 6}, {7, 8}}};
  p.input_transfer_us['B'] = 2;
  p.power_w = {{'B', 1, 2.0, 0.5}, {'B', 2, 4.0, 1.0}, {'L', 0, 1.0, 0.2}};
  return p;
}

TEST(CostModel, PipelineAndSwitchFollowTheFormulas) {
  const CostModel model(hand_profile());
  EXPECT_EQ(model.letters(), "BLG");
  ASSERT_EQ(model.domains(), std::vector<std::string>{"B"});
  EXPECT_EQ(model.resource_count(), 2u);  // {B, G} share core 0; {L}
  EXPECT_EQ(model.resource_of(0), model.resource_of(2));

  // BLL at level 2: B = 2 + 100 + send 10 = 112; L = receive 20 + 150 + 150 = 320.
  const Prediction pipe = model.predict({"BLL", Mode::kPipeline, {2}});
  EXPECT_DOUBLE_EQ(pipe.period_us, 320);
  EXPECT_DOUBLE_EQ(pipe.throughput_fps, 1e6 / 320);
  EXPECT_DOUBLE_EQ(pipe.latency_ms, 0.432);  // 2 + 100 + 10 + 20 + 150 + 150
  ASSERT_EQ(pipe.resources.size(), 2u);
  EXPECT_EQ(pipe.resources[0].processors, "BG");
  EXPECT_DOUBLE_EQ(pipe.resources[0].busy_us, 112);
  // Energy over the 320 us period: B 4 W x 112 + 1 W x 208, L 1 W x 320 (G unused, no data).
  EXPECT_NEAR(pipe.energy_mj_per_frame, (4 * 112 + 1 * 208 + 320) / 1000.0, 1e-12);

  const Prediction sw = model.predict({"BLL", Mode::kSwitch, {2}});
  EXPECT_DOUBLE_EQ(sw.period_us, 432);
  EXPECT_DOUBLE_EQ(sw.latency_ms, 0.432);
  EXPECT_NEAR(sw.energy_mj_per_frame, (4 * 112 + 1 * 320 + 1 * 320 + 0.2 * 112) / 1000.0, 1e-12);
}

TEST(CostModel, HandoffIsChargedToBothSidesOfEveryBoundary) {
  LayerProfile p = hand_profile();
  p.set_handoff('L', 'B', 30);
  const CostModel model(p);
  EXPECT_DOUBLE_EQ(model.handoff_us(0, 1), 30);
  EXPECT_DOUBLE_EQ(model.send_us(0, 0, 1, Mode::kPipeline), 10 + 30);
  EXPECT_DOUBLE_EQ(model.receive_us(0, 0, 1, Mode::kPipeline), 20 + 30);
  EXPECT_DOUBLE_EQ(model.send_us(0, 0, 1, Mode::kSwitch), 10);  // one frame at a time: none
  EXPECT_DOUBLE_EQ(model.send_us(0, 0, 2, Mode::kPipeline), 5);  // B->G has no hand-off
  // BLB at level 2, boundaries B->L after layer 0 and L->B after layer 1:
  // B = 2 + 100 + (10 + 30) + (4 + 30) + 300 = 476; L = (20 + 30) + 150 + (2 + 30) = 232.
  const Prediction pipe = model.predict({"BLB", Mode::kPipeline, {2}});
  EXPECT_DOUBLE_EQ(pipe.period_us, 476);
  // Latency: every layer, transfer and both hand-offs of each boundary along the path.
  EXPECT_DOUBLE_EQ(pipe.latency_ms, (2 + 100 + 10 + 30 + 20 + 30 + 150 + 2 + 30 + 4 + 30 + 300) / 1000.0);
  const Prediction none = CostModel(hand_profile()).predict({"BLB", Mode::kPipeline, {2}});
  EXPECT_DOUBLE_EQ(none.period_us, 476 - 60);
  EXPECT_NEAR(pipe.latency_ms - none.latency_ms, 4 * 30 / 1000.0, 1e-12);
  // Switch mode: no hand-off, on the path or in the period.
  const Prediction sw = model.predict({"BLB", Mode::kSwitch, {2}});
  EXPECT_DOUBLE_EQ(sw.latency_ms, none.latency_ms);
  EXPECT_DOUBLE_EQ(sw.period_us, 1000 * none.latency_ms);
  // with_handoff sets one pair on a copy; bad pairs are input errors.
  EXPECT_DOUBLE_EQ(model.with_handoff('B', 'L', 0).predict({"BLB", Mode::kPipeline, {2}}).period_us, 416);
  EXPECT_DOUBLE_EQ(model.handoff_us(0, 1), 30);
  EXPECT_THROW(model.with_handoff('B', 'B', 1), InputError);
  EXPECT_THROW(model.with_handoff('B', 'X', 1), InputError);
  EXPECT_THROW(model.with_handoff('B', 'L', -1), InputError);
}

TEST(CostModel, SharedCoresAddAndUnmeasuredLevelsScaleWithFrequency) {
  const CostModel model(hand_profile());
  // Level 1 (1 GHz) was not measured: level 2's times x 2. B and G share one resource, and the
  // G->B transfer was not measured (0).
  const Prediction p = model.predict({"BGB", Mode::kPipeline, {1}});
  EXPECT_DOUBLE_EQ(p.period_us, 2 + 200 + 5 + 7 + 60 + 600);
  EXPECT_DOUBLE_EQ(p.latency_ms, p.period_us / 1000);
  EXPECT_TRUE(std::isnan(p.energy_mj_per_frame)) << "G runs but has no power data";
  EXPECT_FALSE(model.has_energy());
  EXPECT_THAT(model.energy_gap(), HasSubstr("processor G"));
  // Level 0 (as found, not measured) is taken as the highest level.
  EXPECT_DOUBLE_EQ(model.layer_us(0, 0, {0}), 100);
  EXPECT_DOUBLE_EQ(model.layer_us(0, 0, {1}), 200);
  EXPECT_EQ(model.fastest_levels(), std::vector<int>{2});
  bool scaled = false, zero = false;
  for (const std::string& w : model.warnings()) {
    scaled = scaled || w.find("processor B: levels 1 not measured") != std::string::npos;
    zero = zero || w.find("G->B") != std::string::npos;
  }
  EXPECT_TRUE(scaled);
  EXPECT_TRUE(zero);
}

// with_layer_scale scales one processor's layer times at every level, on a copy; nothing else.
TEST(CostModel, WithLayerScaleScalesOneProcessorsLayers) {
  const CostModel model(hand_profile());
  const CostModel slower = model.with_layer_scale('B', 1.5);
  for (const int level : {0, 1, 2}) {
    EXPECT_DOUBLE_EQ(slower.layer_us(0, 0, {level}), 1.5 * model.layer_us(0, 0, {level})) << level;
  }
  EXPECT_DOUBLE_EQ(slower.layer_us(1, 1, {0}), model.layer_us(1, 1, {0}));
  EXPECT_DOUBLE_EQ(slower.send_us(0, 0, 1, Mode::kSwitch), model.send_us(0, 0, 1, Mode::kSwitch));
  EXPECT_DOUBLE_EQ(model.layer_us(0, 0, {2}), 100);  // the original as it was
  EXPECT_THROW(model.with_layer_scale('X', 1.5), InputError);
  EXPECT_THROW(model.with_layer_scale('B', 0), InputError);
}

TEST(CostModel, PowerModelGivesEnergyWithoutMeasurements) {
  LayerProfile p;
  p.network.graph = "one";
  p.network.layer_count = 2;
  ProfileProcessor x{'X', "x", "cpu", "", 'X', {0}, "X", {1000000, 2000000}, {800, 1000}, ProfilePowerModel{1, 0.5}};
  p.processors = {x};
  p.layer_times = {{'X', 1, {100, 100}, {0, 0}}};
  const CostModel model(p);
  EXPECT_TRUE(model.has_energy());
  // P = alpha V^2 f + beta V = 0.64 + 0.4 W busy at 1 GHz, 0.8 V; 200 us busy = the period.
  const Prediction pr = model.predict({"XX", Mode::kPipeline, {1}});
  EXPECT_NEAR(pr.energy_mj_per_frame, 1.04 * 200 / 1000, 1e-12);
}

TEST(CostModel, BadMappingsAreInputErrors) {
  const CostModel model(hand_profile());
  EXPECT_THROW(model.predict({"BL", Mode::kPipeline, {}}), InputError);
  try {
    model.predict({"BLN", Mode::kPipeline, {}});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'N' at position 3"));
  }
  EXPECT_THROW(model.predict({"BLL", Mode::kPipeline, {3}}), InputError);
  EXPECT_THROW(model.predict({"BLL", Mode::kPipeline, {1, 1}}), InputError);
  LayerProfile none = hand_profile();
  none.layer_times.clear();
  EXPECT_THROW(CostModel{none}, InputError);
}

TEST(CostModel, CommandLinesAreRunnable) {
  const CostModel model(hand_profile());
  EXPECT_EQ(command_line(model, {"BBL", Mode::kPipeline, {0}}), "co_up --graph=hand --order=BBL --mode=pipeline");
  // Per sub-graph levels: B's level, G's token [own level, host B's level]; G and L have no
  // table, so their tokens are placeholders and the run needs --dvfs=best-effort.
  const Mapping m{"BGGL", Mode::kSwitch, {1}};
  EXPECT_EQ(frequency_argument(model, m), "{1-[1,1]-1}");
  EXPECT_TRUE(needs_best_effort(model, m));
  EXPECT_EQ(command_line(model, m),
            "co_up --graph=hand --order=BGGL --mode=switch --frequency='{1-[1,1]-1}' --dvfs=best-effort");
  EXPECT_EQ(frequency_argument(model, {"BBB", Mode::kPipeline, {2}}), "{2}");
  EXPECT_FALSE(needs_best_effort(model, {"BBB", Mode::kPipeline, {2}}));
  // A profile of a --split network plans runs of the same split graph.
  LayerProfile split = hand_profile();
  split.network.units = "ops";
  split.network.split = "1:2";
  EXPECT_EQ(command_line(CostModel(split), {"BBL", Mode::kPipeline, {0}}),
            "co_up --graph=hand --units=ops --split=1:2 --order=BBL --mode=pipeline");
}

}  // namespace
}  // namespace co_up::planner
