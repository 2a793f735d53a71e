// Stage plans (graph/stage_plan.h): the exact one-line errors of bad plans, and of plans that do
// not describe the multi-exit model they are applied to.
#include "graph/stage_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/network.h"
#include "tests/cli/scratch_dir.h"

namespace co_up::graph {
namespace {

const std::filesystem::path kDir = CO_UP_MNC_FIXTURES;
// The plan the fixture was trained with (every earlier stage's features reused; the last stage
// computes the whole of layer 3).
const std::string kTrained = "P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,1;I:1,1,1/1,1,1/0,0,0";
// The same P with stage 2's layer-1 features not reused (partial_reuse.onnx, untrained).
const std::string kPartial = "P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,1;I:1,1,1/0,1,1/0,0,0";

std::string parse_error(const std::string& text) {
  try {
    parse_stage_plan(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string model_error(const std::string& stages, const std::string& model = "multi_exit.onnx") {
  NetworkSpec spec;
  spec.model = (kDir / model).string();
  spec.stages = stages;
  try {
    build_network(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(StagePlan, ParsesRowsAsStagesAndEntriesAsLayers) {
  const StagePlan plan = parse_stage_plan(kTrained);
  ASSERT_EQ(plan.stage_count(), 3u);
  ASSERT_EQ(plan.layer_count(), 3u);
  EXPECT_DOUBLE_EQ(plan.p[2][1], 0.5);
  EXPECT_EQ(plan.reuse[1], (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(stage_channels(plan, 0, 16), (std::vector<int64_t>{4, 4, 8}));
}

TEST(StagePlan, ALastStageFractionOfOneIsAWholeLayerAtTheEnd) {
  // The last stage computes all of layer 3 again (from every stage's layer-2 features); the
  // earlier stages keep their shares of it for their own exits.
  const StagePlan plan = parse_stage_plan("P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,1;I:1,1,1/1,1,1/0,0,0");
  EXPECT_FALSE(plan.last_stage_computes_whole_layer(1));
  EXPECT_TRUE(plan.last_stage_computes_whole_layer(2));
  EXPECT_EQ(stage_channels(plan, 1, 64), (std::vector<int64_t>{16, 16, 32}));
  EXPECT_EQ(stage_channels(plan, 2, 128), (std::vector<int64_t>{32, 32, 128}));
  // One stage: a fraction of 1 is simply the whole layer.
  EXPECT_FALSE(parse_stage_plan("P:1,1;I:0,0").last_stage_computes_whole_layer(0));
  EXPECT_EQ(parse_error("P:0.25,0.75/0.25,0.5/0.5,1;I:1,1/1,1/0,0"),
            "--stages: P column 2 (layer 2): the last stage computes the whole layer (1) but the earlier stages' "
            "fractions sum to 1.25, more than the layer; make them sum to at most 1");
}

TEST(StagePlan, BadPlansAreOneLineErrors) {
  EXPECT_EQ(parse_error("P:0.5,0.5/0.5,0.4;I:1,1/0,0"),
            "--stages: P column 2 (layer 2) sums to 0.9, not 1; a layer's fractions over the stages must sum to 1 "
            "(or the last stage's be 1: it computes the whole layer)");
  EXPECT_EQ(parse_error("P:0.5,0.5/0.5,0.5;I:1,1/0,1"),
            "--stages: I[2][2] = 1 shares stage 2's features with a later stage, but it is the last stage; its row "
            "must be all 0");
  EXPECT_EQ(parse_error("P:0.5,0.5/0.5;I:1,1/0,0"),
            "--stages: P row 2 has 1 layers but row 1 has 2; every stage needs one fraction per layer");
  EXPECT_EQ(parse_error("P:0.5,0.5/0.5,0.5;I:1,1"),
            "--stages: P has 2 stages (rows) but I has 1; give I one row per stage");
  EXPECT_EQ(parse_error("P:1.5,0.5/-0.5,0.5;I:1,1/0,0"),
            "--stages: P[1][1] = 1.5 is outside (0, 1]; every stage computes part of every layer");
  EXPECT_EQ(parse_error("P:0.5,0.5/0.5,0.5;I:1,2/0,0"), "--stages: I entry 2 must be 0 or 1");
  EXPECT_EQ(parse_error("P:0.5,x/0.5,0.5;I:1,1/0,0"), "--stages: 'x' is not a number");
  EXPECT_EQ(parse_error("P:0.5/0.5"),
            "--stages='P:0.5/0.5' needs both P:... and I:... (e.g. P:0.5,0.5/0.5,0.5;I:1,1/0,0)");
  EXPECT_EQ(parse_error("Q:1"),
            "--stages='Q:1': 'Q:1' is neither P:... nor I:... (use P:0.5,0.5/0.5,0.5;I:1,1/0,0 — rows are stages)");
}

TEST(StagePlan, PlansThatDoNotDescribeTheModelAreOneLineErrors) {
  EXPECT_EQ(model_error(kTrained), "(no error)");
  EXPECT_EQ(model_error("P:0.25,0.25/0.25,0.25/0.5,0.5;I:1,1/0,1/0,0"),
            "--stages has 2 layers per stage but the model's stage 1 has 3 (plus its exit classifier)");
  EXPECT_EQ(model_error("P:0.5,0.5,0.5/0.5,0.5,0.5;I:1,1,1/0,0,0"),
            "--stages has 2 stages but the model has 3 exit outputs; a stage plan needs a multi-exit model with one "
            "exit per stage (outputs exit0, exit1, ...)");
  EXPECT_EQ(model_error("P:0.5,0.25,0.25/0.25,0.25,0.25/0.25,0.5,0.5;I:1,1,1/0,1,1/0,0,0"),
            "--stages: P[1][1] = 0.5 gives stage 1 16 of layer 1's 32 channels, but the model's stage has 8");
  // The plain width split (the last stage only the rest of layer 3) is not this model.
  EXPECT_EQ(model_error("P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,0.5;I:1,1,1/1,1,1/0,0,0"),
            "--stages: P[1][3] = 0.25 gives stage 1 48 of layer 3's 192 channels, but the model's stage has 32");
  EXPECT_EQ(model_error(kPartial),
            "--stages: I[2][1] = 0 but the model's stage 3 layer 2 reads stage 2's layer 1 features");
  EXPECT_EQ(model_error("P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,1;I:1,0,1/1,1,1/0,0,0"),
            "--stages: I[1][2] = 0 but the model's stage 2 layer 3 reads stage 1's layer 2 features");
  // An I entry of 1 the model does not have: the trained model reuses everything, so its
  // partial-reuse twin shows it.
  EXPECT_EQ(model_error(kPartial, "partial_reuse.onnx"), "(no error)");
  EXPECT_EQ(model_error(kTrained, "partial_reuse.onnx"),
            "--stages: I[2][1] = 1 but the model's stage 3 layer 2 does not read stage 2's layer 1 features");
}

TEST(StagePlan, JsonFilePlansAreCheckedTheSameWay) {
  co_up::test::ScratchDir scratch;
  const std::filesystem::path file = scratch.path() / "plan.json";
  std::ofstream(file) << R"({"P": [[0.5, 0.5], [0.5, 0.6]], "I": [[1, 1], [0, 0]]})";
  try {
    read_stage_plan_file(file.string());
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "stage plan '" + file.string() +
                                         "': P column 2 (layer 2) sums to 1.1, not 1; a layer's fractions over the "
                                         "stages must sum to 1 (or the last stage's be 1: it computes the whole "
                                         "layer)");
  }
  const StagePlan trained = read_stage_plan_file((kDir / "stage_plan.json").string());
  EXPECT_EQ(trained.p, parse_stage_plan(kTrained).p);
  EXPECT_EQ(trained.reuse, parse_stage_plan(kTrained).reuse);
}

}  // namespace
}  // namespace co_up::graph
