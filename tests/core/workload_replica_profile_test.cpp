// The merged profile of a replicated network (WorkloadRunner): every executor's layers are
// listed under the processor and sub-graph that ran them, and each row's per-layer times come
// from that executor's events only (the report's layer table and the profile JSON).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/workload.h"
#include "core/workload_runner.h"
#include "profiler/report.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

// Median over frames of the per-frame sum of a layer's kLayer events on one sub-graph.
double layer_median_on(const profiler::RunProfile& p, uint32_t layer, uint32_t subgraph) {
  std::map<uint64_t, double> per_frame;
  for (const profiler::Event& e : p.events) {
    if (e.kind == profiler::EventKind::kLayer && e.layer == layer && e.subgraph == subgraph) {
      per_frame[e.frame] += static_cast<double>(e.end_ns - e.begin_ns) / 1e6;
    }
  }
  std::vector<double> v;
  for (const auto& [f, ms] : per_frame) v.push_back(ms);
  return profiler::median(v);
}

TEST(WorkloadReplicaProfileTest, LayersAreListedUnderTheProcessorThatRanThem) {
  if (host_platform().find('L') == nullptr) GTEST_SKIP() << "needs two CPU clusters (2+ cores)";
  const graph::Graph g = build_network({"squeezenet", "layers", 32, 1, ""});
  const uint32_t layers = g.layer_count();
  const Platform platform = host_platform();
  SharedDevices devices;
  auto share = make_executor_share();
  ExecutorOptions options;
  options.profile_level = 2;  // layer events
  Executor on_b(devices.place(g, std::string(layers, 'B'), platform, build_plugins()), options, share);
  Executor on_l(devices.place(g, std::string(layers, 'L'), platform, build_plugins()), options, share);
  WorkloadStreamSpec s;
  s.executor = &on_b;
  s.replicas = {&on_l};
  s.frames = 60;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> input(static_cast<size_t>(g.tensor(g.inputs().front()).desc.element_count()));
  for (float& x : input) x = dist(rng);
  s.input_sets = {{input}};
  std::vector<WorkloadStreamSpec> specs;
  specs.push_back(std::move(s));
  WorkloadRunner runner(std::move(specs), GroupPolicy::kOldest);
  const WorkloadRunResult r = runner.run();
  const profiler::RunProfile& p = r.streams.at(0).run.profile;

  std::map<char, uint64_t> frames_on;
  for (const profiler::Event& e : p.events) {
    if (e.kind == profiler::EventKind::kSubGraph) ++frames_on[p.subgraphs.at(e.subgraph).processor];
  }
  ASSERT_GT(frames_on['B'], 0u);
  ASSERT_GT(frames_on['L'], 0u) << "the replica on L took no request; nothing to check";

  // One row per layer and executor: B's order first, then the replica's on L.
  ASSERT_EQ(p.layers.size(), 2u * layers);
  const nlohmann::json j = profiler::to_json(p);
  ASSERT_EQ(j["layers"].size(), 2u * layers);
  for (uint32_t k = 0; k < 2 * layers; ++k) {
    const profiler::LayerInfo& row = p.layers[k];
    const char want = k < layers ? 'B' : 'L';
    SCOPED_TRACE("row " + std::to_string(k));
    EXPECT_EQ(row.index, k % layers);
    EXPECT_EQ(row.processor, want);
    ASSERT_LT(row.subgraph, p.subgraphs.size());
    EXPECT_EQ(p.subgraphs[row.subgraph].processor, want) << "the row's sub-graph is not on its processor";
    const nlohmann::json& entry = j["layers"][k];
    EXPECT_EQ(entry["processor"], std::string(1, want));
    // The row's time is its own executor's: the median of that layer's events on its sub-graph.
    EXPECT_DOUBLE_EQ(entry["exec_ms_median"].get<double>(), layer_median_on(p, row.index, row.subgraph));
  }
  // The text report lists layer 0 under both processors.
  std::ostringstream text;
  profiler::print_report(text, p);
  const std::string report = text.str();
  const size_t table = report.find("layer  name");
  ASSERT_NE(table, std::string::npos) << report;
  size_t rows_b = 0, rows_l = 0;
  std::istringstream lines(report.substr(table));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string index, name, proc;
    if (!(fields >> index >> name >> proc) || index != "0") continue;
    rows_b += proc == "B" ? 1 : 0;
    rows_l += proc == "L" ? 1 : 0;
  }
  EXPECT_EQ(rows_b, 1u) << report;
  EXPECT_EQ(rows_l, 1u) << report;
}

}  // namespace
}  // namespace co_up
