// Exit thresholds on labelled validation scores, and the stage mapping search: reproducible per
// seed, its front non-dominated, its baselines as defined.
#include "planner/stage_plan_search.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace co_up::planner {
namespace {

// 3 frames, 2 exits, 2 classes. Exit 0's confidences: 0.881 (frame 0), 0.5, 0.953.
ExitScores small_scores() {
  ExitScores s;
  s.frames = 3;
  s.exits = 2;
  s.classes = 2;
  s.logits = {2, 0, 0, 1,   // frame 0: exit 0 says 0, exit 1 says 1
              0, 0, 1, 0,   // frame 1: exit 0 unsure (arg-max 0), exit 1 says 0
              0, 3, 0, 1};  // frame 2: both say 1
  s.labels = {0, 0, 1};
  return s;
}

TEST(ExitThresholds, FramesStopAtTheFirstConfidentExit) {
  const ExitScores s = small_scores();
  ExitOutcome o = evaluate_exit_thresholds(s, {0.85});
  EXPECT_DOUBLE_EQ(o.accuracy, 1.0);
  EXPECT_EQ(o.exit_fraction, (std::vector<double>{2.0 / 3, 1.0 / 3}));
  o = evaluate_exit_thresholds(s, {0.9});  // frame 0 goes on to exit 1, which is wrong
  EXPECT_DOUBLE_EQ(o.accuracy, 2.0 / 3);
  EXPECT_EQ(o.exit_fraction, (std::vector<double>{1.0 / 3, 2.0 / 3}));
  o = evaluate_exit_thresholds(s, {2.0});  // never early
  EXPECT_DOUBLE_EQ(o.accuracy, 2.0 / 3);
  EXPECT_EQ(o.exit_fraction, (std::vector<double>{0, 1}));
  EXPECT_THROW(evaluate_exit_thresholds(s, {}), InputError);
}

// Two stages on processors A (fast, hungry) and B (slow, frugal), two levels each.
StageSearchInput small_input() {
  StageSearchInput in;
  in.reuse = {{1, 1}, {0, 0}};
  in.scores = small_scores();
  for (char letter : {'A', 'B'}) {
    for (int level : {1, 2}) {
      ProcessorOption o;
      o.letter = letter;
      o.level = level;
      const double speed = (letter == 'A' ? 2.0 : 1.0) * level;
      o.power_w = (letter == 'A' ? 3.0 : 1.0) * level;
      o.tau_ms = {{1 / speed, 2 / speed, 0.1 / speed}, {2 / speed, 4 / speed, 0.1 / speed}};
      in.options.push_back(o);
    }
  }
  in.transfer_ms[{'A', 'B'}] = {{0.2, 0.3}, {0.2, 0.3}};
  in.transfer_ms[{'B', 'A'}] = {{0.4, 0.5}, {0.4, 0.5}};
  in.generations = 15;
  in.population = 8;
  return in;
}

std::string describe(const std::vector<StageCandidate>& cs) {
  std::string s;
  for (const StageCandidate& c : cs) {
    s += c.order + std::to_string(c.levels[0]) + std::to_string(c.levels[1]) + ":" +
         std::to_string(c.thresholds[0]) + ":" + std::to_string(c.latency_ms) + ":" + std::to_string(c.energy_mj) + ";";
  }
  return s;
}

TEST(StageSearch, ReproduciblePerSeed) {
  StageSearchInput in = small_input();
  const std::string first = describe(search_stage_mappings(in).front);
  EXPECT_EQ(describe(search_stage_mappings(in).front), first);
  EXPECT_FALSE(first.empty());
}

TEST(StageSearch, FrontIsNonDominatedAndBaselinesAreAsDefined) {
  const StageSearchInput in = small_input();
  const StageSearchResult r = search_stage_mappings(in);
  for (const StageCandidate& a : r.front) {
    EXPECT_NE(a.order[0], a.order[1]);  // Eq. 7: distinct processors
    for (const StageCandidate& b : r.front) {
      const bool dominates = b.latency_ms <= a.latency_ms && b.energy_mj <= a.energy_mj &&
                             b.accuracy >= a.accuracy &&
                             (b.latency_ms < a.latency_ms || b.energy_mj < a.energy_mj || b.accuracy > a.accuracy);
      EXPECT_FALSE(dominates) << describe({b}) << " dominates " << describe({a});
    }
  }
  ASSERT_EQ(r.single_processor.size(), 4u);
  // A at level 2: every sub-layer one after another, 9.2 / 4 ms; at 12 W.
  const StageCandidate& a2 = r.single_processor[1];
  EXPECT_EQ(a2.order, "AA");
  EXPECT_DOUBLE_EQ(a2.latency_ms, 9.2 / 4);
  EXPECT_DOUBLE_EQ(a2.energy_mj, 9.2 / 4 * 6);
  EXPECT_DOUBLE_EQ(a2.accuracy, 2.0 / 3);
  ASSERT_EQ(r.static_split.size(), 2u);  // AB and BA at their fastest levels, no early exit
  for (const StageCandidate& c : r.static_split) {
    EXPECT_EQ(c.exit_fraction, (std::vector<double>{0, 1}));
    EXPECT_EQ(c.levels, (std::vector<int>{2, 2}));
  }
  // AB: stage 1 on A (speed 4): T = .25, .75, .775; stage 2 on B (speed 2): T = 1,
  // 2 + max(1, .25 + .2) = 3, .05 + max(3, .75 + .3) = 3.05.
  EXPECT_EQ(r.static_split[0].order, "AB");
  EXPECT_DOUBLE_EQ(r.static_split[0].latency_ms, 3.05);
}

TEST(StageSearch, FewerProcessorsThanStagesIsAnInputError) {
  StageSearchInput in = small_input();
  in.options.resize(2);  // A only
  EXPECT_THROW(search_stage_mappings(in), InputError);
}

}  // namespace
}  // namespace co_up::planner
