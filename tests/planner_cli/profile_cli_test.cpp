// The co_up binary: `co_up profile` end to end (output, resume, mismatch, Ctrl-C) and
// `co_up plan --verify` on the profile it wrote. cpu-reference B/L, small networks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "planner/layer_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

using test::Exit;

pid_t spawn(const std::vector<std::string>& args, const fs::path& dir) {
  return test::spawn_process(CO_UP_BINARY, args, dir);
}
Exit finish(pid_t pid, const fs::path& dir) { return test::finish_process(pid, dir); }

class ProfileCliTest : public ::testing::Test {
 protected:
  ProfileCliTest() {
    platform_ = dir_.write("ref2.json", R"({"name": "ref2", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
      {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1]}]})")
                    .string();
  }
  Exit run(std::vector<std::string> args) { return finish(spawn(args, dir_.path()), dir_.path()); }
  std::vector<std::string> profile(const std::string& graph, int size, const fs::path& out,
                                   std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"profile", "--graph=" + graph,
                                     "--image-size=" + std::to_string(size),
                                     "--platform=" + platform_, "--profile-out=" + out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  test::ScratchDir dir_;
  std::string platform_;
};

TEST_F(ProfileCliTest, ProfilesResumesAndVerifies) {
  const fs::path out = dir_ / "squeezenet.json";
  Exit e = run(profile("squeezenet", 32, out, {"--repetitions=2"}));
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("3 of 3 steps (3 measured now), 2 frames per run"));
  EXPECT_THAT(e.err, HasSubstr("co_up profile: [1/3] layers on B, L at level 0 (as found): "));
  EXPECT_THAT(e.err, HasSubstr("DVFS not profiled for BL: platform file"));
  EXPECT_EQ(planner::read_layer_profile(out).completed.size(), 3u);
  EXPECT_THAT(e.out, HasSubstr("B<->L  hand-off "));
  // The switch-mode edge cost: one estimate per interleaved round, their interval printed (or
  // no cost, and why), with what else ran on the pair's cores (the test platform's 0 and 1).
  EXPECT_THAT(e.err, ContainsRegex("switch-mode edge B<->L: .*interval .* over 9 runs\\).*; runs of [0-9]+ frames, "
                                   "frame spread [0-9.]+ %, other processes took [0-9.]+ % of cores 0,1"));

  e = run(profile("squeezenet", 32, out));
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.err, HasSubstr("resuming: 3 of 3 steps done"));
  EXPECT_THAT(e.out, HasSubstr("(0 measured now)"));

  e = run({"plan", "--profile=" + out.string(), "--platform=" + platform_, "--top=1", "--verify",
           "--n=3"});
  ASSERT_EQ(e.code, 0) << e;
  // The top mapping plus the baselines; identical command lines are verified once (HEFT often
  // equals the best single processor, and so does the top mapping when no split is predicted
  // more than the sub-graph margin faster: a tiny network with hand-off costs).
  EXPECT_THAT(e.out, ContainsRegex("verify: ([23] mappings|1 mapping) run on platform ref2, 3 frames each"));
  EXPECT_THAT(e.out, HasSubstr("throughput fps: predicted measured  error"));
  EXPECT_THAT(e.out, HasSubstr("median |error|"));
}

TEST_F(ProfileCliTest, BadInputIsOneLineAndExit2) {
  const fs::path out = dir_ / "p.json";
  ASSERT_EQ(run(profile("squeezenet", 32, out, {"--repetitions=1"})).code, 0);
  Exit e = run(profile("alexnet", 64, out));
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("holds a profile of --graph=squeezenet"));
  EXPECT_THAT(e.err, HasSubstr("use --restart"));
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;

  e = run({"profile", "--graph=squeezenet", "--platform=" + platform_});
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("needs --profile-out=FILE"));
  e = run(profile("squeezenet", 32, dir_ / "q.json", {"--processors=BX"}));
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("names 'X', but platform 'ref2' defines only BL"));
  e = run(profile("squeezenet", 32, dir_ / "no/such/dir.json"));
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("does not exist"));
}

TEST_F(ProfileCliTest, CtrlCStopsAfterTheCurrentStepKeepsTheFileAndResumes) {
  const fs::path out = dir_ / "alexnet.json";
  // The file appears once step 1 is under way (past its stop check). AlexNet at 64x64 on
  // cpu-reference: step 1 (two executors, 3 frames each plus warm-up) takes a few hundred ms, so
  // it is still running when the signal comes.
  const pid_t pid = spawn(profile("alexnet", 64, out, {"--repetitions=3"}), dir_.path());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(out) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(fs::exists(out));
  ::kill(pid, SIGINT);
  Exit e = finish(pid, dir_.path());
  EXPECT_EQ(e.code, 130) << e;
  EXPECT_THAT(e.err, HasSubstr("stopping after the current step"));
  EXPECT_THAT(e.err, HasSubstr("interrupted after 1 of 3 steps"));
  EXPECT_EQ(planner::read_layer_profile(out).completed.size(), 1u);

  e = run(profile("alexnet", 64, out, {"--repetitions=1"}));  // other --repetitions: mismatch
  EXPECT_EQ(e.code, 2) << e;
  e = run(profile("alexnet", 64, out));
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.err, HasSubstr("resuming: 1 of 3 steps done"));
  EXPECT_EQ(planner::read_layer_profile(out).repetitions, 3);
}

}  // namespace
}  // namespace co_up
