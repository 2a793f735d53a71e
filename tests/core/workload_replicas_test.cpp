// Run-time balancing (WorkloadStreamSpec::replicas, a workload network's "replicas"): a network
// with several executors on different orders runs each request on exactly one of them, delivers
// every request's outputs once, in request order, with the bits the network computes alone; a
// processor still runs one sub-graph at a time; an idle processor takes frames another's
// executor would have run; the workload file's "replicas" field and its one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/workload.h"
#include "core/workload_runner.h"
#include "profiler/workload_report.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

using InputSets = std::vector<std::vector<std::vector<float>>>;
using testing::distinct_inputs;

struct Delivered {
  std::mutex mutex;
  std::vector<uint64_t> order;  // output 0's frames in delivery order
  std::map<uint64_t, std::vector<float>> by_frame;
  void add(uint64_t frame, uint32_t output, std::span<const float> values) {
    if (output != 0) return;
    std::lock_guard lock(mutex);
    order.push_back(frame);
    by_frame[frame].assign(values.begin(), values.end());
  }
};

std::map<uint64_t, std::vector<float>> run_alone(const graph::Graph& g, const std::string& order,
                                                 const InputSets& inputs) {
  Executor executor(g, Partition::create(g, order), host_platform(), build_plugins(), ExecutorOptions{});
  Delivered delivered;
  RunRequest request;
  request.frames = inputs.size();
  request.input_sets = inputs;
  request.on_output = [&](uint64_t f, uint32_t o, std::span<const float> v) { delivered.add(f, o, v); };
  executor.run(request);
  return delivered.by_frame;
}

char other_letter() { return host_platform().find('L') != nullptr ? 'L' : 'B'; }

struct Net {
  std::string name;
  graph::Graph graph;
  std::string order;
  std::vector<std::string> replicas;
  InputSets inputs;
  std::optional<double> rate;
};

Net make_net(const std::string& name, const std::string& zoo, uint32_t seed, int64_t image_size = 32) {
  Net n{name, build_network({zoo, "layers", image_size, seed, ""}), "", {}, {}, {}};
  n.inputs = distinct_inputs(n.graph, 5, seed);
  return n;
}

struct GroupRun {
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<Delivered> delivered;
  WorkloadRunResult result;
};

void run_group(const std::vector<Net>& nets, uint64_t frames, GroupRun& out) {
  const Platform platform = host_platform();
  SharedDevices devices;
  auto share = make_executor_share();
  ExecutorOptions options;
  options.profile_level = 1;
  out.delivered = std::vector<Delivered>(nets.size());
  std::vector<WorkloadStreamSpec> specs;
  for (size_t i = 0; i < nets.size(); ++i) {
    out.executors.push_back(std::make_unique<Executor>(
        devices.place(nets[i].graph, nets[i].order, platform, build_plugins()), options, share));
    WorkloadStreamSpec s;
    s.executor = out.executors.back().get();
    for (const std::string& r : nets[i].replicas) {
      out.executors.push_back(
          std::make_unique<Executor>(devices.place(nets[i].graph, r, platform, build_plugins()), options, share));
      s.replicas.push_back(out.executors.back().get());
    }
    s.frames = frames;
    s.rate = nets[i].rate;
    s.input_sets = nets[i].inputs;
    Delivered* d = &out.delivered[i];
    s.on_output = [d](uint64_t f, uint32_t o, std::span<const float> v) { d->add(f, o, v); };
    specs.push_back(std::move(s));
  }
  WorkloadRunner runner(std::move(specs), GroupPolicy::kOldest);
  out.result = runner.run();
}

// Per network frame: the sub-graph runs that computed it (merged sub-graph numbers).
std::map<uint64_t, std::vector<uint32_t>> runs_per_frame(const profiler::RunProfile& p) {
  std::map<uint64_t, std::vector<uint32_t>> out;
  for (const profiler::Event& e : p.events) {
    if (e.kind == profiler::EventKind::kSubGraph) out[e.frame].push_back(e.subgraph);
  }
  return out;
}

void expect_one_subgraph_at_a_time(const WorkloadRunResult& r) {
  struct Run {
    int64_t begin, end;
    size_t network;
  };
  std::map<char, std::vector<Run>> by_processor;
  for (size_t n = 0; n < r.streams.size(); ++n) {
    const profiler::RunProfile& p = r.streams[n].run.profile;
    for (const profiler::Event& e : p.events) {
      if (e.kind == profiler::EventKind::kSubGraph) {
        by_processor[p.subgraphs.at(e.subgraph).processor].push_back({e.begin_ns, e.end_ns, n});
      }
    }
  }
  for (auto& [letter, runs] : by_processor) {
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
    for (size_t i = 1; i < runs.size(); ++i) {
      ASSERT_LE(runs[i - 1].end, runs[i].begin) << "processor " << letter << " ran two sub-graphs at once";
    }
  }
}

TEST(WorkloadReplicasTest, EveryRequestRunsOnceOnOneReplicaInOrderWithItsOwnBits) {
  const char o = other_letter();
  std::vector<Net> nets = {make_net("squeeze", "squeezenet", 3), make_net("mobile", "mobilenet", 4),
                           make_net("google", "googlenet", 5, 64)};
  // Whole on B or on the other processor; a pipeline with the whole network as its replica.
  const uint32_t s = nets[0].graph.layer_count(), m = nets[1].graph.layer_count(),
                 g = nets[2].graph.layer_count();
  nets[0].order = std::string(s, 'B');
  nets[0].replicas = {std::string(s, o)};
  nets[1].order = std::string(m / 2, 'B') + std::string(m - m / 2, o);
  nets[1].replicas = {std::string(m, o)};
  nets[2].order = std::string(g, o);
  nets[2].replicas = {std::string(g, 'B')};
  const uint64_t frames = 500;
  GroupRun got;
  run_group(nets, frames, got);
  for (size_t n = 0; n < nets.size(); ++n) {
    SCOPED_TRACE(nets[n].name);
    const auto alone = run_alone(nets[n].graph, nets[n].order, nets[n].inputs);
    const Delivered& d = got.delivered[n];
    ASSERT_EQ(d.order.size(), frames) << "requests lost or duplicated";
    for (uint64_t f = 0; f < frames; ++f) ASSERT_EQ(d.order[f], f) << "requests delivered out of order";
    for (uint64_t f = 0; f < frames; ++f) {
      const std::vector<float>& expected = alone.at(f % nets[n].inputs.size());
      const std::vector<float>& actual = d.by_frame.at(f);
      ASSERT_EQ(expected.size(), actual.size());
      ASSERT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)), 0)
          << "request " << f << " differs from the network's own run";
    }
    const WorkloadStreamResult& r = got.result.streams[n];
    EXPECT_EQ(r.run.profile.frames_completed, frames);
    EXPECT_FALSE(r.run.profile.interrupted);
    ASSERT_EQ(r.end_ns.size(), frames);
    // Ends are deliveries, in request order: never before the previous request's.
    for (uint64_t f = 1; f < frames; ++f) ASSERT_GE(r.end_ns[f], r.end_ns[f - 1]) << "request " << f;
    // Each frame ran on exactly one executor: every sub-graph of that executor once, no other.
    const auto per_frame = runs_per_frame(r.run.profile);
    ASSERT_EQ(per_frame.size(), frames);
    const uint32_t first_executor_subgraphs =
        static_cast<uint32_t>(Partition::create(nets[n].graph, nets[n].order).subgraphs().size());
    const uint32_t total_subgraphs = static_cast<uint32_t>(r.run.profile.subgraphs.size());
    uint64_t on_replica = 0;
    for (const auto& [frame, subgraphs] : per_frame) {
      std::set<uint32_t> distinct(subgraphs.begin(), subgraphs.end());
      ASSERT_EQ(distinct.size(), subgraphs.size()) << "frame " << frame << " ran a sub-graph twice";
      const bool replica = *distinct.begin() >= first_executor_subgraphs;
      const uint32_t want = replica ? total_subgraphs - first_executor_subgraphs : first_executor_subgraphs;
      ASSERT_EQ(distinct.size(), want) << "frame " << frame << " ran on more than one executor";
      on_replica += replica ? 1 : 0;
    }
    if (o == 'L') {
      EXPECT_GT(on_replica, 0u) << "the replica never took a request";
      EXPECT_LT(on_replica, frames) << "the first order never took a request";
    }
  }
  expect_one_subgraph_at_a_time(got.result);
}

TEST(WorkloadReplicasTest, AnIdleProcessorTakesTheFramesOfABusyOne) {
  if (host_platform().find('L') == nullptr) GTEST_SKIP() << "needs two CPU clusters (2+ cores)";
  // Two networks whole on B, one of them replicated on L: without the replica L has nothing to
  // do; with it, L runs a good share of that network's requests.
  // squeeze at 64x64 takes longer per frame than mobile at 32x32, so B, alternating the two
  // (oldest first), could run only a minority of mobile's requests even with no help from L.
  std::vector<Net> nets = {make_net("squeeze", "squeezenet", 3, 64), make_net("mobile", "mobilenet", 4)};
  nets[0].order = std::string(nets[0].graph.layer_count(), 'B');
  nets[1].order = std::string(nets[1].graph.layer_count(), 'B');
  nets[1].replicas = {std::string(nets[1].graph.layer_count(), 'L')};
  const uint64_t frames = 200;
  GroupRun got;
  run_group(nets, frames, got);
  std::map<char, uint64_t> mobile_frames;
  const profiler::RunProfile& p = got.result.streams[1].run.profile;
  for (const profiler::Event& e : p.events) {
    if (e.kind == profiler::EventKind::kSubGraph) ++mobile_frames[p.subgraphs.at(e.subgraph).processor];
  }
  EXPECT_EQ(mobile_frames['B'] + mobile_frames['L'], frames);
  // Without the replica L runs none of mobile. B also serves squeeze, so on a quiet host L,
  // free the whole time, takes well over half; the bound is a quarter because ctest runs another
  // test beside this one, which may share L's core for the whole run.
  EXPECT_GT(mobile_frames['L'], frames / 4) << "B " << mobile_frames['B'] << ", L " << mobile_frames['L'];
  ASSERT_EQ(got.delivered[1].order.size(), frames);
  for (uint64_t f = 0; f < frames; ++f) ASSERT_EQ(got.delivered[1].order[f], f);
  expect_one_subgraph_at_a_time(got.result);
}

TEST(WorkloadReplicasTest, RateLimitedRequestsOnReplicasStartNoEarlierThanTheirArrival) {
  const char o = other_letter();
  Net net = make_net("squeeze", "squeezenet", 3);
  net.order = std::string(net.graph.layer_count(), 'B');
  net.replicas = {std::string(net.graph.layer_count(), o)};
  net.rate = 400.0;
  const uint64_t frames = 40;
  GroupRun got;
  run_group({net}, frames, got);
  const WorkloadStreamResult& r = got.result.streams[0];
  ASSERT_EQ(r.arrival_ns.size(), frames);
  ASSERT_EQ(got.delivered[0].order.size(), frames);
  for (uint64_t f = 0; f < frames; ++f) {
    EXPECT_EQ(r.arrival_ns[f], got.result.start_ns + static_cast<int64_t>(static_cast<double>(f) * 1e9 / 400.0));
    EXPECT_GE(r.run.profile.frame_start_ns[f], r.arrival_ns[f]) << "request " << f << " started before it arrived";
    EXPECT_GE(r.end_ns[f], r.arrival_ns[f]);
  }
}

TEST(WorkloadReplicasTest, TheWorkloadFileNamesReplicasAndRefusesBadOnes) {
  const Workload json = parse_workload_json(
      R"({"networks": [{"name": "a", "graph": "squeezenet", "order": "BB", "replicas": ["LL", "BL"]}]})", "w");
  EXPECT_EQ(json.networks[0].replicas, (std::vector<std::string>{"LL", "BL"}));
  const Workload groups = parse_workload_short("squeezenet:BB:name=a:replicas=LL/BL");
  EXPECT_EQ(groups, json);
  EXPECT_EQ(parse_workload_json(workload_json(json), "again"), json);

  const auto message = [](const std::string& text) {
    try {
      parse_workload_json(text, "w");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A string is read as the command line's '/' form.
  EXPECT_EQ(message(R"({"networks": [{"name": "a", "graph": "squeezenet", "order": "BB", "replicas": "LL/BL"}]})"),
            "no error");
  const std::string same = message(R"({"networks": [{"name": "a", "graph": "squeezenet", "order": "BB",
                                        "replicas": ["BB"]}]})");
  EXPECT_NE(same.find("network 'a'"), std::string::npos) << same;
  EXPECT_NE(same.find("replicas: order 'BB' is the network's own order"), std::string::npos) << same;
  const std::string twice = message(R"({"networks": [{"name": "a", "graph": "squeezenet", "order": "BB",
                                         "replicas": ["LL", "LL"]}]})");
  EXPECT_NE(twice.find("network 'a': replicas: order 'LL' is given twice"), std::string::npos) << twice;
  const std::string letters = message(R"({"networks": [{"name": "a", "graph": "squeezenet", "order": "BB",
                                           "replicas": ["B?"]}]})");
  EXPECT_NE(letters.find("replicas: order 'B?'"), std::string::npos) << letters;
  const std::string switched = message(R"({"mode": "switch", "networks": [{"name": "a", "graph": "squeezenet",
                                            "order": "BB", "replicas": ["LL"]}]})");
  EXPECT_NE(switched.find("workload network 'a': replicas run a network's requests side by side"), std::string::npos)
      << switched;
  const std::string type = message(R"({"networks": [{"name": "a", "graph": "squeezenet", "order": "BB",
                                        "replicas": 3}]})");
  EXPECT_NE(type.find("field replicas"), std::string::npos) << type;

  // Against the built graph: one letter per layer, like the order.
  const graph::Graph g = build_network({"squeezenet", "layers", 32, 1, ""});
  WorkloadNetwork n;
  n.name = "a";
  n.graph = "squeezenet";
  n.order = std::string(g.layer_count(), 'B');
  n.replicas = {"BBL"};
  try {
    check_workload_network(n, g, host_platform(), build_plugins());
    ADD_FAILURE() << "a replica of the wrong length was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workload network 'a': replicas: order 'BBL' has 3 letters for " +
                                         std::to_string(g.layer_count()) + " layers"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace co_up
