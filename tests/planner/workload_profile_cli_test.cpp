// `co_up profile --workload` end to end on two small networks over B and L: the workload profile
// it writes (layer profiles, co-runs, the regression and which co-runs it was not fitted to) and
// its one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "planner/workload_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"
#include "tests/sanitizer_size.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;

class WorkloadProfileCli : public ::testing::Test {
 protected:
  test::Exit run(std::vector<std::string> args) {
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_.path()), dir_.path());
  }
  test::ScratchDir dir_;
};

TEST_F(WorkloadProfileCli, MeasuresNetworksAloneAndCoRunsAndHoldsSomeOut) {
  const auto w = dir_.write("w.json", R"({"networks": [
      {"name": "sq", "graph": "squeezenet", "image_size": 32},
      {"name": "alex", "graph": "alexnet", "image_size": 67}]})");
  const auto p = dir_ / "p.json";
  const int repetitions = test::size_for_this_build("measured frames per run (--repetitions)", 2, 1);
  const test::Exit x = run({"profile", "--workload=" + w.string(), "--profile-out=" + p.string(), "--processors=BL",
                            "--repetitions=" + std::to_string(repetitions), "--coruns=4"});
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  const planner::WorkloadProfile wp = planner::read_workload_profile(p);
  EXPECT_EQ(wp.processors, "BL");
  ASSERT_EQ(wp.networks.size(), 2u);
  EXPECT_EQ(wp.networks[0].name, "sq");
  EXPECT_EQ(wp.networks[0].profile.network.layer_count, 10u);
  EXPECT_EQ(wp.networks[1].profile.network.layer_count, 8u);
  for (const planner::WorkloadProfileNetwork& n : wp.networks) {
    EXPECT_GT(n.weight_bytes, 0);
    EXPECT_GT(n.macs, 0);
    ASSERT_NE(n.profile.find_layer_times('B', 0), nullptr);
    ASSERT_NE(n.profile.find_layer_times('L', 0), nullptr);
    EXPECT_NE(n.profile.find_transfer('B', 'L'), nullptr);
    // Whole frames alone at batch 1, 2 and 4 on both processors (the affine batch time's points).
    ASSERT_EQ(n.batch_times.size(), 2u) << n.name;
    for (const auto& [letter, points] : n.batch_times) {
      ASSERT_EQ(points.size(), 3u) << n.name << " on " << letter;
      for (size_t j = 0; j < points.size(); ++j) {
        EXPECT_EQ(points[j].batch, 1u << j);
        EXPECT_GT(points[j].frame_us, 0);
      }
    }
    EXPECT_THAT(x.out, HasSubstr("batch times of " + n.name + " on B (whole frames alone; ms per frame, per request): b1 "));
  }
  // One processor pair, 4 co-runs of 2 networks (sq|alex, alex|sq, then each with itself): 8 samples.
  ASSERT_EQ(wp.coruns.size(), 8u);
  std::set<std::pair<std::string, std::string>> pairs;
  for (const planner::CoRunSample& s : wp.coruns) {
    EXPECT_GT(s.solo_us, 0);
    EXPECT_GT(s.corun_us, 0);
    EXPECT_NE(s.victim_processor, s.aggressor_processor);
    if (s.victim_processor == 'B') pairs.insert({s.victim, s.aggressor});
  }
  EXPECT_EQ(pairs.size(), 4u);
  // Held out: co-run 1 of the pair (every third from the second), and not fitted.
  EXPECT_EQ(wp.held_out_coruns, (std::vector<int>{1}));
  ASSERT_TRUE(wp.contention.has_value());
  EXPECT_TRUE(wp.contention->has_pair('B', 'L'));
  EXPECT_EQ(wp.held_out_error.samples, 2u);
  EXPECT_THAT(x.out, HasSubstr("(held out)"));
  EXPECT_THAT(x.out, HasSubstr("held-out error over 2 predictions (1 co-runs)"));
}

TEST_F(WorkloadProfileCli, BadInputsAreOneLineErrors) {
  const auto w = dir_.write("w.json", R"({"networks": [{"name": "x", "graph": "nonet"}]})");
  const test::Exit a = run({"profile", "--workload=" + w.string(), "--profile-out=" + (dir_ / "p.json").string()});
  EXPECT_EQ(a.code, 2);
  EXPECT_THAT(a.err, HasSubstr("co_up: error: workload network 'x': "));
  EXPECT_EQ(std::count(a.err.begin(), a.err.end(), '\n'), 1) << a.err;
  const test::Exit b = run({"profile", "--workload=" + w.string()});
  EXPECT_EQ(b.code, 2);
  EXPECT_EQ(b.err, "co_up: error: co_up profile --workload needs --profile-out=FILE (where the workload profile goes)\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "p.json"));
}

}  // namespace
}  // namespace co_up
