// Layer splits as planning choices (planner/split_plan.h, graph/split_units.h): the groups found
// by name, the sub-graph cuts around a spread split, the DAG model's latency of a spread split
// against a hand-computed schedule, the exact split search against brute force over every order
// of the split units, and the switch-mode wake-up fit.
#include "planner/split_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "graph/split_units.h"
#include "planner/search/search_support.h"
#include "planner/switch_edge_fit.h"
#include "planner/synthetic_profile.h"
#include "tests/planner/two_processor_dag.h"

namespace co_up::planner {
namespace {

// B and L on separate cores, one name and time per unit (the same on both unless `l` is given),
// transfers `send`/`receive` on every boundary, switch-mode wake-up `edge` per cross edge.
LayerProfile profile(const std::vector<std::string>& names, const std::vector<double>& b, std::vector<double> l = {},
                     double send = 0, double receive = 0, double edge = 0) {
  LayerProfile p = test::two_processor_profile(b, std::move(l), send, receive);
  for (size_t i = 0; i < names.size(); ++i) p.network.layers[i].name = names[i];
  if (edge > 0) p.set_switch_edge('B', 'L', edge);
  return p;
}

graph::UnitDag dag(std::vector<std::vector<uint32_t>> predecessors) {
  return test::unit_dag_of(std::move(predecessors));
}

// x -> {c#1, c#2} -> c#concat -> y: one layer split in two, --units=branches.
const std::vector<std::string> kOneSplit = {"x", "c#1", "c#2", "c#concat", "y"};
const std::vector<std::vector<uint32_t>> kOneSplitDag = {{}, {0}, {0}, {1, 2}, {3}};

TEST(SplitUnits, GroupsAreRunsOfNumberedPartsWithTheirConcat) {
  const std::vector<graph::SplitUnitGroup> groups =
      graph::find_split_units({"a", "c#1", "c#2", "c#concat", "d", "e#1", "e#2", "e#3", "f#1", "g#2", "h#x"});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].layer, "c");
  EXPECT_EQ(groups[0].first, 1u);
  EXPECT_EQ(groups[0].parts, 2u);
  EXPECT_TRUE(groups[0].concat_unit);
  EXPECT_EQ(groups[1].layer, "e");
  EXPECT_EQ(groups[1].first, 5u);
  EXPECT_EQ(groups[1].parts, 3u);
  EXPECT_FALSE(groups[1].concat_unit);  // --units=ops: the Concat is in e#3
}

TEST(SplitUnits, ASpreadSplitCutsSubGraphsAroundItsPartsAndConcat) {
  const std::vector<graph::SplitUnitGroup> groups = graph::find_split_units(kOneSplit);
  EXPECT_EQ(graph::split_subgraph_starts(groups, "BBBBB"), std::vector<bool>(5, false));
  EXPECT_EQ(graph::split_subgraph_starts(groups, "BBLBB"), (std::vector<bool>{false, true, true, true, false}));
  // The Concat's letter alone does not spread the layer.
  EXPECT_EQ(graph::split_subgraph_starts(groups, "BBBLB"), std::vector<bool>(5, false));
}

TEST(SplitPlan, TheModelRunsSpreadPartsAtOnceAsHandComputed) {
  // x 10, parts 20 each, Concat 2, y 5; send 1, receive 2 per cross edge; wake-up 3 (profile).
  const CostModel model(profile(kOneSplit, {10, 20, 20, 2, 5}, {}, 1, 2, 3));
  const DagCostModel dm(model, dag(kOneSplitDag));
  // Unsplit: 10 + 20 + 20 + 2 + 5.
  EXPECT_DOUBLE_EQ(dm.switch_latency_us({"BBBBB", Mode::kSwitch, {}}), 57);
  // BBLBB: sub-graphs {x} {c#1} on B, {c#2} on L, {c#concat, y} on B (a spread split cuts around
  // its parts and Concat; the runtime copies across every cut, B's own included). B x sends to L
  // and to c#1 (1 + 1): [0, 12]; B c#1 receives (2) + 20 + sends (1): [12, 35]; L c#2 receives x
  // (2) + wake-up (3) + 20 and sends (1): [12, 38]; B c#concat receives c#1 (2) and c#2 (2 +
  // wake-up 3) + 2, then y: [38, 52].
  EXPECT_DOUBLE_EQ(dm.switch_latency_us({"BBLBB", Mode::kSwitch, {}}), 52);
  // Without the profile's wake-up, 6 less (two cross edges); with an explicit one of 10, 14 more.
  DagCostModel no_wakeup = dm;
  no_wakeup.set_switch_edge_us(0);
  EXPECT_DOUBLE_EQ(no_wakeup.switch_latency_us({"BBLBB", Mode::kSwitch, {}}), 46);
  no_wakeup.set_switch_edge_us(10);
  EXPECT_DOUBLE_EQ(no_wakeup.switch_latency_us({"BBLBB", Mode::kSwitch, {}}), 66);
  // The split search picks the spread plan here, and keeps the layer whole when the wake-up eats
  // the gain (a wake-up of 10 per edge: 66 > 57).
  const SplitPlanResult spread = plan_splits(dm, "BBBBB");
  EXPECT_TRUE(spread.exact);
  EXPECT_DOUBLE_EQ(dm.switch_latency_us(spread.best.mapping), 52);
  EXPECT_EQ(spread.spread_groups, 1u);
  EXPECT_EQ(spread.best.source, "split-exact");
  const CostModel slow_wakeup(profile(kOneSplit, {10, 20, 20, 2, 5}, {}, 1, 2, 10));
  const SplitPlanResult whole = plan_splits(DagCostModel(slow_wakeup, dag(kOneSplitDag)), "BBBBB");
  EXPECT_EQ(whole.best.mapping.order, "BBBBB");
  EXPECT_EQ(whole.spread_groups, 0u);
}

// Brute force: every order that differs from `base` only in the groups' units.
double brute_force(const DagCostModel& dm, const std::string& base, const std::vector<SplitGroup>& groups, Mode mode) {
  std::vector<uint32_t> free_units;
  for (const SplitGroup& g : groups) {
    for (uint32_t i = 0; i < g.parts + (g.concat_unit ? 1u : 0u); ++i) free_units.push_back(g.first + i);
  }
  double best = kInf;
  for (uint64_t bits = 0; bits < (uint64_t{1} << free_units.size()); ++bits) {
    std::string order = base;
    for (size_t k = 0; k < free_units.size(); ++k) order[free_units[k]] = (bits >> k) & 1 ? 'L' : 'B';
    const Mapping m{order, mode, {}};
    best = std::min(best, mode == Mode::kSwitch ? dm.switch_latency_us(m) : dm.pipeline_period_us(m));
  }
  return best;
}

TEST(SplitPlan, ExactSearchEqualsBruteForceOverTheSplitUnits) {
  // a -> s#1,s#2 -> s#concat -> t -> u#1,u#2,u#3 -> u#concat -> v -> w#1,w#2 (Concat in w#2).
  const std::vector<std::string> names = {"a", "s#1", "s#2", "s#concat", "t", "u#1", "u#2", "u#3", "u#concat", "v",
                                          "w#1", "w#2"};
  const std::vector<std::vector<uint32_t>> preds = {{}, {0}, {0}, {1, 2}, {3}, {4}, {4}, {4}, {5, 6, 7}, {8},
                                                    {9}, {9, 10}};
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SyntheticSpec spec;
    spec.layers = static_cast<uint32_t>(names.size());
    spec.processors = 2;
    spec.shared_hosts = false;
    spec.seed = seed;
    spec.handoff_us = 30;
    LayerProfile p = make_synthetic_profile(spec);
    for (size_t i = 0; i < names.size(); ++i) p.network.layers[i].name = names[i];
    p.set_switch_edge('B', 'L', static_cast<double>(seed) * 7);
    const CostModel model(p);
    const DagCostModel dm(model, dag(preds));
    const std::vector<SplitGroup> groups = split_groups(model);
    ASSERT_EQ(groups.size(), 3u);
    for (Mode mode : {Mode::kSwitch, Mode::kPipeline}) {
      for (const std::string base : {"BBBBBBBBBBBB", "LLLLBLLLLLLB"}) {
        SplitPlanOptions options;
        options.mode = mode;
        const SplitPlanResult r = plan_splits(dm, base, options);
        ASSERT_TRUE(r.exact);
        const double got = mode == Mode::kSwitch ? dm.switch_latency_us(r.best.mapping)
                                                 : dm.pipeline_period_us(r.best.mapping);
        EXPECT_DOUBLE_EQ(got, brute_force(dm, base, groups, mode)) << "seed " << seed << " " << base;
        for (uint32_t u : {0u, 4u, 9u}) EXPECT_EQ(r.best.mapping.order[u], base[u]) << "unit outside the groups";
        // The descent (no exhaustive space) never does worse than its start.
        options.exhaustive_limit = 0;
        const SplitPlanResult d = plan_splits(dm, base, options);
        EXPECT_FALSE(d.exact);
        const double start = mode == Mode::kSwitch ? dm.switch_latency_us({base, mode, {}})
                                                   : dm.pipeline_period_us({base, mode, {}});
        const double descent = mode == Mode::kSwitch ? dm.switch_latency_us(d.best.mapping)
                                                     : dm.pipeline_period_us(d.best.mapping);
        EXPECT_LE(descent, start);
        EXPECT_GE(descent, got);
      }
    }
  }
}

// A layer cut into 70 parts has 2^71 assignments: more than a size_t counts. The search still
// ends, by descent one unit at a time, and spreads the parts over both processors.
TEST(SplitPlan, ALayerCutIntoManyPartsIsSearchedUnitByUnit) {
  std::vector<std::string> names = {"x"};
  std::vector<double> times = {1};
  std::vector<std::vector<uint32_t>> preds = {{}};
  std::vector<uint32_t> parts;
  for (int i = 1; i <= 70; ++i) {
    names.push_back("c#" + std::to_string(i));
    times.push_back(10);
    preds.push_back({0});
    parts.push_back(static_cast<uint32_t>(i));
  }
  names.push_back("c#concat");
  times.push_back(1);
  preds.push_back(parts);
  const CostModel model(profile(names, times));
  const DagCostModel dm(model, dag(preds));
  const std::vector<SplitGroup> groups = split_groups(model);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_GT(split_choice_count(groups[0], 2), 1e21);
  const std::string base(names.size(), 'B');
  const SplitPlanResult r = plan_splits(dm, base, {});
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.spread_groups, 1u);
  EXPECT_LT(dm.switch_latency_us(r.best.mapping), dm.switch_latency_us({base, Mode::kSwitch, {}}));
  EXPECT_LT(r.evaluated, 10'000u);
}

TEST(SplitPlan, ABadStartOrderIsAnInputError) {
  const CostModel model(profile(kOneSplit, {10, 20, 20, 2, 5}));
  const DagCostModel dm(model, dag(kOneSplitDag));
  EXPECT_THROW(plan_splits(dm, "BBB"), InputError);
  EXPECT_THROW(plan_splits(dm, "BBXBB"), InputError);
}

TEST(SwitchEdgeFit, RecoversTheWakeUpThatMadeTheMeasurements) {
  const CostModel model(profile(kOneSplit, {10, 20, 20, 2, 5}, {}, 1, 2));
  const DagCostModel dm(model, dag(kOneSplitDag));
  // "Measured" with a wake-up of 12 us per edge, everything 1.5x slower (a loaded host).
  DagCostModel truth = dm;
  truth.set_switch_edge_us(12);
  const std::vector<std::string> spread = {"BBLBB", "BLBLB"};
  std::vector<double> measured;
  for (const std::string& o : spread) measured.push_back(1.5 * truth.switch_latency_us({o, Mode::kSwitch, {}}));
  EXPECT_NEAR(fit_switch_edge(dm, "BBBBB", 1.5 * 57, spread, measured), 12, 0.2);
  // Faster than the model says: no negative wake-up.
  EXPECT_DOUBLE_EQ(fit_switch_edge(dm, "BBBBB", 57, {"BBLBB"}, {30}), 0);
  EXPECT_THROW(fit_switch_edge(dm, "BBBBB", 57, {"BBLBB"}, {}), InputError);
}

TEST(SwitchEdgeFit, RecoversTheCostPerMegabyteThatMadeTheMeasurements) {
  LayerProfile p = profile(kOneSplit, {10, 20, 20, 2, 5}, {}, 1, 2);
  for (ProfileLayer& l : p.network.layers) l.output_bytes = 500'000;
  const CostModel model(p);
  const DagCostModel dm(model, dag(kOneSplitDag));
  DagCostModel truth = dm;
  truth.set_switch_edge_mb_us(30);  // 15 us per edge of 0.5 MB
  const std::vector<std::string> spread = {"BBLBB", "BLBLB"};
  std::vector<double> measured;
  for (const std::string& o : spread) measured.push_back(truth.switch_latency_us({o, Mode::kSwitch, {}}));
  EXPECT_NEAR(fit_switch_edge(dm, "BBBBB", 57, spread, measured, SwitchEdgeShape::kPerMegabyte), 30, 0.2);
  EXPECT_NEAR(fit_switch_edge(dm, "BBBBB", 57, spread, measured, SwitchEdgeShape::kPerEdge), 15, 0.2);
  // The profile keeps it per pair.
  p.set_switch_edge_mb('B', 'L', 30);
  const LayerProfile back = parse_layer_profile(layer_profile_json(p), "round trip");
  ASSERT_NE(back.find_switch_edge_mb('L', 'B'), nullptr);
  EXPECT_DOUBLE_EQ(back.find_switch_edge_mb('L', 'B')->us, 30);
}

// Runs "measured" with `mb_us` per megabyte, each scaled by its own load factor; `disturbed`
// (index) has its first spread order 40 % slower (something else ran during that one frame run).
std::vector<SwitchRun> switch_runs(const DagCostModel& dm, double mb_us, const std::vector<double>& loads,
                                   size_t disturbed) {
  DagCostModel truth = dm;
  truth.set_switch_edge_mb_us(mb_us);
  std::vector<SwitchRun> runs;
  for (size_t r = 0; r < loads.size(); ++r) {
    SwitchRun run{loads[r] * truth.switch_latency_us({"BBBBB", Mode::kSwitch, {}}), {}};
    for (const char* o : {"BBLBB", "BLBLB"}) run.spread_us.push_back(loads[r] * truth.switch_latency_us({o, Mode::kSwitch, {}}));
    if (r == disturbed) run.spread_us[0] *= 1.4;
    runs.push_back(run);
  }
  return runs;
}

// The one-split network with 0.5 MB per unit output, and its two spread orders.
class SwitchEdgeRuns : public ::testing::Test {
 protected:
  static LayerProfile megabyte_profile() {
    LayerProfile p = profile(kOneSplit, {10, 20, 20, 2, 5}, {}, 1, 2);
    for (ProfileLayer& l : p.network.layers) l.output_bytes = 500'000;
    return p;
  }
  const CostModel model{megabyte_profile()};
  const DagCostModel dm{model, dag(kOneSplitDag)};
  const std::vector<std::string> spread = {"BBLBB", "BLBLB"};
};

TEST_F(SwitchEdgeRuns, OneDisturbedRunMovesNeitherTheValueNorItsInterval) {
  const std::vector<double> loads = {1.0, 1.1, 0.95, 1.3, 1.0, 1.05, 0.9, 1.2, 1.0};
  const std::vector<SwitchRun> runs = switch_runs(dm, 30, loads, 3);
  // One ratio of the disturbed run alone is far off: what a single-run fit stored.
  EXPECT_GT(fit_switch_edge(dm, "BBBBB", runs[3].alone_us, spread, runs[3].spread_us, SwitchEdgeShape::kPerMegabyte), 35);
  const SwitchEdgeEstimate e = fit_switch_edge_runs(dm, "BBBBB", spread, runs, SwitchEdgeShape::kPerMegabyte);
  EXPECT_NEAR(e.value, 30, 0.2);
  EXPECT_NEAR(e.low, 30, 0.2);
  EXPECT_NEAR(e.high, 30, 0.2);
  EXPECT_EQ(e.runs, 9u);
  EXPECT_GE(e.confidence, 0.95);
  EXPECT_TRUE(e.significant());
  EXPECT_NEAR(stored_value(e), 30, 0.2);
  EXPECT_EQ(describe(e, " us per MB").rfind("30.", 0), 0u) << describe(e, " us per MB");
  EXPECT_THROW(fit_switch_edge_runs(dm, "BBBBB", spread, {}, SwitchEdgeShape::kPerMegabyte), InputError);
}

TEST_F(SwitchEdgeRuns, ACostTheRunsCannotTellFromNoneIsNotStored) {
  // No cost per megabyte, but each spread run measured with noise of a few percent either way:
  // some runs fit a cost, the others none.
  const std::vector<double> noise = {1.03, 0.98, 1.04, 0.97, 1.02, 0.99, 1.05, 0.96, 1.01};
  std::vector<SwitchRun> runs = switch_runs(dm, 0, std::vector<double>(noise.size(), 1.0), noise.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    for (double& us : runs[r].spread_us) us *= noise[r];
  }
  const SwitchEdgeEstimate e = fit_switch_edge_runs(dm, "BBBBB", spread, runs, SwitchEdgeShape::kPerMegabyte);
  EXPECT_GT(e.value, 0);  // the median run still fits something
  EXPECT_GT(e.high, e.value);
  EXPECT_FALSE(e.significant());
  EXPECT_DOUBLE_EQ(stored_value(e), 0);
  const std::string text = describe(e, " us per MB");
  EXPECT_EQ(text.rfind("no cost stored: ", 0), 0u) << text;
  EXPECT_NE(text.find("not distinguishable from none"), std::string::npos) << text;
}

TEST(SwitchEdgeFit, TheProfileKeepsTheWakeUpPerPairAndTheModelUsesIt) {
  LayerProfile p = profile(kOneSplit, {10, 20, 20, 2, 5}, {}, 1, 2, 3);
  const LayerProfile back = parse_layer_profile(layer_profile_json(p), "round trip");
  ASSERT_NE(back.find_switch_edge('L', 'B'), nullptr);
  EXPECT_DOUBLE_EQ(back.find_switch_edge('L', 'B')->us, 3);
  std::string json = layer_profile_json(p);
  EXPECT_NE(json.find("\"switch_edge_us\""), std::string::npos);
  // Absent (older profiles): no wake-up.
  p.switch_edges.clear();
  EXPECT_EQ(layer_profile_json(p).find("switch_edge_us"), std::string::npos);
  const CostModel model(p);
  EXPECT_DOUBLE_EQ(DagCostModel(model, dag(kOneSplitDag)).switch_latency_us({"BBLBB", Mode::kSwitch, {}}), 46);
  // A pair naming one processor twice is refused, naming the key.
  json.replace(json.find("\"BL\": 3"), 7, "\"BB\": 3");
  EXPECT_THROW(parse_layer_profile(json, "bad"), InputError);
}

}  // namespace
}  // namespace co_up::planner
