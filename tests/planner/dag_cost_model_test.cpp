// DAG cost model: one frame's latency over the sub-graph DAG equals hand-computed schedules of the
// executor on small graphs (branches on different processors overlap, a sub-graph publishes when
// it ends, one processor runs its ready sub-graphs lowest index first), with transfers and
// per edge; pipelines as runs of a few frames (a hand-off delays the reader, throughput from the
// completions as a run measures it); in switch and overlap mode layers computed while the other
// processor computes take the pair's work factor.
#include "planner/dag_cost_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "planner/synthetic_profile.h"
#include "tests/planner/two_processor_dag.h"

namespace co_up::planner {
namespace {

// B and L on separate cores, the given times per unit, transfers `send`/`receive` on every
// boundary (0: none), hand-off `handoff`, no input transfer.
LayerProfile profile(const std::vector<double>& b, const std::vector<double>& l, double send = 0,
                     double receive = 0, double handoff = 0) {
  LayerProfile p = test::two_processor_profile(b, l, send, receive);
  if (handoff > 0) p.set_handoff('B', 'L', handoff);
  return p;
}

graph::UnitDag dag(std::vector<std::vector<uint32_t>> predecessors) {
  return test::unit_dag_of(std::move(predecessors));
}

// 0 -> {1, 2} -> 3
const std::vector<std::vector<uint32_t>> kDiamond = {{}, {0}, {0}, {1, 2}};

TEST(DagCostModel, BranchesOnTwoProcessorsOverlap) {
  const CostModel model(profile({10, 20, 30, 5}, {100, 25, 40, 8}));
  const DagCostModel dag_model(model, dag(kDiamond));
  // BLBL: B 0 [0,10]; L 1 [10,35]; B 2 [10,40]; L 3 waits for 2: [40,48].
  const Mapping m{"BLBL", Mode::kSwitch, {}};
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us(m), 48);
  EXPECT_DOUBLE_EQ(dag_model.predict(m).latency_ms, 0.048);
  EXPECT_DOUBLE_EQ(model.predict(m).latency_ms, 0.073);  // the chain model adds the branches up
  const FrameSchedule s = dag_model.schedule(m);
  ASSERT_EQ(s.subgraphs.size(), 4u);
  EXPECT_DOUBLE_EQ(s.subgraphs[1].start_us, 10);
  EXPECT_DOUBLE_EQ(s.subgraphs[1].end_us, 35);
  EXPECT_DOUBLE_EQ(s.subgraphs[2].start_us, 10);
  EXPECT_DOUBLE_EQ(s.subgraphs[3].start_us, 40);
  EXPECT_EQ(s.critical_path, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(s.processors, "BL");
  EXPECT_EQ(s.busy_us, (std::vector<double>{40, 33}));
  EXPECT_EQ(s.idle_us, (std::vector<double>{8, 15}));
}

TEST(DagCostModel, ASubGraphPublishesOnlyWhenItEnds) {
  const CostModel model(profile({10, 20, 30, 5}, {100, 25, 40, 8}));
  const DagCostModel dag_model(model, dag(kDiamond));
  // BBLB: B {0,1} [0,30]; L 2 needs unit 0, published at 30: [30,70]; B 3 [70,75].
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BBLB", Mode::kSwitch, {}}), 75);
  // BLBB: B 0 [0,10]; L 1 [10,35]; B {2,3} needs unit 1 too: [35,70].
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BLBB", Mode::kSwitch, {}}), 70);
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BBBB", Mode::kSwitch, {}}), 65);
}

TEST(DagCostModel, OneProcessorRunsItsReadySubGraphsLowestIndexFirst) {
  // 0 -> {1, 2, 3} -> 4, BLBLB: after B 0 [0,10], L runs 1 [10,30] then 3 [30,70]; B runs 2
  // [10,20]; B 4 waits for 3: [70,71]. Critical path 0 -> 1 -> 3 (held L) -> 4.
  const CostModel model(profile({10, 5, 10, 5, 1}, {50, 20, 50, 40, 50}));
  const DagCostModel dag_model(model, dag({{}, {0}, {0}, {0}, {1, 2, 3}}));
  const Mapping m{"BLBLB", Mode::kSwitch, {}};
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us(m), 71);
  EXPECT_EQ(dag_model.schedule(m).critical_path, (std::vector<uint32_t>{0, 1, 3, 4}));
}

TEST(DagCostModel, TransfersAndHandOffsArePerEdge) {
  // Send 1 / receive 2 per edge between sub-graphs, also between two sub-graphs of one processor
  // (the runtime copies those too): B 0 [0,12] (sends unit 0 to L and to B's sub-graph 2); L 1
  // receives (2) + 25 + sends (1): [12,40]; B 2 receives (2) + 30 + sends (1): [12,45]; L 3
  // receives units 1 and 2 (2 + 2) + 8 after 45: [45,57].
  const CostModel model(profile({10, 20, 30, 5}, {100, 25, 40, 8}, 1, 2));
  const DagCostModel dag_model(model, dag(kDiamond));
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BLBL", Mode::kSwitch, {}}), 57);
  // An extra per-edge cost in switch mode (a waiting thread's wake-up) on each receiving side of
  // a cross-processor edge only: L 1 [12,43]; L 3 [45,60].
  DagCostModel with_wakeup(model, dag(kDiamond), DagCostOptions{3});
  EXPECT_DOUBLE_EQ(with_wakeup.switch_latency_us({"BLBL", Mode::kSwitch, {}}), 60);
  // Pipeline: the copies as in switch mode, the hand-off of 4 no processor's work (a delay, see
  // AHandOffDelaysThePipelinesReader). Busy B = 10 + 30 + 3 x 1 (sends) + 2 (receive) = 45,
  // L = 25 + 8 + 1 + 3 x 2 = 40: the busiest resource 45.
  const CostModel handoff(profile({10, 20, 30, 5}, {100, 25, 40, 8}, 1, 2, 4));
  const DagCostModel pipelined(handoff, dag(kDiamond));
  const Mapping m{"BLBL", Mode::kPipeline, {}};
  EXPECT_DOUBLE_EQ(pipelined.pipeline_period_us(m), 45);
  const Prediction p = pipelined.predict(m);
  EXPECT_EQ(p.resources.size(), 2u);
  EXPECT_DOUBLE_EQ(p.resources[0].busy_us + p.resources[1].busy_us, 85);
  // Queueing: frames wait for busy stages, never less than one frame alone (with its hand-offs:
  // B 0 [0,12], L 1 from 16 [16,44], B 2 [12,45], L 3 from max(44, 45 + 4) [49,61]).
  EXPECT_GE(p.latency_ms * 1000, 61 - 1e-9);
}

// A pipeline's hand-off (the profile's handoff_us of the pair) is the time between a sub-graph
// publishing a frame and its reader on the other processor taking it: a delay on the edge, not
// time either processor spends (each has other frames' sub-graphs to run meanwhile).
TEST(DagCostModel, AHandOffDelaysThePipelinesReader) {
  DagCostOptions three;
  three.pipeline_frames = 3;
  // B 10 then L 20 per frame, hand-off 5, 3 frames admitted at once (L holds 3 in its receiver).
  // B: [0,10] [10,20] [20,30]; L: frame 0 from 10 + 5 [15,35], frame 1 (there at 25) [35,55],
  // frame 2 [55,75]. Latencies 35, 45, 55: median 45; 2 completions in 75 - 35 = 40 us.
  // (As busy time on both sides it would be 15 + 25 per frame: latencies 40, 50, 60, period 25.)
  const CostModel slow_reader(profile({10, 100}, {100, 20}, 0, 0, 5));
  const DagCostModel a(slow_reader, dag({{}, {0}}), three);
  const Prediction pa = a.predict({"BL", Mode::kPipeline, {}});
  EXPECT_DOUBLE_EQ(pa.latency_ms, 0.045);
  EXPECT_DOUBLE_EQ(pa.period_us, 20);
  EXPECT_DOUBLE_EQ(pa.throughput_fps, 1e6 / 20);
  EXPECT_DOUBLE_EQ(a.pipeline_period_us({"BL", Mode::kPipeline, {}}), 20);
  // B 20 then L 10: L waits for every frame. B [0,20] [20,40] [40,60]; L [25,35] [45,55] [65,75]:
  // every frame 35 us, one every 20 us (the delay costs latency, not throughput).
  const CostModel fast_reader(profile({20, 100}, {100, 10}, 0, 0, 5));
  const DagCostModel b(fast_reader, dag({{}, {0}}), three);
  const Prediction pb = b.predict({"BL", Mode::kPipeline, {}});
  EXPECT_DOUBLE_EQ(pb.latency_ms, 0.035);
  EXPECT_DOUBLE_EQ(pb.period_us, 20);
  // Switch mode has no hand-off: B [0,20], L [20,30].
  EXPECT_DOUBLE_EQ(b.switch_latency_us({"BL", Mode::kSwitch, {}}), 30);
}

// Pipeline throughput as profiler::summarize measures a run: completions after the first over
// the time from the first to the last. A short run's first frame ends late, its processor having
// run later frames' early sub-graphs meanwhile, so the rate is above the busiest resource's.
TEST(DagCostModel, PipelineThroughputIsTheSimulatedRunsAsMeasured) {
  DagCostOptions three;
  three.pipeline_frames = 3;
  // Chain BLB: B 10, L 5, B 10. B runs unit 0 of frame 0 [0,10], of frame 1 [10,20] (unit 2 of
  // frame 0 waits for L [10,15] and B is busy), unit 2 of frame 0 [20,30] (the oldest frame
  // first), L frame 1 [20,25], B unit 2 of frame 1 [30,40], unit 0 of frame 2 [40,50], L [50,55],
  // B [55,65]. Ends 30, 40, 65: 2 completions in 35 us, 17.5 us each, while B is busy 20 us a
  // frame. Starts 0, 10, 40: latencies 30, 30, 25, median 30.
  const CostModel model(profile({10, 100, 10}, {100, 5, 100}));
  const DagCostModel dag_model(model, dag({{}, {0}, {1}}), three);
  const Mapping m{"BLB", Mode::kPipeline, {}};
  const Prediction p = dag_model.predict(m);
  EXPECT_DOUBLE_EQ(p.period_us, 17.5);
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.030);
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us(m), 20);  // the searches' objective and bound
  // By default the steady state: B, the busiest, never idles once the pipeline is full.
  EXPECT_DOUBLE_EQ(DagCostModel(model, dag({{}, {0}, {1}})).predict(m).period_us, 20);
}

// The executor's cost per sub-graph run in pipeline mode (the profile's pipeline_subgraph_us,
// planner/pipeline_cost_fit.h): work of that sub-graph's processor, so it counts in the busiest
// resource as in the simulated run; switch mode does not charge it.
TEST(DagCostModel, APipelineChargesItsProcessorPerSubGraphRun) {
  LayerProfile p = profile({10, 100, 10}, {100, 5, 100});
  p.set_pipeline_costs('B', 'L', 2, 0);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag({{}, {0}, {1}}));
  const Mapping m{"BLB", Mode::kPipeline, {}};
  // B runs two sub-graphs a frame: 10 + 2 + 10 + 2 = 24; L 5 + 2 = 7.
  EXPECT_DOUBLE_EQ(dag_model.pipeline_subgraph_us(0), 2);
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us(m), 24);
  EXPECT_DOUBLE_EQ(dag_model.predict(m).period_us, 24);  // the steady state: B never idles
  // One sub-graph alone: 10 + 2 + 2 (its two cross edges have no delay).
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BLB", Mode::kSwitch, {}}), 25);
  DagCostModel none = dag_model;
  none.set_pipeline_subgraph_us(0);
  EXPECT_DOUBLE_EQ(none.pipeline_period_us(m), 20);
}

// The profile's pipeline work factor (both processors computing at once are slower than the
// layer times profiled one at a time): pipeline mode scales every layer time by it, in the
// simulated run, the busiest resource and its bound; copies and switch mode stay as profiled.
TEST(DagCostModel, APipelinesLayersTakeTheProfilesWorkFactor) {
  LayerProfile p = profile({10, 100, 10}, {100, 5, 100}, 1, 2);
  const CostModel model(p);
  const DagCostModel before(model, dag({{}, {0}, {1}}));
  p.set_pipeline_work_factor('B', 'L', 1.5);
  const CostModel slower(p);
  const DagCostModel dag_model(slower, dag({{}, {0}, {1}}));
  EXPECT_DOUBLE_EQ(before.pipeline_work_factor(0), 1);  // absent: as profiled
  EXPECT_DOUBLE_EQ(dag_model.pipeline_work_factor(1), 1.5);
  const Mapping m{"BLB", Mode::kPipeline, {}};
  // B: 1.5 x (10 + 10) + sends 1 + receives 2 = 33; L: 1.5 x 5 + 2 + 1 = 10.5.
  EXPECT_DOUBLE_EQ(before.pipeline_period_us(m), 23);
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us(m), 33);
  EXPECT_DOUBLE_EQ(dag_model.predict(m).period_us, 33);
  EXPECT_DOUBLE_EQ(dag_model.period_lower_bound_us("BLB", {}, Mode::kPipeline), 30);
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BLB", Mode::kSwitch, {}}),
                   before.switch_latency_us({"BLB", Mode::kSwitch, {}}));
  DagCostModel explicit_factor = dag_model;
  explicit_factor.set_pipeline_work_factor(1);
  EXPECT_DOUBLE_EQ(explicit_factor.pipeline_period_us(m), 23);
}

// A factor below 1, from the profile or set, is taken as 1: the other processor's work never
// makes layers faster than profiled (a fit below 1 took the references' own slowness for it).
TEST(DagCostModel, APipelineWorkFactorBelowOneIsTakenAsOne) {
  LayerProfile p = profile({10, 100, 10}, {100, 5, 100}, 1, 2);
  p.set_pipeline_work_factor('B', 'L', 0.9);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag({{}, {0}, {1}}));
  EXPECT_DOUBLE_EQ(dag_model.pipeline_work_factor(0), 1);
  EXPECT_DOUBLE_EQ(dag_model.pipeline_work_factor(1), 1);
  const Mapping m{"BLB", Mode::kPipeline, {}};
  // B: 10 + 10 + sends 1 + receives 2 = 23 (x0.9 on the layers would give 21).
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us(m), 23);
  EXPECT_DOUBLE_EQ(dag_model.predict(m).period_us, 23);
  EXPECT_DOUBLE_EQ(dag_model.period_lower_bound_us("BLB", {}, Mode::kPipeline), 20);
  DagCostModel set_below = dag_model;
  set_below.set_pipeline_work_factor(0.95);
  EXPECT_DOUBLE_EQ(set_below.pipeline_period_us(m), 23);
}

// Switch and overlap mode: while both processors compute, their layers progress at 1 / the
// pair's pipeline work factor (they share the last-level cache and memory bandwidth); alone, as
// profiled.
TEST(DagCostModel, LayersComputedWhileTheOtherProcessorComputesTakeThePairsWorkFactor) {
  LayerProfile p = profile({10, 20, 30, 5}, {100, 25, 40, 8});
  p.set_pipeline_work_factor('B', 'L', 1.1);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag(kDiamond));
  EXPECT_DOUBLE_EQ(dag_model.corun_work_factor(0, 1), 1.1);
  // BLBL as in BranchesOnTwoProcessorsOverlap: B 0 [0,10] alone; from 10 L 1 (25 us) and B 2
  // (30 us) run together at 1 / 1.1: L 1 ends at 10 + 27.5 = 37.5, when B 2 has done 25 us;
  // its last 5 us alone: 42.5; L 3 alone [42.5,50.5]. (48 without the slowdown.)
  const Mapping m{"BLBL", Mode::kSwitch, {}};
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us(m), 50.5);
  EXPECT_DOUBLE_EQ(dag_model.predict(m).latency_ms, 0.0505);
  const FrameSchedule s = dag_model.schedule(m);
  ASSERT_EQ(s.subgraphs.size(), 4u);
  EXPECT_DOUBLE_EQ(s.subgraphs[1].end_us, 37.5);
  EXPECT_DOUBLE_EQ(s.subgraphs[2].end_us, 42.5);
  EXPECT_DOUBLE_EQ(s.subgraphs[3].start_us, 42.5);
  EXPECT_EQ(s.busy_us, (std::vector<double>{42.5, 35.5}));  // the run times, stretched
  // A chain never computes on both at once: as profiled.
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BBLL", Mode::kSwitch, {}}), 10 + 20 + 40 + 8);
  // Turned off (an explicit factor 1): the hand-computed schedule without it.
  DagCostModel off = dag_model;
  off.set_corun_work_factor(1);
  EXPECT_DOUBLE_EQ(off.switch_latency_us(m), 48);
  EXPECT_EQ(off.schedule(m).busy_us, (std::vector<double>{40, 33}));
  // Pipeline mode keeps its constant factor on every layer (no co-run rate on top): B's 1.1 x
  // (10 + 30), L's 1.1 x (25 + 8).
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us({"BLBL", Mode::kPipeline, {}}), 44);
  EXPECT_DOUBLE_EQ(off.pipeline_period_us({"BLBL", Mode::kPipeline, {}}), 44);
}

TEST(DagCostModel, CopiesAreNotSlowedByTheOtherProcessor) {
  // The diamond BLBL with a send of 1 us and a receive of 2 us on every edge (a same-processor
  // cut too). B 0: 10 + two sends = 12, alone. From 12: L 1 = receive 2 (rate 1), 25 us of
  // layers at 1 / 1.1 (27.5), send 1: ends 42.5; B 2 = receive 2, then its layers slowed until
  // 42.5: 28.5 / 1.1 us of them done, the rest alone, then its send: 42.5 + 30 - 28.5 / 1.1 + 1;
  // L 3: two receives 4 + 8 after it.
  LayerProfile p = profile({10, 20, 30, 5}, {100, 25, 40, 8}, 1, 2);
  p.set_pipeline_work_factor('B', 'L', 1.1);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag(kDiamond));
  const FrameSchedule s = dag_model.schedule({"BLBL", Mode::kSwitch, {}});
  ASSERT_EQ(s.subgraphs.size(), 4u);
  EXPECT_DOUBLE_EQ(s.subgraphs[1].end_us, 42.5);
  const double b2_end = 42.5 + (30 - 28.5 / 1.1) + 1;
  EXPECT_NEAR(s.subgraphs[2].end_us, b2_end, 1e-9);
  EXPECT_NEAR(s.latency_us, b2_end + 12, 1e-9);
}

TEST(DagCostModel, OverlapsTwoFramesComputeAtTheCoRunRate) {
  // Chain 0 -> 1 on B (10 us), L (30 us), factor 1.1, as OverlapHoldsAtMostTwoFramesInFlight
  // (latency 60, period 30 without it). Frame 0: B [0,10] alone; L from 10 beside frame 1's B
  // (11 us for its 10, to 21, when L has done 10 us), L's other 20 alone: 41. Frame 2 enters at
  // 41 beside frame 1's L: the same again, frame 1 ends at 72, every 31 us; latencies 41, 62, 62...
  // The last frame's L runs alone (30 us): over the 47 periods after the first quarter of 64
  // frames, 31 - 1/47.
  LayerProfile p = profile({10, 50}, {50, 30});
  p.set_pipeline_work_factor('B', 'L', 1.1);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag({{}, {0}}));
  const Prediction o = dag_model.predict({"BL", Mode::kOverlap, {}});
  EXPECT_NEAR(o.latency_ms, 0.062, 1e-12);
  EXPECT_NEAR(o.period_us, 31 - 1.0 / 47, 1e-9);
}

TEST(DagCostModel, ProcessorsSharingCoresAreNotSlowedByEachOther) {
  // L's thread on B's cores (one resource, as a GPU's host thread): the pair's factor does not
  // apply; the hand-computed 48 us of BranchesOnTwoProcessorsOverlap.
  LayerProfile p = profile({10, 20, 30, 5}, {100, 25, 40, 8});
  p.set_pipeline_work_factor('B', 'L', 1.1);
  p.processors[1].host_cores = p.processors[0].host_cores;
  const CostModel model(p);
  const DagCostModel dag_model(model, dag(kDiamond));
  EXPECT_DOUBLE_EQ(dag_model.corun_work_factor(0, 1), 1);
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BLBL", Mode::kSwitch, {}}), 48);
}

// The profile's layer times with a MAD of `relative` x the median on every unit.
LayerProfile with_spread(LayerProfile p, double relative) {
  for (LayerTimes& t : p.layer_times) {
    t.mad_us.resize(t.median_us.size());
    for (size_t u = 0; u < t.median_us.size(); ++u) t.mad_us[u] = relative * t.median_us[u];
  }
  return p;
}

// One pipeline run of 30 frames admitted at once is chaotic: B runs units 0 and 2 of a chain,
// L unit 1, all 10 us. When L's frame ends exactly as B frees, B takes the older frame's unit
// 2 and frames flow through; L 0.1 % slower, B runs unit 0 of a new frame first, and every frame
// queues longer. A run's layers vary by more than that (the profile's MAD), so a measured run
// sits between the two; the median over simulations with that noise barely moves with the
// 0.1 %, where the single simulation jumps.
TEST(DagCostModel, ARunsLatencyIsTheMedianOverSimulationsWithTheProfilesNoise) {
  DagCostOptions run;
  run.pipeline_frames = 30;
  const graph::UnitDag chain = dag({{}, {0}, {1}});
  const CostModel tie(with_spread(profile({10, 100, 10}, {100, 10, 100}), 0.02));
  const CostModel late(with_spread(profile({10, 100, 10}, {100, 10.01, 100}), 0.02));
  const DagCostModel a(tie, chain, run), b(late, chain, run);
  const Mapping m{"BLB", Mode::kPipeline, {}};
  // One simulation: 30 us a frame on the tie, 40 us 0.1 % off it.
  EXPECT_DOUBLE_EQ(a.predict(m).latency_ms, 0.030);
  EXPECT_DOUBLE_EQ(b.predict(m).latency_ms, 0.040);
  // The median over noisy simulations: the same on both sides of the tie, and for every seed.
  const double runs_a = a.predict_run(m).latency_ms, runs_b = b.predict_run(m).latency_ms;
  EXPECT_NEAR(runs_b / runs_a, 1, 0.005);
  EXPECT_GT(runs_a, 0.036);  // far from the tie's one simulation
  for (uint64_t seed = 2; seed < 10; ++seed) {
    EXPECT_NEAR(a.predict_run(m, DagCostModel::kRunDraws, seed).latency_ms / runs_a, 1, 0.02) << seed;
  }
}

// The draws are seeded: the same seed gives the same prediction, another seed another; the
// profile's spread sets them (a unit's standard deviation is 1.4826 MADs, the MAD of a normal),
// and with no spread the prediction is the single simulation's exactly, as in switch mode.
TEST(DagCostModel, ARunsPredictionIsSeededAndDrawnFromTheProfilesSpread) {
  DagCostOptions run;
  run.pipeline_frames = 30;
  const graph::UnitDag g = dag(kDiamond);
  const LayerProfile base = profile({10, 20, 30, 5}, {100, 25, 40, 8}, 1, 2);
  const CostModel noisy(with_spread(base, 0.05)), quiet(with_spread(base, 0));
  const DagCostModel a(noisy, g, run), q(quiet, g, run);
  EXPECT_DOUBLE_EQ(a.layer_sigma_us(2, 1, {}), 1.4826 * 0.05 * 40);
  EXPECT_DOUBLE_EQ(q.layer_sigma_us(2, 1, {}), 0);
  const Mapping m{"BLBL", Mode::kPipeline, {}};
  const Prediction first = a.predict_run(m, 15, 7), again = a.predict_run(m, 15, 7);
  EXPECT_EQ(first.latency_ms, again.latency_ms);
  EXPECT_EQ(first.period_us, again.period_us);
  EXPECT_NE(a.predict_run(m, 15, 8).period_us, first.period_us);
  EXPECT_NE(first.period_us, a.predict(m).period_us);
  const Prediction one = q.predict(m), runs = q.predict_run(m);
  EXPECT_EQ(runs.latency_ms, one.latency_ms);
  EXPECT_EQ(runs.period_us, one.period_us);
  EXPECT_EQ(runs.throughput_fps, one.throughput_fps);
  EXPECT_EQ(a.predict_run(m, 0).period_us, a.predict(m).period_us);  // no draws
  for (const Mode mode : {Mode::kSwitch, Mode::kOverlap}) {
    const Mapping other{"BLBL", mode, {}};
    EXPECT_EQ(a.predict_run(other).latency_ms, a.predict(other).latency_ms) << mode_name(mode);
  }
}

// A profile's cost per sub-graph run below the executor's measured least (kExecutorRunUs: its
// loop's steps around one run, docs/design.md) is taken as that; a value set is kept as set.
TEST(DagCostModel, APipelineChargesAtLeastTheExecutorsOwnCostPerRun) {
  LayerProfile p = profile({10, 100, 10}, {100, 5, 100});
  p.set_pipeline_costs('B', 'L', 0.3, 0);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag({{}, {0}, {1}}));
  const Mapping m{"BLB", Mode::kPipeline, {}};
  EXPECT_DOUBLE_EQ(dag_model.pipeline_subgraph_us(0), kExecutorRunUs);
  EXPECT_DOUBLE_EQ(dag_model.pipeline_subgraph_us(1), kExecutorRunUs);
  // B: 10 + 1.1 + 10 + 1.1 (with the profile's 0.3: 20.6).
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us(m), 22.2);
  DagCostModel set = dag_model;
  set.set_pipeline_subgraph_us(0.3);
  EXPECT_DOUBLE_EQ(set.pipeline_period_us(m), 20.6);
}

// The executor's own cost varies from run to run, and in a pipeline of frames admitted at once
// that decides which sub-graph an idle processor takes. Chain L 100 -> B 1 -> L 1.5, 1.1 us per
// run: L 101.1, B 2.1, L 2.6. L runs unit 0 of frames 0 and 1 [0,101.1] [101.1,202.2] (unit 2
// of frame 0 waits for B), then unit 2 of frame 0 [202.2,204.8] while B runs frame 1's unit 1
// [202.2,204.3], which is there when L is free: unit 2 of frame 1 [204.8,207.4], then unit 0 of
// frames 2 and 3. Frames pair up: latencies 204.8 and 106.3 in turn, and a run of 30 frames has
// the median 155.55 us, between the two, which no frame had. Where B's 2.1 us ends after L's 2.6
// (each run +-1 us: in 28 % of the pairs), L starts the next frame's unit 0 first and that frame
// waits for it too: more than half the frames take the long latency, and the run's median is
// about it. Without the executor's spread the profile's layer noise (2 %) never reaches the
// 0.5 us between them, and every simulation pairs the frames as the one above.
TEST(DagCostModel, ARunsDrawsVaryTheExecutorsCostPerRun) {
  DagCostOptions run;
  run.pipeline_frames = 30;
  LayerProfile p = with_spread(profile({1000, 1, 1000}, {100, 1000, 1.5}), 0.02);
  p.set_pipeline_costs('B', 'L', kExecutorRunUs, 0);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag({{}, {0}, {1}}), run);
  const Mapping m{"LBL", Mode::kPipeline, {}};
  EXPECT_NEAR(dag_model.predict(m).latency_ms, 0.15555, 1e-9);
  const double runs = dag_model.predict_run(m).latency_ms;
  EXPECT_GT(runs, 0.195);
  EXPECT_LT(runs, 0.215);
}

// A profile with the pipeline fit (pipeline_edge_us) delays an edge by it, not by the hand-off,
// which then is the chain model's alone; an older profile keeps the hand-off as the delay
// (AHandOffDelaysThePipelinesReader).
TEST(DagCostModel, TheProfilesPipelineFitReplacesTheHandOffAsTheDelay) {
  DagCostOptions three;
  three.pipeline_frames = 3;
  three.pipeline_subgraph_us = 0;  // the delay alone
  LayerProfile p = profile({10, 100}, {100, 20}, 0, 0, 5);
  p.set_pipeline_costs('B', 'L', 0, 2);
  const CostModel model(p);
  const DagCostModel dag_model(model, dag({{}, {0}}), three);
  // B 10 then L 20, delay 2: B [0,10] [10,20] [20,30]; L frame 0 from 12 [12,32], [32,52],
  // [52,72]. Latencies 32, 42, 52: median 42 (with the hand-off's 5: 45).
  EXPECT_DOUBLE_EQ(dag_model.pipeline_edge_us(0, 1), 2);
  EXPECT_DOUBLE_EQ(dag_model.predict({"BL", Mode::kPipeline, {}}).latency_ms, 0.042);
  EXPECT_DOUBLE_EQ(model.handoff_us(0, 1), 5);  // the chain model's, unchanged
}

TEST(DagCostModel, SwitchModeChargesNoCopiesBetweenBackendsThatShareBoundaries) {
  // The profile's processors take boundary tensors in runtime memory: in switch mode the runtime
  // shares them in place, so the edges of TransfersAndHandOffsArePerEdge cost no send/receive
  // (the wake-up per cross-processor edge stays): B 0 [0,10]; L 1 [10,35]; B 2 [10,40]; L 3
  // [40,48] as without transfers, and with a wake-up of 3: L 1 [10,38], L 3 [40,51].
  LayerProfile shared = profile({10, 20, 30, 5}, {100, 25, 40, 8}, 1, 2, 4);
  for (ProfileProcessor& p : shared.processors) p.in_place_boundaries = true;
  const CostModel model(shared);
  const DagCostModel dag_model(model, dag(kDiamond));
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BLBL", Mode::kSwitch, {}}), 48);
  EXPECT_DOUBLE_EQ(DagCostModel(model, dag(kDiamond), DagCostOptions{3}).switch_latency_us({"BLBL", Mode::kSwitch, {}}), 51);
  // A pipeline copies (receivers hold several frames): the period is TransfersAndHandOffsArePerEdge's.
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us({"BLBL", Mode::kPipeline, {}}), 45);
  // L does not share: edges touching L are copied again, B's own edge (0 -> 2) is not. B 0
  // sends to L: [0,11]; L 1: 2 + 25 + 1: [11,39]; B 2: 30 + 1: [11,42]; L 3: 2 + 2 + 8: [42,54].
  ASSERT_EQ(shared.processors.at(1).letter, 'L');
  shared.processors.at(1).in_place_boundaries = false;
  const CostModel mixed(shared);
  EXPECT_DOUBLE_EQ(DagCostModel(mixed, dag(kDiamond)).switch_latency_us({"BLBL", Mode::kSwitch, {}}), 54);
}

TEST(DagCostModel, ACrossProcessorEdgeCostsPerMegabyteOfItsTensor) {
  // The reader of a tensor the other core wrote pays per megabyte of it (cache to cache), on top
  // of the wake-up per edge; edges inside one processor pay nothing. Outputs 2, 1, 3, 1 MB,
  // 2 us per MB, 3 us per edge, shared boundaries: B 0 [0,10]; L 1 reads 2 MB from B:
  // 25 + 3 + 4 = 32, [10,42]; B 2 [10,40] (B's own edge); L 3 reads unit 1 on L and 3 MB from
  // B: 8 + 3 + 6 = 17, [42,59].
  LayerProfile shared = profile({10, 20, 30, 5}, {100, 25, 40, 8});
  for (ProfileProcessor& p : shared.processors) p.in_place_boundaries = true;
  const std::vector<int64_t> bytes = {2'000'000, 1'000'000, 3'000'000, 1'000'000};
  for (size_t u = 0; u < bytes.size(); ++u) shared.network.layers.at(u).output_bytes = bytes[u];
  shared.set_switch_edge('B', 'L', 3);
  shared.set_switch_edge_mb('B', 'L', 2);
  const CostModel model(shared);
  const DagCostModel dag_model(model, dag(kDiamond));
  EXPECT_DOUBLE_EQ(dag_model.switch_edge_mb_us(0, 1), 2);
  EXPECT_DOUBLE_EQ(dag_model.switch_latency_us({"BLBL", Mode::kSwitch, {}}), 59);
  // Without the per-megabyte cost: 51, as in SwitchModeChargesNoCopiesBetweenBackendsThatShareBoundaries.
  DagCostModel per_edge_only = dag_model;
  per_edge_only.set_switch_edge_mb_us(0);
  EXPECT_DOUBLE_EQ(per_edge_only.switch_latency_us({"BLBL", Mode::kSwitch, {}}), 51);
  // A pipeline charges its copies and hand-offs instead (none here): B {0, 2} 40 a frame.
  EXPECT_DOUBLE_EQ(dag_model.pipeline_period_us({"BLBL", Mode::kPipeline, {}}), 40);
}

TEST(DagCostModel, SwitchModeChargesTheCopiesOfEdgesTheRuntimeDoesNotShare) {
  // Backends that share, but units whose outputs the runtime would copy all the same (a 3-D
  // tensor, a graph output, a network with exits: UnitDag::shareable): the copies of
  // TransfersAndHandOffsArePerEdge come back, 57.
  LayerProfile shared = profile({10, 20, 30, 5}, {100, 25, 40, 8}, 1, 2, 4);
  for (ProfileProcessor& p : shared.processors) p.in_place_boundaries = true;
  const CostModel model(shared);
  graph::UnitDag copied = dag(kDiamond);
  copied.shareable.assign(4, false);
  EXPECT_DOUBLE_EQ(DagCostModel(model, copied).switch_latency_us({"BLBL", Mode::kSwitch, {}}), 57);
  // Only unit 0's outputs copied: B 0 sends 2 edges [0,12]; L 1 receives 2: [12,37]; B 2
  // receives 2: [12,44]; L 3 shares both: [44,52].
  copied.shareable = {false, true, true, true};
  EXPECT_DOUBLE_EQ(DagCostModel(model, copied).switch_latency_us({"BLBL", Mode::kSwitch, {}}), 52);
}

TEST(DagCostModel, OnAChainItAgreesWithTheChainModel) {
  SyntheticSpec spec;
  spec.layers = 7;
  spec.processors = 3;
  spec.shared_hosts = false;
  spec.seed = 5;
  spec.handoff_us = 20;
  const CostModel model(make_synthetic_profile(spec));
  graph::UnitDag chain = dag({{}, {0}, {1}, {2}, {3}, {4}, {5}});
  const DagCostModel dag_model(model, chain);
  for (const std::string order : {"BBBBBBB", "BBLLLGG", "BLGBLGB", "GGGLLLB"}) {
    const Mapping s{order, Mode::kSwitch, {}};
    EXPECT_NEAR(dag_model.predict(s).latency_ms, model.predict(s).latency_ms, 1e-9) << order;
  }
  // Pipeline: the busiest resource is the chain model's period without hand-offs (the DAG model
  // takes a hand-off as a delay on the edge, not as either processor's work).
  spec.handoff_us = 0;
  const CostModel no_handoff(make_synthetic_profile(spec));
  const DagCostModel dag_no_handoff(no_handoff, chain);
  for (const std::string order : {"BBBBBBB", "BBLLLGG", "BLGBLGB", "GGGLLLB"}) {
    const Mapping p{order, Mode::kPipeline, {}};
    EXPECT_NEAR(dag_model.pipeline_period_us(p), no_handoff.predict(p).period_us, 1e-6) << order;
    EXPECT_NEAR(dag_no_handoff.pipeline_period_us(p), no_handoff.predict(p).period_us, 1e-6) << order;
  }
}

TEST(DagCostModel, LowerBoundsNeverExceedTheValue) {
  const CostModel model(profile({10, 5, 10, 5, 1}, {50, 20, 50, 40, 50}, 1, 2, 3));
  const DagCostModel dag_model(model, dag({{}, {0}, {0}, {0}, {1, 2, 3}}));
  for (const std::string order : {"BLBLB", "BBBBB", "LLLLL", "BLLLB", "LBLBL"}) {
    for (size_t placed = 0; placed <= order.size(); ++placed) {
      std::string partial = order.substr(0, placed) + std::string(order.size() - placed, '?');
      EXPECT_LE(dag_model.latency_lower_bound_us(partial, {}),
                dag_model.switch_latency_us({order, Mode::kSwitch, {}}) + 1e-9) << partial;
      EXPECT_LE(dag_model.period_lower_bound_us(partial, {}, Mode::kPipeline),
                dag_model.pipeline_period_us({order, Mode::kPipeline, {}}) + 1e-9) << partial;
    }
  }
}

// Overlap mode, by hand. Frame g enters once g - 2 completed and runs on a processor only when
// g - 1 has nothing left there.
TEST(DagCostModel, OverlapFillsAProcessorsIdleTailWithTheNextFrame) {
  // The diamond BLBL (switch: 48 us a frame). Frame 0: B 0 [0,10], L 1 [10,35], B 2 [10,40],
  // L 3 [40,48]. Frame 1's unit 0 may enter at 10 but B still has unit 2 of frame 0 to run: it
  // starts at 40 [40,50] (while L 3 finishes frame 0), then L 1 [50,75], B 2 [50,80], L 3
  // [80,88]. Every frame 48 us, one every 40 us: 1.2x switch's throughput at its latency.
  const CostModel model(profile({10, 20, 30, 5}, {100, 25, 40, 8}));
  const DagCostModel dag_model(model, dag(kDiamond));
  const Prediction p = dag_model.predict({"BLBL", Mode::kOverlap, {}});
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.048);
  EXPECT_DOUBLE_EQ(p.period_us, 40);
  EXPECT_DOUBLE_EQ(p.throughput_fps, 1e6 / 40);
  EXPECT_DOUBLE_EQ(dag_model.predict({"BLBL", Mode::kSwitch, {}}).period_us, 48);
}

TEST(DagCostModel, OverlapNeverDelaysTheFrameBeforeOnAProcessor) {
  // Chain 0 -> 1 -> 2 on B, L, B (10, 20, 10 us). Frame 1's unit 0 could run on B at 10, but
  // frame 0 still has unit 2 on B (at 30): B waits, frame 1 starts at 40, as in switch mode.
  const CostModel model(profile({10, 50, 10}, {50, 20, 50}));
  const DagCostModel dag_model(model, dag({{}, {0}, {1}}));
  const Prediction p = dag_model.predict({"BLB", Mode::kOverlap, {}});
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.040);
  EXPECT_DOUBLE_EQ(p.period_us, 40);
}

TEST(DagCostModel, OverlapHoldsAtMostTwoFramesInFlight) {
  // Chain 0 -> 1 on B (10 us), L (30 us). Frame 0: B [0,10], L [10,40]; frame 1: B [10,20],
  // L [40,70]; frame 2 enters when frame 0 has left (40): B [40,50], L [70,100]; frame 3 at 70.
  // Latencies 40, 60, 60, 60, ...: median 60; one frame every 30 us. (A pipeline admits every
  // frame at once and lets them queue before L.)
  const CostModel model(profile({10, 50}, {50, 30}));
  const DagCostModel dag_model(model, dag({{}, {0}}));
  const Prediction p = dag_model.predict({"BL", Mode::kOverlap, {}});
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.060);
  EXPECT_DOUBLE_EQ(p.period_us, 30);
  EXPECT_GT(dag_model.predict({"BL", Mode::kPipeline, {}}).latency_ms, 0.060);
}

TEST(DagCostModel, OverlapWaitsForOtherProcessorsReadersOfASharedBuffer) {
  // As OverlapHoldsAtMostTwoFramesInFlight, but B and L share boundaries in place: the tensor
  // 0 -> 1 is one buffer, which frame 1's unit 0 may write only once L has read frame 0's
  // (at 40): B [40,50], L [50,80], ... one frame every 40 us, each 40 us long.
  LayerProfile shared = profile({10, 50}, {50, 30}, 1, 2);
  for (ProfileProcessor& x : shared.processors) x.in_place_boundaries = true;
  const CostModel model(shared);
  const DagCostModel dag_model(model, dag({{}, {0}}));
  const Prediction p = dag_model.predict({"BL", Mode::kOverlap, {}});
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.040);  // no copies charged, as in switch mode
  EXPECT_DOUBLE_EQ(p.period_us, 40);
}

TEST(DagCostModel, OverlapGuardsAJoinsSliceWriterAgainstEveryReaderOfTheConcat) {
  // Unit 0 (input) and 1 (a convolution) on L, 2 (a convolution) and 3 (the Concat of 1 and 2)
  // on B, then readers of the Concat: 4 on L, 5 on B (both outputs). Sub-graphs s0 = L {0,1},
  // s1 = B {2,3}, s2 = L {4}, s3 = B {5}. The executor makes the Concat a join: unit 1 writes
  // its slice of the Concat's output, one buffer that s0, s1, s2 and s3 touch, so s0 may run
  // frame g only once s3 (B) has read frame g - 1's. Frame 0: s0 [0,20], s1 [20,31], s2
  // [31,36], s3 [31,71]; frame 1's s0 waits for s3 (71): one frame every 71 us, 71 us each.
  // (Guarding s0 against s1 alone, the Concat's sub-graph, let it run at 36: a frame every
  // 51 us, 86 us each.)
  LayerProfile shared = profile({10, 100, 10, 1, 100, 40}, {10, 10, 100, 100, 5, 100});
  for (ProfileProcessor& x : shared.processors) x.in_place_boundaries = true;
  const char* ops[] = {"Conv(relu)", "Conv(relu)", "Conv(relu)", "Concat", "Conv(relu)", "Conv(relu)"};
  ASSERT_EQ(shared.network.layers.size(), 6u);
  for (size_t u = 0; u < 6; ++u) shared.network.layers[u].ops = ops[u];
  const CostModel model(shared);
  graph::UnitDag units = dag({{}, {0}, {0}, {1, 2}, {3}, {3}});
  units.outputs[4] = true;
  units.shareable = {true, true, true, true, false, false};
  const DagCostModel dag_model(model, units);
  const Prediction p = dag_model.predict({"LLBBLB", Mode::kOverlap, {}});
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.071);
  EXPECT_DOUBLE_EQ(p.period_us, 71);
}

TEST(DagCostModel, OverlapGuardsTheSourceWhoseBufferIsSharedNotTheLastOneLinked) {
  // Sub-graphs s = L {0,1}, x = B {2}, s2 = L {3}, d = B {4,5,6}. d reads s (unit 0, copied),
  // then s2 (unit 3, copied), then s again (unit 1, shared in place): s must not write frame 1's
  // unit 1 before d has read frame 0's. Frame 0: s [0,10], x [10,15], s2 [15,20], d [20,50];
  // frame 1's s waits for d (50), so one frame every 50 us. (Guarding s2 instead lets s run
  // frame 1 at 20: a frame every 40 us.)
  LayerProfile shared = profile({100, 100, 5, 100, 10, 10, 10}, {5, 5, 100, 5, 100, 100, 100});
  for (ProfileProcessor& x : shared.processors) x.in_place_boundaries = true;
  const CostModel model(shared);
  graph::UnitDag units = dag({{}, {0}, {1}, {2}, {0}, {3}, {1, 4, 5}});
  units.shareable = {false, true, true, false, true, true, true};
  const DagCostModel dag_model(model, units);
  const Prediction p = dag_model.predict({"LLBLBBB", Mode::kOverlap, {}});
  EXPECT_DOUBLE_EQ(p.latency_ms, 0.050);
  EXPECT_DOUBLE_EQ(p.period_us, 50);
}

TEST(DagCostModel, AUnitGraphOfAnotherSizeIsAnInputError) {
  const CostModel model(profile({10, 20, 30, 5}, {100, 25, 40, 8}));
  EXPECT_THROW(DagCostModel(model, dag({{}, {0}})), InputError);
  DagCostOptions one_frame;
  one_frame.pipeline_frames = 1;  // no period between completions to measure
  EXPECT_THROW(DagCostModel(model, dag(kDiamond), one_frame), InputError);
}

}  // namespace
}  // namespace co_up::planner
