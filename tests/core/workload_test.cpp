// Several networks on shared processor threads (Executor::run_group through WorkloadRunner):
// every network computes the bits it computes alone, frames per network are never lost,
// duplicated or reordered, a processor never runs two sub-graphs at once, the policies order the
// requests as they say, and latency counts from a request's arrival.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/workload.h"
#include "core/workload_runner.h"
#include "profiler/workload_report.h"
#include "tests/core/test_spin.h"
#include "tests/core/test_support.h"
#include "tests/core/workload_harness.h"
#include "tests/sanitizer_size.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

constexpr int64_t kSmallImage = 32;

using testing::distinct_inputs;
using namespace workload_harness;

// Orders over a graph's layers: "first half on B, rest on L", "first third on L, rest on B",
// and alternating blocks (non-contiguous: B owns two sub-graphs).
std::string split_order(uint32_t layers, uint32_t first, char a, char b) {
  return std::string(first, a) + std::string(layers - first, b);
}

// Sub-graph runs per processor letter, across networks: (begin, end, network, frame).
struct SubGraphRun {
  int64_t begin, end;
  size_t network;
  uint64_t frame;
};
std::map<char, std::vector<SubGraphRun>> runs_by_processor(const WorkloadRunResult& r) {
  std::map<char, std::vector<SubGraphRun>> out;
  for (size_t n = 0; n < r.streams.size(); ++n) {
    const profiler::RunProfile& p = r.streams[n].run.profile;
    for (const profiler::Event& e : p.events) {
      if (e.kind != profiler::EventKind::kSubGraph) continue;
      out[p.subgraphs.at(e.subgraph).processor].push_back({e.begin_ns, e.end_ns, n, e.frame});
    }
  }
  for (auto& [letter, runs] : out) {
    std::sort(runs.begin(), runs.end(), [](const SubGraphRun& a, const SubGraphRun& b) { return a.begin < b.begin; });
  }
  return out;
}

Net make_net(const std::string& name, const std::string& zoo, const std::string& order_kind,
             uint32_t seed, int64_t image_size = kSmallImage) {
  Net n{name, build_network({zoo, "layers", image_size, seed, ""}), "", {}};
  const uint32_t layers = n.graph.layer_count();
  const bool two_clusters = host_platform().find('L') != nullptr;
  const char other = two_clusters ? 'L' : 'B';
  if (order_kind == "half") n.order = split_order(layers, layers / 2, 'B', other);
  if (order_kind == "third") n.order = split_order(layers, layers / 3, other, 'B');
  if (order_kind == "blocks") {
    for (uint32_t l = 0; l < layers; ++l) n.order += (l / 3) % 2 == 0 ? 'B' : other;
  }
  n.inputs = distinct_inputs(n.graph, 5, seed);
  return n;
}

TEST(WorkloadTest, ThreeNetworksMatchTheirSingleRunsBitForBitWithEveryFrameInOrder) {
  const std::vector<Net> nets = {make_net("squeeze", "squeezenet", "half", 3),
                                 make_net("mobile", "mobilenet", "third", 4),
                                 make_net("google", "googlenet", "blocks", 5, 64)};
  const uint64_t frames = test::size_for_this_build<uint64_t>("frames per network", 500, 100);
  GroupRun got;
  run_group(nets, {frames, frames, frames}, {{}, {}, {}}, {0, 0, 0}, GroupPolicy::kOldest, got);
  expect_every_frame_as_alone(nets, got, frames);
  // Every processor ran one sub-graph at a time, across all three networks, and every network's
  // sub-graph runs are all there.
  const auto runs = runs_by_processor(got.result);
  std::map<size_t, size_t> per_network;
  for (const auto& [letter, list] : runs) {
    for (size_t i = 1; i < list.size(); ++i) {
      ASSERT_LE(list[i - 1].end, list[i].begin)
          << "processor " << letter << " ran network " << list[i - 1].network << " frame "
          << list[i - 1].frame << " and network " << list[i].network << " frame " << list[i].frame
          << " at once";
    }
    for (const SubGraphRun& r : list) ++per_network[r.network];
  }
  for (size_t n = 0; n < nets.size(); ++n) {
    const size_t subgraphs = got.result.streams[n].run.profile.subgraphs.size();
    EXPECT_EQ(per_network[n], frames * subgraphs) << nets[n].name;
  }
  if (host_platform().find('L') != nullptr) {
    // Both processors served more than one network.
    for (const auto& [letter, list] : runs) {
      std::set<size_t> served;
      for (const SubGraphRun& r : list) served.insert(r.network);
      EXPECT_GE(served.size(), 2u) << letter;
    }
  }
}

// A transformer imported from ONNX among zoo CNNs (the benchmark's mix, small): its requests are
// numbered, checked and computed exactly as alone, pipelined over B and L between CNNs that share
// both processors, and also whole with a replica on the other processor (the balanced plan's shape).
TEST(WorkloadTest, AnOnnxTransformerAmongCnnsMatchesItsSingleRunBitForBitWithEveryFrameInOrder) {
  NetworkSpec spec;
  spec.model = (std::filesystem::path(CO_UP_ONNX_FIXTURES) / "vit_tiny.onnx").string();
  Net vit{"vit", build_network(spec), "", {}, {}};
  const uint32_t layers = vit.graph.layer_count();
  ASSERT_GE(layers, 4u);
  const char other = host_platform().find('L') != nullptr ? 'L' : 'B';
  vit.inputs = distinct_inputs(vit.graph, 5, 21);
  for (const bool replicated : {false, true}) {
    SCOPED_TRACE(replicated ? "whole, replica on the other processor" : "pipelined");
    std::vector<Net> nets = {make_net("squeeze", "squeezenet", "half", 3), vit, make_net("mobile", "mobilenet", "third", 4)};
    nets[1].order = replicated ? std::string(layers, 'B') : split_order(layers, layers / 2, other, 'B');
    if (replicated) nets[1].replicas = {std::string(layers, other)};
    const uint64_t frames = 60;
    GroupRun got;
    run_group(nets, {frames, frames, frames}, {{}, {}, {}}, {0, 0, 0}, GroupPolicy::kOldest, got);
    expect_every_frame_as_alone(nets, got, frames);
  }
}

TEST(WorkloadTest, MinimalBuffersInBothModesStillDeliverEveryFrame) {
  // Non-contiguous orders (B owns two sub-graphs of "a") with one receive buffer per edge.
  std::vector<Net> nets = {make_net("a", "squeezenet", "blocks", 6),
                           make_net("b", "squeezenet", "third", 7)};
  const Platform platform = host_platform();
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch}) {
    SCOPED_TRACE(mode_name(mode));
    SharedDevices devices;
    auto share = make_executor_share();
    ExecutorOptions options;
    options.mode = mode;
    options.receiver_buffers = 1;
    options.spin_wait_in_frame_us = testing::kSpinWaitInFrameUs;
    std::vector<std::unique_ptr<Executor>> executors;
    std::vector<Delivered> delivered(nets.size());
    std::vector<WorkloadStreamSpec> specs;
    for (size_t i = 0; i < nets.size(); ++i) {
      executors.push_back(std::make_unique<Executor>(
          devices.place(nets[i].graph, nets[i].order, platform, build_plugins()), options, share));
      WorkloadStreamSpec s;
      s.executor = executors.back().get();
      s.frames = 40;
      s.input_sets = nets[i].inputs;
      Delivered* d = &delivered[i];
      s.on_output = [d](uint64_t f, uint32_t o, std::span<const float> v) { d->add(f, o, v); };
      specs.push_back(std::move(s));
    }
    WorkloadRunner runner(std::move(specs), GroupPolicy::kOldest);
    runner.run();
    for (size_t n = 0; n < nets.size(); ++n) {
      ASSERT_EQ(delivered[n].order.size(), 40u);
      for (uint64_t f = 0; f < 40; ++f) EXPECT_EQ(delivered[n].order[f], f);
    }
  }
}

// Two networks entirely on B: one sub-graph each, always ready; the policy alone decides.
std::vector<size_t> network_sequence_on_b(GroupPolicy policy, std::vector<int> priorities,
                                          const Workload* plan, uint64_t frames) {
  std::vector<Net> nets;
  for (const char* name : {"a", "b"}) {
    Net n{name, build_network({"squeezenet", "layers", kSmallImage, 1, ""}), "", {}};
    n.order = std::string(n.graph.layer_count(), 'B');
    n.inputs = distinct_inputs(n.graph, 1, 1);
    nets.push_back(std::move(n));
  }
  GroupRun got;
  run_group(nets, {frames, frames}, {{}, {}}, priorities, policy, got, plan);
  std::vector<size_t> sequence;
  // Kept in a variable: a range-for over .at() of a temporary map reads it after it is destroyed.
  const auto runs = runs_by_processor(got.result);
  for (const SubGraphRun& r : runs.at('B')) sequence.push_back(r.network);
  return sequence;
}

TEST(WorkloadTest, OldestFirstAlternatesNetworksThatArriveTogether) {
  const auto seq = network_sequence_on_b(GroupPolicy::kOldest, {0, 0}, nullptr, 6);
  EXPECT_EQ(seq, (std::vector<size_t>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(WorkloadTest, PriorityRunsTheHigherPriorityNetworkFirst) {
  const auto seq = network_sequence_on_b(GroupPolicy::kPriority, {0, 5}, nullptr, 6);
  EXPECT_EQ(seq, (std::vector<size_t>{1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(WorkloadTest, PlanTakesRequestsInThePlansOrder) {
  const Workload w = parse_workload_short("squeezenet:B:name=a;squeezenet:B:name=b;plan=a,b,b");
  const auto seq = network_sequence_on_b(GroupPolicy::kPlan, {0, 0}, &w, 6);
  // a b b | a b b | a b b | then a's last three requests.
  EXPECT_EQ(seq, (std::vector<size_t>{0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0}));
}

TEST(WorkloadTest, RateLimitedRequestsWaitForTheirArrivalAndLatencyCountsFromIt) {
  // Requests every 20 ms: none may start before it arrives.
  std::vector<Net> nets = {make_net("paced", "squeezenet", "half", 8)};
  GroupRun paced;
  run_group(nets, {12}, {50.0}, {0}, GroupPolicy::kOldest, paced);
  const WorkloadStreamResult& s = paced.result.streams[0];
  ASSERT_EQ(s.arrival_ns.size(), 12u);
  for (uint64_t f = 0; f < 12; ++f) {
    EXPECT_EQ(s.arrival_ns[f], paced.result.start_ns + static_cast<int64_t>(f) * 20000000);
    EXPECT_GE(s.run.profile.frame_start_ns[f], s.arrival_ns[f]) << "frame " << f << " started early";
  }
  EXPECT_GE(s.end_ns.back() - paced.result.start_ns, 11 * 20000000);

  // Requests arriving far faster than the network runs queue up: the report's latency counts
  // the wait, so it grows far beyond the time a processor spent on the request.
  GroupRun flooded;
  run_group(nets, {30}, {1e6}, {0}, GroupPolicy::kOldest, flooded);
  const WorkloadStreamResult& q = flooded.result.streams[0];
  profiler::WorkloadProfile w;
  w.start_ns = flooded.result.start_ns;
  w.networks.push_back({"paced", q.run.profile, q.arrival_ns, q.end_ns, 1e6, 0});
  const profiler::WorkloadSummary summary = profiler::summarize_workload(w);
  std::vector<double> from_arrival, from_start;
  for (size_t f = 0; f < 30; ++f) {
    from_arrival.push_back(static_cast<double>(q.end_ns[f] - q.arrival_ns[f]) / 1e6);
    from_start.push_back(static_cast<double>(q.end_ns[f] - q.run.profile.frame_start_ns[f]) / 1e6);
  }
  EXPECT_DOUBLE_EQ(summary.networks[0].latency_p99_ms, profiler::percentile(from_arrival, 99));
  EXPECT_DOUBLE_EQ(summary.networks[0].latency_p50_ms, profiler::percentile(from_arrival, 50));
  EXPECT_GT(summary.networks[0].latency_max_ms, 5 * profiler::percentile(from_start, 50))
      << "latency was counted from when a processor took the request, not from its arrival";
}

// A network built for batch 4 beside an unbatched one: each request's slice of its batch equals
// the request run alone, unbatched; 10 requests make two full batches and one padded.
TEST(WorkloadTest, BatchedRequestsMatchTheirUnbatchedRunsAndEnterWhenTheBatchIsComplete) {
  const uint32_t batch = 4;
  Net single = make_net("one", "squeezenet", "half", 11);
  Net batched = single;
  batched.name = "batched";
  NetworkSpec spec{"squeezenet", "layers", kSmallImage, 11, ""};
  spec.batch = batch;
  batched.graph = build_network(spec);
  ASSERT_EQ(batched.graph.tensor(batched.graph.inputs()[0]).desc.shape[0], batch);
  const auto alone = run_alone(single.graph, single.order, single.inputs);
  const Net other = make_net("other", "mobilenet", "third", 12);

  const Platform platform = host_platform();
  SharedDevices devices;
  auto share = make_executor_share();
  ExecutorOptions options;
  options.profile_level = 1;
  options.spin_wait_in_frame_us = testing::kSpinWaitInFrameUs;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<Delivered> delivered(2);
  std::vector<WorkloadStreamSpec> specs;
  for (const Net* n : std::vector<const Net*>{&batched, &other}) {
    executors.push_back(std::make_unique<Executor>(devices.place(n->graph, n->order, platform, build_plugins()),
                                                   options, share));
    WorkloadStreamSpec s;
    s.executor = executors.back().get();
    s.frames = 10;
    s.batch = n == &batched ? batch : 1;
    s.rate = 100.0;  // a request every 10 ms
    s.input_sets = n->inputs;
    Delivered* d = &delivered[specs.size()];
    s.on_output = [d](uint64_t f, uint32_t o, std::span<const float> v) { d->add(f, o, v); };
    specs.push_back(std::move(s));
  }
  WorkloadRunner runner(std::move(specs), GroupPolicy::kOldest);
  const WorkloadRunResult r = runner.run();
  ASSERT_EQ(delivered[0].order.size(), 10u) << "a padded request was delivered, or one was lost";
  for (uint64_t f = 0; f < 10; ++f) {
    EXPECT_EQ(delivered[0].order[f], f);
    const std::vector<float>& expected = alone.at(f % single.inputs.size());
    const std::vector<float>& actual = delivered[0].by_frame.at(f);
    ASSERT_EQ(expected.size(), actual.size());
    ASSERT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)), 0)
        << "request " << f << " differs from its unbatched run";
  }
  const WorkloadStreamResult& s = r.streams[0];
  EXPECT_EQ(s.run.profile.frames_completed, 3u);  // batches
  ASSERT_EQ(s.arrival_ns.size(), 10u);
  for (uint64_t f = 0; f < 10; ++f) {
    EXPECT_EQ(s.arrival_ns[f], r.start_ns + static_cast<int64_t>(f) * 10000000);
    EXPECT_EQ(s.end_ns[f], s.run.profile.frame_end_ns[f / batch]);
  }
  // A batch enters when its last request has arrived (requests 3, 7, and the last, 9).
  for (uint64_t k = 0; k < 3; ++k) {
    const uint64_t last = std::min<uint64_t>((k + 1) * batch, 10) - 1;
    EXPECT_GE(s.run.profile.frame_start_ns[k], s.arrival_ns[last]) << "batch " << k;
  }
}

TEST(WorkloadTest, AStopOfOneNetworkStopsTheWholeGroup) {
  // "a" runs on B only; "b" on both, so its L stage waits on B: when B's thread stops for "a",
  // L's thread (serving only "b") must stop too, or the run never ends.
  if (host_platform().find('L') == nullptr) GTEST_SKIP() << "needs two CPU clusters (2+ cores)";
  std::vector<Net> nets = {make_net("a", "squeezenet", "half", 9), make_net("b", "squeezenet", "half", 9)};
  nets[0].order = std::string(nets[0].graph.layer_count(), 'B');
  const Platform platform = host_platform();
  SharedDevices devices;
  auto share = make_executor_share();
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<WorkloadStreamSpec> specs;
  for (const Net& n : nets) {
    executors.push_back(std::make_unique<Executor>(devices.place(n.graph, n.order, platform, build_plugins()),
                                                   ExecutorOptions{}, share));
    WorkloadStreamSpec s;
    s.executor = executors.back().get();
    s.frames = 100000;
    s.input_sets = n.inputs;
    specs.push_back(std::move(s));
  }
  executors[0]->request_stop();  // before the run: it returns at once
  WorkloadRunner runner(std::move(specs), GroupPolicy::kOldest);
  const WorkloadRunResult r = runner.run();
  for (const WorkloadStreamResult& s : r.streams) {
    EXPECT_TRUE(s.run.profile.interrupted);
    EXPECT_LT(s.run.profile.frames_completed, 100000u);
  }
}

TEST(WorkloadTest, PercentilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(profiler::percentile(v, 50), 50);
  EXPECT_EQ(profiler::percentile(v, 90), 90);
  EXPECT_EQ(profiler::percentile(v, 99), 99);
  EXPECT_EQ(profiler::percentile({7}, 99), 7);
  EXPECT_EQ(profiler::percentile({}, 50), 0);
}

TEST(WorkloadTest, BubblesAreIdleTimeWhileARequestIsInFlight) {
  // One network on B: busy 10-20 and 40-50; its one request in flight 0-50 (arrival 0).
  profiler::WorkloadProfile w;
  w.start_ns = 0;
  profiler::NetworkRun n;
  n.name = "x";
  n.profile.processors.push_back({'B', "big", "cpu", "0", 1});
  n.profile.subgraphs.push_back({0, 'B', "cpu", 0, 1});
  profiler::Event e;
  e.kind = profiler::EventKind::kSubGraph;
  e.begin_ns = 10'000'000;
  e.end_ns = 20'000'000;
  n.profile.events.push_back(e);
  e.begin_ns = 40'000'000;
  e.end_ns = 50'000'000;
  n.profile.events.push_back(e);
  n.arrival_ns = {0};
  n.end_ns = {50'000'000};
  n.profile.frames_requested = n.profile.frames_completed = 1;
  w.networks.push_back(n);
  // A second network arriving late, on L only, keeps the window open to 80 ms.
  profiler::NetworkRun m;
  m.name = "y";
  m.profile.processors.push_back({'L', "little", "cpu", "1", 1});
  m.arrival_ns = {70'000'000};
  m.end_ns = {80'000'000};
  w.networks.push_back(m);
  const profiler::WorkloadSummary s = profiler::summarize_workload(w);
  ASSERT_EQ(s.processors.size(), 2u);
  const profiler::ProcessorSummary& b = s.processors[0];
  EXPECT_EQ(b.letter, 'B');
  EXPECT_DOUBLE_EQ(b.busy_ms, 20);
  EXPECT_DOUBLE_EQ(b.bubble_ms, 30);  // 0-10 and 20-40: its request waited
  EXPECT_DOUBLE_EQ(b.idle_ms, 30);    // 50-80: nothing of its own in flight
  EXPECT_DOUBLE_EQ(b.utilisation, 0.25);
  EXPECT_EQ(b.runs, 2u);
}

}  // namespace
}  // namespace co_up
