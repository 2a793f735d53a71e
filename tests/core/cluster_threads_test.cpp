// A CPU cluster of several cores: split between two processors (--split-cluster) or given to one
// stage with several intra-op threads. The two halves of a split cluster never share a core (their
// host threads run on their own halves); bad thread counts and bad splits are one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/affinity.h"
#include "core/cluster_split.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "tests/cli/scratch_dir.h"
#include "tests/core/test_support.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using testing::build_plugins;

// One cluster B of `cores` with a DVFS table and a power model, a GPU hosted on it and a sensor
// rail feeding B and the GPU.
Platform cluster_platform(const std::string& cores, int threads, const std::string& backend = "cpu-reference") {
  return parse_platform(R"({"name": "cluster", "processors": [
      {"letter": "B", "name": "big", "kind": "cpu", "backend": [")" + backend + R"("],
       "cores": )" + cores + R"(, "threads": )" + std::to_string(threads) + R"(,
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy0",
                "frequencies_khz": [1000000, 2000000]},
       "power_model": {"alpha": 2.0, "beta": 0.4}},
      {"letter": "G", "kind": "gpu", "backend": "opencl", "host": "B"}],
    "sensors": [{"name": "rail", "kind": "power", "processors": "BG", "path": "p"}]})",
                        "cluster test");
}

std::string one_line_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(ClusterSplit, HalvesTheCoresAndKeepsOneClock) {
  Platform p = cluster_platform("[0, 1]", 2);
  apply_overrides(p, {.split_cluster = ClusterSplit{'B', 'C'}});
  ASSERT_NE(p.find('C'), nullptr);
  EXPECT_EQ(p.letters(), "BCG");  // the new half right after the cluster it came from
  EXPECT_EQ(p.find('B')->cores, std::vector<int>{0});
  EXPECT_EQ(p.find('C')->cores, std::vector<int>{1});
  EXPECT_EQ(p.find('B')->threads, 1);
  EXPECT_EQ(p.find('C')->threads, 1);
  EXPECT_EQ(p.find('C')->backends, p.find('B')->backends);
  EXPECT_EQ(p.find('C')->dvfs.nodes, p.find('B')->dvfs.nodes);
  EXPECT_EQ(p.dvfs_domain('C'), "BC");  // one cpufreq policy: one clock for both halves
  EXPECT_DOUBLE_EQ(p.find('B')->power_model.alpha, 1.0);
  EXPECT_DOUBLE_EQ(p.find('C')->power_model.beta, 0.2);
  EXPECT_EQ(p.find('G')->host, 'B');
  EXPECT_EQ(p.sensors.at(0).processors, "BGC");
}

TEST(ClusterSplit, OddAndLargerClusters) {
  Platform four = cluster_platform("[4, 5, 6, 7]", 4);
  split_cluster(four, {'B', 'C'}, "--split-cluster");
  EXPECT_EQ(four.find('B')->cores, (std::vector<int>{4, 5}));
  EXPECT_EQ(four.find('C')->cores, (std::vector<int>{6, 7}));
  EXPECT_EQ(four.find('B')->threads, 2);
  EXPECT_EQ(four.find('C')->threads, 2);
  Platform three = cluster_platform("[0, 1, 2]", 1);
  split_cluster(three, {'B', 'D'}, "--split-cluster");
  EXPECT_EQ(three.find('B')->cores, (std::vector<int>{0, 1}));
  EXPECT_EQ(three.find('D')->cores, (std::vector<int>{2}));
  EXPECT_EQ(three.find('B')->threads, 1);  // never more threads than the cluster had
  EXPECT_EQ(three.find('D')->threads, 1);
}

TEST(ClusterSplit, BadSplitsAreOneLineErrors) {
  Platform one = cluster_platform("[0]", 1);
  EXPECT_EQ(one_line_error([&] { split_cluster(one, {'B', 'C'}, "--split-cluster"); }),
            "--split-cluster=B:C: cluster 'B' of platform 'cluster' has 1 core (0); splitting needs 2 or more");
  Platform two = cluster_platform("[0, 1]", 2);
  EXPECT_EQ(one_line_error([&] { split_cluster(two, {'B', 'G'}, "--split-cluster"); }),
            "--split-cluster=B:G: platform 'cluster' already has a processor 'G'; pick a free letter");
  EXPECT_EQ(one_line_error([&] { split_cluster(two, {'G', 'C'}, "--split-cluster"); }),
            "--split-cluster=G:C: platform 'cluster' has no CPU cluster 'G' (its processors: BG)");
  for (const char* bad : {"BC", "B:B", "b:c", "B:", "B:CD", ""}) {
    const std::string e = one_line_error([&] { parse_cluster_split(bad, "--split-cluster"); });
    EXPECT_EQ(e.rfind(std::string("--split-cluster='") + bad + "' must be CLUSTER:NEW", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  const ClusterSplit ok = parse_cluster_split("B:C", "--split-cluster");
  EXPECT_EQ(ok.letter, 'B');
  EXPECT_EQ(ok.new_letter, 'C');
}

TEST(ClusterSplit, ThreadsApplyToTheWholeClusterBeforeTheSplit) {
  Platform p = cluster_platform("[4, 5, 6, 7]", 4);
  apply_overrides(p, {.threads_big = 1, .split_cluster = ClusterSplit{'B', 'C'}});
  EXPECT_EQ(p.find('B')->threads, 1);
  EXPECT_EQ(p.find('C')->threads, 1);
  EXPECT_EQ(one_line_error([&] {
              Platform q = cluster_platform("[0, 1]", 2);
              apply_overrides(q, {.threads_big = 3});
            }),
            "--threads=3 but cluster 'B' has 2 core(s) (0,1); use 1..2");
  EXPECT_EQ(one_line_error([] { cluster_platform("[0, 1]", 3); }),
            "cluster test: \"processors\"[0] ('B') has threads 3 for 2 core(s) (use 1..2)");
}

bool two_cores() { return std::thread::hardware_concurrency() >= 2; }

// Two stages on the two halves of a split cluster, pipelined: the thread that finishes a frame
// (the last stage's host thread) runs on its own half only, and the halves do not overlap.
TEST(ClusterSplit, TwoStagesOnASplitClusterNeverUseTheSameCore) {
  if (!two_cores()) GTEST_SKIP() << "needs two cores";
  Platform p = cluster_platform("[0, 1]", 2);
  apply_overrides(p, {.split_cluster = ClusterSplit{'B', 'C'}});
  check_cores_exist(p);
  const std::vector<int>& b = p.find('B')->cores;
  const std::vector<int>& c = p.find('C')->cores;
  for (int core : b) EXPECT_EQ(std::count(c.begin(), c.end(), core), 0) << "core " << core;
  const graph::Graph g = build_network({"alexnet", "layers", 64, 7, ""});
  for (const char* order : {"BBBBCCCC", "CCCCBBBB"}) {
    Executor executor(g, Partition::create(g, order), p, build_plugins(), {});
    RunRequest request;
    request.frames = 4;
    request.input_sets = {seeded_inputs(g, 1)};
    std::vector<std::vector<int>> seen;
    request.on_output = [&](uint64_t, uint32_t, std::span<const float>) {
      seen.push_back(current_thread_affinity());
    };
    executor.run(request);
    ASSERT_EQ(seen.size(), 4u) << order;
    for (const std::vector<int>& cores : seen) EXPECT_EQ(cores, p.find(order[7])->cores) << order;
  }
}

// The command line: --split-cluster and thread counts are checked before any work, one line each.
TEST(ClusterThreadsCli, BadThreadCountsAndSplitsAreOneLineErrors) {
  const test::ScratchDir scratch;
  const std::string cluster = std::string(CO_UP_SOURCE_DIR) + "/platforms/host-2core-cluster.json";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--threads=0"}, "co_up: error: --threads=0 is out of range (1..1024)\n"},
      {{"--threads=3"}, "co_up: error: --threads=3 but cluster 'B' has 2 core(s) (0,1); use 1..2\n"},
      {{"--split-cluster=B:N"},
       "co_up: error: --split-cluster=B:N: platform 'host-2core-cluster' already has a processor "
       "'N'; pick a free letter\n"},
      {{"--split-cluster=B"},
       "co_up: error: --split-cluster='B' must be CLUSTER:NEW, two different upper-case letters "
       "(e.g. B:C: B keeps the first half of its cores, C gets the rest)\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--platform=" + cluster, "--graph=alexnet", "--image-size=64",
                                     "--order=BBBBBBBB", "--n=1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = test::run_program(CO_UP_BINARY, args, scratch.path());
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_EQ(r.err, c.message) << r;
  }
}

// A split cluster runs: B and C pipelined on their own halves.
TEST(ClusterThreadsCli, SplitClusterRunsAPipeline) {
  if (!two_cores()) GTEST_SKIP() << "needs two cores";
  const test::ScratchDir scratch;
  const std::string cluster = std::string(CO_UP_SOURCE_DIR) + "/platforms/host-2core-cluster.json";
  const std::vector<std::string> split = {"--platform=" + cluster, "--split-cluster=B:C"};
  auto list = split;
  list.push_back("--list-devices");
  const auto devices = test::run_program(CO_UP_BINARY, list, scratch.path());
  EXPECT_EQ(devices.exit_code, 0) << devices;
  EXPECT_NE(devices.out.find("cores 0, threads 1"), std::string::npos) << devices;
  EXPECT_NE(devices.out.find("cores 1, threads 1"), std::string::npos) << devices;
  auto run = split;
  run.insert(run.end(), {"--graph=alexnet", "--image-size=64", "--order=BBBBCCCC", "--n=3"});
  const auto r = test::run_program(CO_UP_BINARY, run, scratch.path());
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("order BBBBCCCC, mode pipeline, platform host-2core-cluster: 3/3 frames"), std::string::npos) << r;
}

// co_up profile measures a cluster of several cores at every thread count; co_up plan picks one
// with --threads, and refuses a count the profile lacks in one line.
TEST(ClusterThreadsCli, ProfileMeasuresEveryThreadCountAndPlanPicksOne) {
  if (!two_cores()) GTEST_SKIP() << "needs two cores";
  const test::ScratchDir scratch;
  const std::string cluster = std::string(CO_UP_SOURCE_DIR) + "/platforms/host-2core-cluster.json";
  const std::string profile = (scratch / "profile.json").string();
  const auto p = test::run_program(CO_UP_BINARY,
                                   {"profile", "--graph=alexnet", "--image-size=64", "--platform=" + cluster,
                                    "--processors=B", "--repetitions=2", "--profile-out=" + profile},
                                   scratch.path());
  ASSERT_EQ(p.exit_code, 0) << p;
  EXPECT_NE(p.out.find("  B 1 thread "), std::string::npos) << p;
  EXPECT_NE(p.out.find("  B 2 threads "), std::string::npos) << p;
  std::ifstream in(profile);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"threads:B:1\""), std::string::npos);
  EXPECT_NE(text.find("\"threads:B:2\""), std::string::npos);
  const auto plan = test::run_program(CO_UP_BINARY,
                                      {"plan", "--profile=" + profile, "--objective=latency", "--threads=1"},
                                      scratch.path());
  EXPECT_EQ(plan.exit_code, 0) << plan;
  EXPECT_NE(plan.out.find("intra-op threads: B runs with 1"), std::string::npos) << plan;
  const auto bad = test::run_program(CO_UP_BINARY,
                                     {"plan", "--profile=" + profile, "--objective=latency", "--threads=3"},
                                     scratch.path());
  EXPECT_EQ(bad.exit_code, 2) << bad;
  EXPECT_EQ(bad.err,
            "co_up: error: the profile has no layer times of 'B' at 3 thread(s) (measured: 1, 2); "
            "co_up profile measures 1..cores threads of a cluster of several cores\n") << bad;
}

}  // namespace
}  // namespace co_up
