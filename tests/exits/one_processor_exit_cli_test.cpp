// The trained Map-and-Conquer fixture with every stage on one processor (`--order=BBB`) through
// the co_up binary: each stage runs as a sub-graph of its own on B, so a frame that stops at an
// exit leaves no layer event of a later stage (--profile=2), and every frame's layers are those
// of the stages up to its exit, once each.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/exits/three_on_one.h"
#include "tests/plugins/run_command.h"
#include "tests/sanitizer_size.h"

namespace co_up {
namespace {

using test::CommandResult;
using test::ScratchDir;

const std::filesystem::path kDir = CO_UP_MNC_FIXTURES;

class OneProcessorExitCliTest : public ::testing::Test {
 protected:
  // The first images of the fixture's 1000, in order.
  const size_t images_ = test::size_for_this_build<size_t>("labelled images run", 1000, 200);
  nlohmann::json run(const std::string& exit_spec, const std::string& mode) {
    const std::filesystem::path platform = scratch_.write("platform.json", test::three_on_one_platform());
    const std::filesystem::path profile = scratch_ / ("profile-" + mode + ".json");
    const CommandResult r = test::run_program(
        CO_UP_BINARY,
        {"--platform=" + platform.string(), "--model=" + (kDir / "multi_exit.onnx").string(),
         "--stage-plan=" + (kDir / "stage_plan.json").string(), "--order=BBB", "--mode=" + mode,
         "--exit=" + exit_spec, "--input=" + (kDir / "test_images.npy").string(), "--input-scale=1/255",
         "--n=" + std::to_string(images_), "--profile=2", "--profile-out=" + profile.string()},
        scratch_.path());
    EXPECT_EQ(r.exit_code, 0) << r;
    return nlohmann::json::parse(test::read_file(profile));
  }
  ScratchDir scratch_;
};

TEST_F(OneProcessorExitCliTest, StoppingAtExitZeroRunsNoLaterStageOnB) {
  const nlohmann::json p = run("softmax-max>=0", "pipeline");
  EXPECT_EQ(p.at("frames_completed"), images_);
  EXPECT_EQ(p.at("exits").at("subgraph_frames_skipped"), nlohmann::json({uint64_t{0}, images_, images_}));
  size_t stage1 = 0;
  for (const nlohmann::json& e : p.at("events")) {
    EXPECT_EQ(e.at("subgraph"), 0) << e.dump();
    if (e.at("kind") == "layer") {
      EXPECT_EQ(e.at("layer"), 0) << e.dump();
      ++stage1;
    }
  }
  EXPECT_EQ(stage1, images_);
}

TEST_F(OneProcessorExitCliTest, MixedExitsRunEachFramesStagesUpToItsExitOnce) {
  for (const std::string mode : {"pipeline", "switch"}) {
    SCOPED_TRACE(mode);
    const nlohmann::json p = run("softmax-max>=0.9", mode);
    EXPECT_EQ(p.at("frames_completed"), images_);
    const std::vector<int> frame_exit = p.at("exits").at("frame_exit").get<std::vector<int>>();
    ASSERT_EQ(frame_exit.size(), images_);
    std::set<int> exits(frame_exit.begin(), frame_exit.end());
    EXPECT_EQ(exits, (std::set<int>{0, 1, 2})) << "0.9 should give every exit frames";
    std::set<std::pair<size_t, int>> ran;  // (frame, layer)
    for (const nlohmann::json& e : p.at("events")) {
      if (e.at("kind") != "layer") continue;
      const auto frame = e.at("frame").get<size_t>();
      const int layer = e.at("layer").get<int>();
      EXPECT_EQ(e.at("subgraph").get<int>(), layer) << "each stage is its own sub-graph";
      ASSERT_LE(layer, frame_exit.at(frame)) << "frame " << frame << " ran stage " << layer + 1 << " after its exit";
      EXPECT_TRUE(ran.insert({frame, layer}).second) << "frame " << frame << " ran stage " << layer + 1 << " twice";
    }
    size_t want = 0;
    for (int x : frame_exit) want += static_cast<size_t>(x) + 1;
    EXPECT_EQ(ran.size(), want);
  }
}

}  // namespace
}  // namespace co_up
