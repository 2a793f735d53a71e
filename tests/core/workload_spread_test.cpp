// Affinity across processors (Executor::run_group with affinity, GroupMember::network): a
// processor thread changing network prefers one that no other thread ran last, so with replicas
// each processor keeps to a network of its own instead of all of them starting on (and walking
// through) the policy's networks in step.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/workload.h"
#include "core/workload_runner.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

struct ProcessorRun {
  size_t network;
  int64_t begin_ns, end_ns;
};

// Three networks whole on B, each with a replica whole on L, as fast as possible; per processor
// letter, its sub-graph runs in the order they began.
std::map<char, std::vector<ProcessorRun>> run_replicated(uint64_t frames, bool affinity) {
  const Platform platform = host_platform();
  SharedDevices devices;
  auto share = make_executor_share();
  ExecutorOptions options;
  options.profile_level = 1;
  std::vector<graph::Graph> graphs;
  for (const char* zoo : {"squeezenet", "mobilenet", "squeezenet"}) {
    graphs.push_back(build_network({zoo, "layers", 32, static_cast<uint32_t>(graphs.size() + 1), ""}));
  }
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<WorkloadStreamSpec> specs;
  for (size_t i = 0; i < graphs.size(); ++i) {
    const uint32_t layers = graphs[i].layer_count();
    executors.push_back(std::make_unique<Executor>(
        devices.place(graphs[i], std::string(layers, 'B'), platform, build_plugins()), options, share));
    WorkloadStreamSpec s;
    s.executor = executors.back().get();
    executors.push_back(std::make_unique<Executor>(
        devices.place(graphs[i], std::string(layers, 'L'), platform, build_plugins()), options, share));
    s.replicas.push_back(executors.back().get());
    s.frames = frames;
    s.input_sets = testing::distinct_inputs(graphs[i], 2, static_cast<uint32_t>(i + 1));
    specs.push_back(std::move(s));
  }
  WorkloadRunner runner(std::move(specs), GroupPolicy::kOldest, affinity);
  const WorkloadRunResult result = runner.run();
  std::map<char, std::vector<ProcessorRun>> out;
  for (size_t n = 0; n < result.streams.size(); ++n) {
    const profiler::RunProfile& p = result.streams[n].run.profile;
    EXPECT_EQ(p.frames_completed, frames) << "network " << n;
    for (const profiler::Event& e : p.events) {
      if (e.kind == profiler::EventKind::kSubGraph) {
        out[p.subgraphs.at(e.subgraph).processor].push_back({n, e.begin_ns, e.end_ns});
      }
    }
  }
  for (auto& [letter, runs] : out) {
    std::sort(runs.begin(), runs.end(), [](const ProcessorRun& a, const ProcessorRun& b) { return a.begin_ns < b.begin_ns; });
  }
  return out;
}

TEST(WorkloadSpreadTest, ProcessorsStartOnDifferentNetworksAndKeepToThem) {
  if (host_platform().find('L') == nullptr) GTEST_SKIP() << "needs two CPU clusters (2+ cores)";
  const uint64_t frames = 30;
  const auto kept = run_replicated(frames, true);
  ASSERT_EQ(kept.size(), 2u);
  const std::vector<ProcessorRun>& b = kept.at('B');
  const std::vector<ProcessorRun>& l = kept.at('L');
  ASSERT_FALSE(b.empty());
  ASSERT_FALSE(l.empty());
  // Both threads start at once and the policy prefers network 0 on both: one of them takes
  // another network instead.
  EXPECT_NE(b.front().network, l.front().network);
  // Each keeps to the network it started on until that network has no request left for it, so
  // the processor that started on a network runs a good part of its requests (about all of them
  // here; a third leaves room for a loaded host stalling one thread).
  const size_t first = b.front().network;
  const auto on = [](const std::vector<ProcessorRun>& runs, size_t net) {
    return static_cast<size_t>(std::count_if(runs.begin(), runs.end(), [net](const ProcessorRun& r) { return r.network == net; }));
  };
  EXPECT_GT(on(b, first), frames / 3) << "B ran " << on(b, first) << " of network " << first << "'s " << frames;
  // The guarantees hold (every network's frames completed: checked in run_replicated).
}

}  // namespace
}  // namespace co_up
