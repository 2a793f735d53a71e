// `co_up profile` with an accelerator (N): an accelerator runs a sub-graph as one node, so its
// layers are each compiled and timed alone; the README's default command works on a platform
// with N on npu-int8, and an accelerator that declines some layers (libpartial_npu.so: Conv,
// FullyConnected and MaxPool only) records them as declined in one note instead of failing the
// profile, and `co_up plan` keeps them off it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "planner/layer_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using test::Exit;

class ProfileAcceleratorTest : public ::testing::Test {
 protected:
  Exit run(const std::vector<std::string>& args) {
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_.path()), dir_.path());
  }
  fs::path platform(const std::string& npu_backend) {
    return dir_.write("board.json", R"({"name": "board", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
      {"letter": "N", "kind": "npu", "backend": ")" + npu_backend + R"(", "host": "B"}]})");
  }
  test::ScratchDir dir_;
};

TEST_F(ProfileAcceleratorTest, TimesEveryLayerOfAnInt8AcceleratorAndPlansWithIt) {
  const fs::path out = dir_ / "p.json";
  const Exit e = run({"profile", "--graph=alexnet", "--image-size=64", "--repetitions=2",
                      "--platform=" + platform("npu-int8").string(),
                      "--profile-out=" + out.string()});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_THAT(e.err, Not(HasSubstr("declined")));
  const planner::LayerProfile p = planner::read_layer_profile(out);
  const planner::LayerTimes* n = p.find_layer_times('N', 0);
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->median_us.size(), 8u);
  for (double us : n->median_us) EXPECT_GT(us, 0.0);  // one time per layer, not one per partition
  EXPECT_TRUE(n->declined.empty());
  const planner::TransferTimes* bn = p.find_transfer('B', 'N');
  ASSERT_NE(bn, nullptr);
  for (double us : bn->send_us) EXPECT_GT(us, 0.0);

  const Exit plan = run({"plan", "--profile=" + out.string()});
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("processors BN"));
}

// npu-int8 runs each compiled sub-graph's first --calibration frames in f32, about 10x slower than
// int8 here: none of them may be measured, however many there are.
TEST_F(ProfileAcceleratorTest, CalibrationFramesAreNeverMeasured) {
  const auto total_us = [&](int calibration) {
    const fs::path out = dir_ / std::string("p").append(std::to_string(calibration)).append(".json");
    const Exit e = run({"profile", "--graph=alexnet", "--image-size=64", "--repetitions=5", "--restart",
                        "--processors=N", "--calibration=" + std::to_string(calibration),
                        "--platform=" + platform("npu-int8").string(), "--profile-out=" + out.string()});
    EXPECT_EQ(e.code, 0) << e.err;
    const planner::LayerProfile p = planner::read_layer_profile(out);
    const planner::LayerTimes* n = p.find_layer_times('N', 0);
    double total = 0;
    if (n != nullptr) {
      for (double us : n->median_us) total += us;
    }
    return total;
  };
  // The faster of two profiles each: a busy host can stretch one run's medians, not both.
  const double one = std::min(total_us(1), total_us(1));
  const double many = std::min(total_us(12), total_us(12));
  ASSERT_GT(one, 0.0);
  // Measuring f32 calibration frames (all of them with 12, before the warm-up knew) gave ~7-10x.
  EXPECT_LT(many, 3 * one) << "calibration 1: " << one << " us, calibration 12: " << many << " us";
}

TEST_F(ProfileAcceleratorTest, DeclinedLayersAreRecordedInOneNoteAndKeptOffTheAccelerator) {
  const fs::path out = dir_ / "p.json";
  const Exit e = run({"profile", "--graph=alexnet", "--image-size=64", "--repetitions=2",
                      "--platform=" + platform("partial-npu").string(),
                      "--plugins=" CO_UP_TEST_PLUGIN_DIR, "--profile-out=" + out.string()});
  ASSERT_EQ(e.code, 0) << e.err;
  // conv1 and conv2 hold an LRN, which the partial NPU declines.
  std::smatch note;
  ASSERT_TRUE(std::regex_search(e.err, note, std::regex("co_up profile: N \\(partial-npu\\) cannot run layers "
                                                        "0 \\(conv1\\), 1 \\(conv2\\)[^\n]* alone \\([^\n]*LRN[^\n]*\\); "
                                                        "recorded as declined, plans keep them off N\n")))
      << e.err;

  const planner::LayerProfile p = planner::read_layer_profile(out);
  const planner::LayerTimes* n = p.find_layer_times('N', 0);
  ASSERT_NE(n, nullptr);
  ASSERT_TRUE(n->declined.count(0) == 1 && n->declined.count(1) == 1);
  EXPECT_THAT(n->declined.at(0), HasSubstr("LRN"));
  EXPECT_TRUE(std::isnan(n->median_us[0]));
  for (uint32_t l = 0; l < 8; ++l) {
    if (n->declined.count(l) == 0) { EXPECT_GT(n->median_us[l], 0.0) << "layer " << l; }
  }
  // In the file: null, not a number.
  const nlohmann::json j = nlohmann::json::parse(test::read_file(out));
  for (const auto& t : j["layer_times"]) {
    if (t["processor"] == "N") { EXPECT_TRUE(t["median_us"][0].is_null()); }
  }

  const Exit plan = run({"plan", "--profile=" + out.string(), "--top=10"});
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("plans keep them off N"));
  const std::regex order_re("--order=([A-Z]+)");
  int orders = 0;
  for (auto it = std::sregex_iterator(plan.out.begin(), plan.out.end(), order_re);
       it != std::sregex_iterator(); ++it) {
    const std::string order = (*it)[1];
    ++orders;
    EXPECT_NE(order[0], 'N') << plan.out;
    EXPECT_NE(order[1], 'N') << plan.out;
  }
  EXPECT_GE(orders, 3);
}

}  // namespace
}  // namespace co_up
