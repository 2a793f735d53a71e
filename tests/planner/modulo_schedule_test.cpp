// Modulo scheduling of a mapping's sub-graphs against a hand-computed schedule: the initiation
// interval, each processor's cyclic sequence (sub-graph, frame lag), the frame's length; a guard
// (a buffer shared in place) as a recurrence that raises the interval; the executor simulated
// running the sequences (period and latency by hand), and sequences it cannot run refused.
#include "planner/modulo_schedule.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "tests/planner/two_processor_dag.h"

namespace co_up::planner {
namespace {

// 0 -> {1, 2} -> 3; BLBB: sub-graphs s0 = {0} on B (2 us), s1 = {1} on L (6 us), s2 = {2, 3} on B
// (3 + 2 us), which reads s0 and s1. One frame alone (switch mode): s0 [0,2), s1 [2,8), s2 [8,13):
// 13 us, B idle 6 of them, L 7.
const std::vector<std::vector<uint32_t>> kDiamond = {{}, {0}, {0}, {1, 2}};

DagCostModel diamond_model(const CostModel& model, uint32_t frames = 0) {
  DagCostOptions options;
  options.pipeline_frames = frames;
  return DagCostModel(model, test::unit_dag_of(kDiamond), options);
}

TEST(ModuloSchedule, FillsOneFramesGapWithTheNextFramesWork) {
  const CostModel model(test::two_processor_profile({2, 9, 3, 2}, {9, 6, 9, 9}));
  const DagCostModel dag_model = diamond_model(model);
  const Mapping m{"BLBB", Mode::kSwitch, {}};
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us(m), 13);
  const std::vector<SubGraphCost> costs = dag_model.subgraph_costs(m);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[2].sources, (std::vector<uint32_t>{0, 1}));
  EXPECT_DOUBLE_EQ(costs[2].corun_us, 5);
  // B's work, 2 + 5 us, bounds the interval.
  EXPECT_DOUBLE_EQ(modulo_min_ii_us(costs, 2), 7);
  EXPECT_FALSE(modulo_schedule(costs, 2, 6.9).has_value());
  // At 7: s0 at 0 (B, phase [0,2)); s1 at 2 (L, [2,8) = phases [2,7) and [0,1)); s2 may start at
  // 8 = phase 1, where s0 is: the first free phase is 2, at 9, so s2 runs one cycle late (lag 1).
  const std::optional<ModuloSchedule> s = modulo_schedule(costs, 2, 7);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->ii_us, 7);
  EXPECT_EQ(s->start_us, (std::vector<double>{0, 2, 9}));
  EXPECT_DOUBLE_EQ(s->length_us, 14);
  const CyclicOrder expected = {{{0, 0}, {2, 1}}, {{1, 0}}};
  EXPECT_EQ(s->order, expected);
  // The front: 7 us at 14, then the first interval where s2 fits at 8 ([8,13) modulo ii clear of
  // s0's [0,2): ii >= 13; below, s2 starts later than 9): 13 us, the frame alone.
  const std::vector<ModuloSchedule> front = modulo_schedule_front(costs, 2, 14, 0.01);
  ASSERT_EQ(front.size(), 2u);
  EXPECT_DOUBLE_EQ(front[0].ii_us, 7);
  EXPECT_DOUBLE_EQ(front[0].length_us, 14);
  EXPECT_DOUBLE_EQ(front[1].length_us, 13);
  EXPECT_GE(front[1].ii_us, 13);
  EXPECT_LT(front[1].ii_us, 13 * 1.01);
}

TEST(ModuloSchedule, ExecutorRunningTheSequencesKeepsTheInterval) {
  const CostModel model(test::two_processor_profile({2, 9, 3, 2}, {9, 6, 9, 9}));
  const DagCostModel dag_model = diamond_model(model, 8);
  const Mapping m{"BLBB", Mode::kOverlap, {}};
  // B: s0 f0 [0,2), s0 f1 [2,4) (cycle 0's s2 has no frame -1), s2 f0 [8,13), s0 f2 [13,15),
  // s2 f1 [15,20) (L: s1 f0 [2,8), f1 [8,14), f2 [15,21)), s0 f3 [20,22), s2 f2 [22,27), ...: B
  // never idles after 8, a frame every 7 us; latencies 13, 18, then 14 (27 - 13, 34 - 20, ...).
  const Prediction p = dag_model.predict_cyclic(m, {{{0, 0}, {2, 1}}, {{1, 0}}});
  EXPECT_DOUBLE_EQ(p.period_us, 7);
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.014);
  // Lag 0 for s2 is the switch schedule repeated: a frame every 13 us (s2 waits for s1 each time).
  const Prediction serial = dag_model.predict_cyclic(m, {{{0, 0}, {2, 0}}, {{1, 0}}});
  EXPECT_DOUBLE_EQ(serial.period_us, 13);
  EXPECT_DOUBLE_EQ(serial.latency_ms, 0.013);
  // s2 before s0 in one cycle waits for a frame that s0 has not started: a deadlock.
  EXPECT_THROW(dag_model.predict_cyclic(m, {{{2, 0}, {0, 0}}, {{1, 0}}}), InputError);
  // Every sub-graph once, on its own processor.
  EXPECT_THROW(dag_model.predict_cyclic(m, {{{0, 0}}, {{1, 0}}}), InputError);
  EXPECT_THROW(dag_model.predict_cyclic(m, {{{0, 0}, {2, 1}, {1, 0}}, {}}), InputError);
  EXPECT_THROW(dag_model.predict_cyclic(m, {{{0, 0}, {2, 1}, {2, 1}}, {{1, 0}}}), InputError);
}

TEST(ModuloSchedule, GuardIsARecurrenceOverOneFrame) {
  // a on B (4 us) feeds b on L (4 us) through a buffer shared in place: a runs frame g only once b
  // finished g - 1, so a + ii >= b's end = 8.
  std::vector<SubGraphCost> costs(2);
  costs[0] = {0, 0, 0, 4, 4, {}, {1}};
  costs[1] = {1, 1, 1, 4, 4, {0}, {0}};
  EXPECT_DOUBLE_EQ(modulo_min_ii_us(costs, 2), 4);
  EXPECT_FALSE(modulo_schedule(costs, 2, 7.9).has_value());
  const std::optional<ModuloSchedule> s = modulo_schedule(costs, 2, 8);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->start_us, (std::vector<double>{0, 4}));
  EXPECT_EQ(s->order, (CyclicOrder{{{0, 0}}, {{1, 0}}}));
  // Without the guard it pipelines at 4: b of frame g beside a of frame g + 1 (lag 1).
  costs[0].guards.clear();
  costs[1].guards.clear();
  const std::optional<ModuloSchedule> free = modulo_schedule(costs, 2, 4);
  ASSERT_TRUE(free.has_value());
  EXPECT_EQ(free->order, (CyclicOrder{{{0, 0}}, {{1, 1}}}));
}

}  // namespace
}  // namespace co_up::planner
