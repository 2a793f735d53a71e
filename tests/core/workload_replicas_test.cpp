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
#include "tests/core/workload_harness.h"
#include "tests/sanitizer_size.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

using testing::distinct_inputs;
using namespace workload_harness;

char other_letter() { return host_platform().find('L') != nullptr ? 'L' : 'B'; }

Net make_net(const std::string& name, const std::string& zoo, uint32_t seed, int64_t image_size = 32) {
  Net n{name, build_network({zoo, "layers", image_size, seed, ""}), "", {}, {}};
  n.inputs = distinct_inputs(n.graph, 5, seed);
  return n;
}

// Every network `frames` requests, oldest first; `rate` (requests/s) for every network, or as
// fast as they go.
void run_group(const std::vector<Net>& nets, uint64_t frames, GroupRun& out, std::optional<double> rate = {}) {
  workload_harness::run_group(nets, std::vector<uint64_t>(nets.size(), frames),
                              std::vector<std::optional<double>>(nets.size(), rate), std::vector<int>(nets.size(), 0),
                              GroupPolicy::kOldest, out);
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
  const uint64_t frames = test::size_for_this_build<uint64_t>("requests per network", 500, 100);
  GroupRun got;
  run_group(nets, frames, got);
  expect_every_frame_as_alone(nets, got, frames);
  if (HasFatalFailure()) return;
  for (size_t n = 0; n < nets.size(); ++n) {
    SCOPED_TRACE(nets[n].name);
    const WorkloadStreamResult& r = got.result.streams[n];
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
  const uint64_t frames = 40;
  GroupRun got;
  run_group({net}, frames, got, 400.0);
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
