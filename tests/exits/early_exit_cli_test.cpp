// Early exits on the command line: a multi-exit ONNX model (exits by name or by a sidecar file),
// --exit, the exit histogram with per-exit latency and accuracy in the report and the profile
// JSON, a labelled input set (--input with N inputs, --labels=FILE.npy), and one-line errors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_exporter.h"
#include "tests/cli/scratch_dir.h"
#include "tests/core/test_support.h"
#include "tests/exits/exit_network.h"
#include "tests/exits/three_on_one.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using test::CommandResult;
using test::exit_network;
using test::kConfidentScale;
using test::kUnsureScale;
using test::ScratchDir;
using InputSets = std::vector<std::vector<std::vector<float>>>;

constexpr size_t kInputs = 6;  // confident, unsure, confident, unsure, confident, unsure

class EarlyExitCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const graph::Graph g = exit_network();
    graph::export_onnx_file(g, graph::whole_graph_region(g), model_);
    platform_ = scratch_.write("platform.json", test::three_on_one_platform());
    // The labelled set: inputs alternate between confident (exit 0 at softmax-max>=0.9) and unsure
    // (the final exit); labels are each frame's right answer, except inputs 4 and 5.
    std::vector<float> batch;
    InputSets singles;
    for (size_t i = 0; i < kInputs; ++i) {
      auto input = test::scaled_input(g, 60 + i, i % 2 == 0 ? kConfidentScale : kUnsureScale);
      batch.insert(batch.end(), input[0].begin(), input[0].end());
      singles.push_back(std::move(input));
    }
    graph::write_npy(scratch_ / "inputs.npy", std::vector<int64_t>{int64_t{kInputs}, 3, 16, 16}, batch);
    // Each input's exits, from the static network on one processor.
    const graph::Graph fixed = exit_network(false);
    ExecutorOptions options;
    Platform reference = testing::host_platform();
    reference.find('B')->backends = {"cpu-reference"};  // what the platform runs: the same bits
    Executor executor(fixed, Partition::create(fixed, "BBB"), reference, testing::build_plugins(), options);
    RunRequest request;
    request.frames = kInputs;
    request.input_sets = singles;
    exits_.assign(kInputs, std::vector<std::vector<float>>(3));
    request.on_output = [&](uint64_t frame, uint32_t output, std::span<const float> values) {
      exits_[frame][output].assign(values.begin(), values.end());
    };
    executor.run(request);
    std::vector<float> labels;
    for (size_t i = 0; i < kInputs; ++i) {
      const std::vector<float>& result = exits_[i][i % 2 == 0 ? 0 : 2];
      const auto top = std::max_element(result.begin(), result.end()) - result.begin();
      labels.push_back(static_cast<float>(i < 4 ? top : (top + 1) % test::kExitClasses));
    }
    graph::write_npy(scratch_ / "labels.npy", std::vector<int64_t>{int64_t{kInputs}}, labels);
    order_ = order_for(model_);
  }

  // One letter per layer unit of the imported model: its units in three runs, B, D, E.
  static std::string order_for(const std::filesystem::path& model) {
    NetworkSpec spec;
    spec.model = model.string();
    const uint32_t layers = build_network(spec).layer_count();
    std::string order;
    for (uint32_t l = 0; l < layers; ++l) order += "BDE"[std::min<uint32_t>(2, l * 3 / layers)];
    return order;
  }

  CommandResult co_up(std::vector<std::string> args) {
    args.insert(args.begin(), {"--platform=" + platform_.string()});
    return test::run_program(CO_UP_BINARY, args, scratch_.path());
  }

  ScratchDir scratch_;
  std::filesystem::path model_ = scratch_ / "exitnet.onnx";
  std::filesystem::path platform_;
  std::string order_;
  std::vector<std::vector<std::vector<float>>> exits_;  // [input][exit] of the static network
};

TEST_F(EarlyExitCliTest, ReportsExitHistogramLatencyAndAccuracy) {
  const std::filesystem::path profile = scratch_ / "profile.json";
  const std::filesystem::path output = scratch_ / "out.npy";
  const CommandResult r = co_up({"--model=" + model_.string(), "--order=" + order_, "--n=12",
                                 "--exit=softmax-max>=0.9", "--input=" + (scratch_ / "inputs.npy").string(),
                                 "--labels=" + (scratch_ / "labels.npy").string(), "--profile=1",
                                 "--profile-out=" + profile.string(), "--output=" + output.string()});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("exits (softmax-max>=0.9), 12 frames:"), std::string::npos) << r;
  EXPECT_NE(r.out.find("overall accuracy 66.7 % (8/12)"), std::string::npos) << r;
  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  const nlohmann::json& exits = j.at("exits");
  EXPECT_EQ(exits.at("policy"), "softmax-max>=0.9");
  ASSERT_EQ(exits.at("exits").size(), 3u);
  // Frames 0, 2, 4, 6, 8, 10 read confident inputs; input 4 (frames 4 and 10) is labelled wrong.
  EXPECT_EQ(exits["exits"][0].at("name"), "exit0");
  EXPECT_EQ(exits["exits"][0].at("frames"), 6);
  EXPECT_EQ(exits["exits"][0].at("correct"), 4);
  EXPECT_EQ(exits["exits"][1].at("frames"), 0);
  EXPECT_TRUE(exits["exits"][1].at("accuracy").is_null());
  EXPECT_EQ(exits["exits"][2].at("frames"), 6);
  EXPECT_EQ(exits["exits"][2].at("correct"), 4);  // input 5 (frames 5, 11) labelled wrong
  EXPECT_GT(exits["exits"][0].at("latency_mean_ms").get<double>(), 0.0);
  EXPECT_EQ(exits.at("frame_exit"), nlohmann::json({0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2}));
  EXPECT_EQ(exits.at("subgraph_frames_skipped"), nlohmann::json({0, 6, 6}));
  EXPECT_EQ(exits.at("correct"), 8);  // frames 4, 5, 10 and 11 wrong
  EXPECT_DOUBLE_EQ(exits.at("accuracy").get<double>(), 8.0 / 12.0);
  // The last frame read input 5 (unsure): its result is the final exit's output.
  const graph::NpyArray written = graph::read_npy(output);
  EXPECT_EQ(written.data, exits_[5][2]);
}

TEST_F(EarlyExitCliTest, EveryFrameStoppingAtTheFirstExitRunsOnlyTheFirstSubGraph) {
  const std::filesystem::path profile = scratch_ / "profile.json";
  const std::filesystem::path output = scratch_ / "out.npy";
  const CommandResult r = co_up({"--model=" + model_.string(), "--order=" + order_, "--n=7",
                                 "--mode=switch", "--exit=entropy<=1", "--input=" + (scratch_ / "inputs.npy").string(),
                                 "--profile=1", "--profile-out=" + profile.string(), "--output=" + output.string()});
  ASSERT_EQ(r.exit_code, 0) << r;
  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  EXPECT_EQ(j.at("exits").at("subgraph_frames_skipped"), nlohmann::json({0, 7, 7}));
  for (const nlohmann::json& e : j.at("events")) ASSERT_EQ(e.at("subgraph"), 0) << e.dump();
  // Frame 6 read input 0: the result written is its exit 0's output.
  EXPECT_EQ(graph::read_npy(output).data, exits_[0][0]);
}

TEST_F(EarlyExitCliTest, SidecarNamesTheExitsOfAModelWithOtherOutputNames) {
  const graph::Graph g = exit_network(true, 11, {"head_a", "head_b", "logits"});
  const std::filesystem::path model = scratch_ / "named.onnx";
  graph::export_onnx_file(g, graph::whole_graph_region(g), model);
  std::vector<std::string> run = {"--model=" + model.string(), "--order=" + order_for(model), "--n=2",
                                  "--exit=softmax-max>=0.5"};
  CommandResult r = co_up(run);
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "co_up: error: --exit='softmax-max>=0.5' needs a network with exits, but graph "
                   "'named' has none (exits are graph outputs named exit0, exit1, ... or listed in "
                   "<model>.exits.json; see docs/early_exits.md)\n");
  scratch_.write("named.onnx.exits.json", R"({"exits": ["head_a", "head_b", "logits"]})");
  run[1] = "--order=" + order_for(model);  // exits end layer units: more of them now
  r = co_up(run);
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("exits (softmax-max>=0.5), 2 frames:"), std::string::npos) << r;
  const std::filesystem::path wrong = scratch_.write("wrong.json", R"({"exits": ["head_a", "nope", "logits"]})");
  std::vector<std::string> with_file = run;
  with_file.push_back("--exits=" + wrong.string());
  r = co_up(with_file);
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "co_up: error: " + model.string() + ": exits file '" + wrong.string() +
                       "' lists exit 'nope', which is not a graph output\n");
}

TEST_F(EarlyExitCliTest, BadExitSpecsAreOneLineErrorsWithExitCodeTwo) {
  struct Case {
    std::string spec;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"softmax-max>=1.5", "--exit='softmax-max>=1.5': threshold 1.5 is outside [0,1]"},
      {"entropy<=-0.2", "--exit='entropy<=-0.2': threshold -0.2 is outside [0,1]"},
      {"softmax-max>=0.8,x", "--exit='softmax-max>=0.8,x': 'x' is not a number (each threshold is in [0,1], or off)"},
      {"top1>=0.9", "--exit='top1>=0.9' is not an exit policy (use softmax-max>=T, entropy<=T, a threshold "
                    "per exit such as softmax-max>=0.8,0.9, or none; T in [0,1] or off)"},
      {"softmax-max>=0.1,0.2,0.3", "--exit='softmax-max>=0.1,0.2,0.3' gives 3 thresholds but graph "
                                   "'exitnet' has 3 exits: give one threshold, or one per exit before "
                                   "the final (2)"},
  };
  for (const Case& c : cases) {
    const CommandResult r = co_up({"--model=" + model_.string(), "--order=" + order_, "--exit=" + c.spec});
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_EQ(r.err, "co_up: error: " + c.message + "\n") << r;
    EXPECT_EQ(r.out, "") << r;
  }
  const CommandResult labels = co_up({"--model=" + model_.string(), "--order=" + order_,
                                      "--input=" + (scratch_ / "inputs.npy").string(),
                                      "--labels=" + (scratch_ / "labels.npy").string(),
                                      "--exit=softmax-max>=0.9", "--n=1"});
  EXPECT_EQ(labels.exit_code, 0) << labels;
  const std::filesystem::path few = scratch_ / "few.npy";
  graph::write_npy(few, std::vector<int64_t>{2}, std::vector<float>{1, 2});
  const CommandResult mismatch = co_up({"--model=" + model_.string(), "--order=" + order_,
                                        "--input=" + (scratch_ / "inputs.npy").string(),
                                        "--labels=" + few.string()});
  EXPECT_EQ(mismatch.exit_code, 2) << mismatch;
  EXPECT_EQ(mismatch.err, "co_up: error: --labels '" + few.string() +
                              "' has 2 labels but --input gives 6 input(s); give one label per input, "
                              "in the same order\n");
}

}  // namespace
}  // namespace co_up
