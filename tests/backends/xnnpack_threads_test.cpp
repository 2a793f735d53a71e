// cpu-xnnpack's intra-op threads on a cluster of two cores: a sub-graph run by a two-thread pool
// gives the same bits as one thread — the modern ONNX fixtures (transformers, Inception-v4, a
// detector, depthwise/SE CNNs) and zoo networks by layer and by op, across frames with different
// inputs; the pool's threads run on the cluster's cores (sched_getaffinity from inside each), and
// the two halves of a split cluster (--split-cluster) pin their pools to disjoint cores.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <span>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "xnn_thread_pool.h"

namespace co_up {
namespace {

const PluginRegistry& plugins() {
  static const PluginRegistry registry = [] {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    return PluginRegistry::load_directory(dir != nullptr ? dir : "plugins");
  }();
  return registry;
}

bool two_cores() { return std::thread::hardware_concurrency() >= 2; }

// B = cores 0 and 1 (platforms/host-2core-cluster.json) with `threads` intra-op threads.
Platform cluster(int threads) {
  return parse_platform(R"({"name": "cluster", "processors": [{"letter": "B", "kind": "cpu",
      "backend": ["cpu-xnnpack"], "cores": [0, 1], "threads": )" + std::to_string(threads) + "}]}",
                        "xnnpack threads test");
}

// Every graph output of every frame (three frames, three different inputs), all on B.
std::vector<std::vector<float>> run_all_b(const graph::Graph& g, const Platform& p) {
  Executor executor(g, Partition::create(g, std::string(g.layer_count(), 'B')), p, plugins(), {});
  RunRequest request;
  request.frames = 3;
  request.input_sets = {seeded_inputs(g, 1), seeded_inputs(g, 2), seeded_inputs(g, 3)};
  std::vector<std::vector<float>> outputs;
  request.on_output = [&](uint64_t, uint32_t, std::span<const float> data) {
    outputs.emplace_back(data.begin(), data.end());
  };
  const RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, 3u);
  return outputs;
}

void expect_two_threads_equal_one(const NetworkSpec& spec, const std::string& what) {
  const graph::Graph g = build_network(spec);
  const auto one = run_all_b(g, cluster(1));
  ASSERT_FALSE(one.empty()) << what;
  const auto two = run_all_b(g, cluster(2));
  ASSERT_EQ(two.size(), one.size()) << what;
  for (size_t i = 0; i < one.size(); ++i) {
    // Bit for bit: every kernel splits outputs between threads, never a reduction.
    EXPECT_EQ(two[i], one[i]) << what << ": output " << i << " differs between 1 and 2 threads";
  }
}

class ModernFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(ModernFixture, TwoThreadsEqualOneBitForBit) {
  if (!two_cores()) GTEST_SKIP() << "needs two cores for a two-thread cluster";
  NetworkSpec spec;
  spec.model = std::string(CO_UP_SOURCE_DIR) + "/tests/fixtures/onnx/" + GetParam() + ".onnx";
  expect_two_threads_equal_one(spec, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Onnx, ModernFixture,
                         ::testing::Values("vit_tiny", "bert_tiny", "swin_tiny", "inception_v4_tiny",
                                           "yolo_tiny", "convnext_tiny_tiny", "efficientnet_b0_tiny",
                                           "mobilenet_v3_small_tiny"));

TEST(ZooThreads, TwoThreadsEqualOneBitForBitByOp) {
  if (!two_cores()) GTEST_SKIP() << "needs two cores for a two-thread cluster";
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer sees the same pool hand-offs in one network; the numerics are the Release
  // suite's business.
  const std::vector<const char*> names = {"mobilenet"};
#else
  const std::vector<const char*> names = {"googlenet", "resnet50", "mobilenet"};
#endif
  for (const char* name : names) {
    expect_two_threads_equal_one({name, "ops", 64, 7, ""}, std::string(name) + " --units=ops");
  }
#if !defined(__SANITIZE_THREAD__)
  // Inception-v3's 1x7/7x1 and 1x3/3x1 convolutions; 75x75 is its smallest input.
  expect_two_threads_equal_one({"inception_v3", "branches", 80, 7, ""}, "inception_v3 --units=branches");
#endif
}

// The cluster's pool: worker i on cores[i], the caller left where the runtime pinned it.
TEST(ClusterPool, WorkersRunOnTheClusterCores) {
  if (!two_cores()) GTEST_SKIP() << "needs two cores";
  const Platform p = cluster(2);
  const ProcessorSpec& b = *p.find('B');
  xnnpack::CpuPool pool(b.threads, b.cores, xnnpack::Schedule::kDynamic);
  const auto affinities = pool.thread_affinities();
  ASSERT_EQ(affinities.size(), 2u);
  EXPECT_EQ(affinities[1], std::vector<int>{b.cores[1]});
}

// A split cluster: each half's pool (and its caller, pinned here as the runtime pins a host
// thread) runs on its own half only; no core is used by both.
TEST(ClusterPool, SplitHalvesNeverShareACore) {
  if (!two_cores()) GTEST_SKIP() << "needs two cores";
  Platform p = cluster(2);
  apply_overrides(p, {.split_cluster = ClusterSplit{'B', 'C'}});
  std::set<int> used_by_b;
  for (char letter : {'B', 'C'}) {
    const ProcessorSpec& half = *p.find(letter);
    std::vector<std::vector<int>> affinities;
    std::thread host([&] {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : half.cores) CPU_SET(c, &set);
      ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
      xnnpack::CpuPool pool(half.threads, half.cores, xnnpack::Schedule::kDynamic);
      affinities = pool.thread_affinities();
    });
    host.join();
    ASSERT_EQ(affinities.size(), size_t(half.threads)) << letter;
    for (const std::vector<int>& cores : affinities) {
      for (int c : cores) {
        EXPECT_NE(std::find(half.cores.begin(), half.cores.end(), c), half.cores.end())
            << letter << " runs on core " << c << ", outside its half";
        if (letter == 'B') used_by_b.insert(c);
        if (letter == 'C') {
          EXPECT_EQ(used_by_b.count(c), 0u) << "core " << c << " used by B and C";
        }
      }
    }
  }
}

}  // namespace
}  // namespace co_up
