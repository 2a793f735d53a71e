// Affinity (Executor::run_group's `affinity`, a workload's "affinity"): a processor keeps to the
// network it ran last while that network has a request ready, between networks run whole on it
// as fast as possible; pipelined and rate-limited networks keep the policy's order; with replicas each
// processor runs a network's requests back to back; the workload field and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/workload.h"
#include "core/workload_runner.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

using InputSets = std::vector<std::vector<std::vector<float>>>;

struct Net {
  graph::Graph graph;
  std::string order;
  std::vector<std::string> replicas;
  std::optional<double> rate;
};

Net whole_on_b(const std::string& zoo, uint32_t seed) {
  Net n{build_network({zoo, "layers", 32, seed, ""}), "", {}, {}};
  n.order = std::string(n.graph.layer_count(), 'B');
  return n;
}

// Per processor letter, the networks of its sub-graph runs in the order they began.
std::map<char, std::vector<size_t>> run(const std::vector<Net>& nets, uint64_t frames, GroupPolicy policy,
                                        bool affinity, const Workload* plan = nullptr) {
  const Platform platform = host_platform();
  SharedDevices devices;
  auto share = make_executor_share();
  ExecutorOptions options;
  options.profile_level = 1;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<WorkloadStreamSpec> specs;
  std::optional<PlanRanks> ranks;
  if (plan != nullptr) ranks.emplace(*plan);
  for (size_t i = 0; i < nets.size(); ++i) {
    executors.push_back(std::make_unique<Executor>(
        devices.place(nets[i].graph, nets[i].order, platform, build_plugins()), options, share));
    WorkloadStreamSpec s;
    s.executor = executors.back().get();
    for (const std::string& r : nets[i].replicas) {
      executors.push_back(
          std::make_unique<Executor>(devices.place(nets[i].graph, r, platform, build_plugins()), options, share));
      s.replicas.push_back(executors.back().get());
    }
    s.frames = frames;
    s.rate = nets[i].rate;
    s.input_sets = testing::distinct_inputs(nets[i].graph, 2, static_cast<uint32_t>(i + 1));
    if (ranks) s.plan_rank = [&ranks, i](uint64_t f) { return ranks->rank(i, f); };
    specs.push_back(std::move(s));
  }
  WorkloadRunner runner(std::move(specs), policy, affinity);
  const WorkloadRunResult result = runner.run();
  std::map<char, std::vector<std::pair<int64_t, size_t>>> begun;
  for (size_t n = 0; n < result.streams.size(); ++n) {
    const profiler::RunProfile& p = result.streams[n].run.profile;
    EXPECT_EQ(p.frames_completed, frames) << "network " << n;
    for (const profiler::Event& e : p.events) {
      if (e.kind == profiler::EventKind::kSubGraph) begun[p.subgraphs.at(e.subgraph).processor].push_back({e.begin_ns, n});
    }
  }
  std::map<char, std::vector<size_t>> out;
  for (auto& [letter, runs] : begun) {
    std::sort(runs.begin(), runs.end());
    for (const auto& [begin, network] : runs) out[letter].push_back(network);
  }
  return out;
}

size_t switches(const std::vector<size_t>& sequence) {
  size_t n = 0;
  for (size_t i = 1; i < sequence.size(); ++i) n += sequence[i] != sequence[i - 1] ? 1 : 0;
  return n;
}

TEST(WorkloadAffinityTest, OldestKeepsToTheNetworkItRanLast) {
  const std::vector<Net> nets = {whole_on_b("squeezenet", 1), whole_on_b("squeezenet", 2)};
  // Without affinity the two alternate (WorkloadTest.OldestFirstAlternatesNetworksThatArriveTogether).
  EXPECT_EQ(run(nets, 6, GroupPolicy::kOldest, true).at('B'),
            (std::vector<size_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(run(nets, 6, GroupPolicy::kOldest, false).at('B'),
            (std::vector<size_t>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(WorkloadAffinityTest, PlanStartsWhereThePlanStartsThenKeeps) {
  const std::vector<Net> nets = {whole_on_b("squeezenet", 1), whole_on_b("squeezenet", 2)};
  const Workload w = parse_workload_short("squeezenet:B:name=a;squeezenet:B:name=b;plan=b,a,a");
  EXPECT_EQ(run(nets, 6, GroupPolicy::kPlan, true, &w).at('B'),
            (std::vector<size_t>{1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(WorkloadAffinityTest, APipelinedNetworkIsNeverKept) {
  if (host_platform().find('L') == nullptr) GTEST_SKIP() << "needs two CPU clusters (2+ cores)";
  // Network 0 runs all but its last layer on B and the last (tiny) one on L, so its B stage is
  // ready again as soon as B is free (its receiver has room for more than one frame); network 1
  // is whole on B. Both start with frame 0: B runs network 0's first (listed first), then,
  // oldest first, network 1's frame 0. Kept, it would run network 0's frame 1 second. (Later
  // runs depend on L keeping up, which a loaded host does not promise.)
  Net pipelined = whole_on_b("squeezenet", 1);
  pipelined.order.back() = 'L';
  const std::vector<Net> nets = {pipelined, whole_on_b("squeezenet", 2)};
  const std::vector<size_t> seq = run(nets, 6, GroupPolicy::kOldest, true).at('B');
  ASSERT_EQ(seq.size(), 12u);
  EXPECT_EQ(seq[0], 0u);
  EXPECT_EQ(seq[1], 1u) << "B kept to the pipelined network";
}

TEST(WorkloadAffinityTest, RateLimitedNetworksKeepTheirArrivalOrder) {
  // Requests every microsecond: all waiting after the first frame; oldest first alternates them
  // (equal arrival times go by frame number, then network), affinity or not.
  std::vector<Net> nets = {whole_on_b("squeezenet", 1), whole_on_b("squeezenet", 2)};
  for (Net& n : nets) n.rate = 1e6;
  EXPECT_EQ(run(nets, 6, GroupPolicy::kOldest, true).at('B'),
            (std::vector<size_t>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(WorkloadAffinityTest, ReplicatedNetworksRunBackToBackOnEachProcessor) {
  if (host_platform().find('L') == nullptr) GTEST_SKIP() << "needs two CPU clusters (2+ cores)";
  std::vector<Net> nets = {whole_on_b("squeezenet", 1), whole_on_b("mobilenet", 2), whole_on_b("squeezenet", 3)};
  for (Net& n : nets) n.replicas = {std::string(n.graph.layer_count(), 'L')};
  const uint64_t frames = 40;
  const auto kept = run(nets, frames, GroupPolicy::kOldest, true);
  // Each processor goes through the networks once; a request it reserved before switching away
  // (at most one per network) runs when it comes back, so at most 2 x (networks - 1) switches.
  for (const auto& [letter, sequence] : kept) {
    EXPECT_LE(switches(sequence), 4u) << "processor " << letter << " switched networks " << switches(sequence)
                                      << " times";
  }
  // Without affinity the processors interleave the networks request by request.
  const auto interleaved = run(nets, frames, GroupPolicy::kOldest, false);
  EXPECT_GT(switches(interleaved.at('B')) + switches(interleaved.at('L')), 20u);
}

TEST(WorkloadAffinityTest, TheWorkloadFileSetsIt) {
  const Workload json = parse_workload_json(
      R"({"affinity": true, "networks": [{"name": "a", "graph": "squeezenet", "order": "BB"}]})", "w");
  EXPECT_TRUE(json.affinity);
  EXPECT_FALSE(parse_workload_json(R"({"networks": [{"name": "a", "graph": "squeezenet", "order": "BB"}]})", "w")
                   .affinity);
  EXPECT_EQ(parse_workload_short("squeezenet:BB:name=a;affinity=1"), json);
  EXPECT_FALSE(parse_workload_short("squeezenet:BB:name=a;affinity=0").affinity);
  // Written only when set; read back equal.
  EXPECT_NE(workload_json(json).find("\"affinity\": true"), std::string::npos) << workload_json(json);
  EXPECT_EQ(parse_workload_json(workload_json(json), "again"), json);
  Workload off = json;
  off.affinity = false;
  EXPECT_EQ(workload_json(off).find("affinity"), std::string::npos) << workload_json(off);

  const auto message = [](const auto& parse) {
    try {
      parse();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] {
              parse_workload_json(R"({"affinity": "yes", "networks": [{"graph": "squeezenet", "order": "B"}]})", "w");
            }),
            "w: \"affinity\" must be true or false");
  EXPECT_EQ(message([] { parse_workload_short("squeezenet:B;affinity=yes"); }),
            "workload setting affinity='yes' must be 0 or 1");
}

}  // namespace
}  // namespace co_up
