// The trained Map-and-Conquer fixtures (tests/fixtures/map_and_conquer/, written by
// scripts/train_map_and_conquer.py): the static CNN and the multi-exit CNN import, and co_up's
// outputs equal PyTorch's on the committed test images; the stage plan the model was trained
// with labels its stages, which an order string then maps to processors.
#include <gtest/gtest.h>

#include <mutex>

#include "graph/stage_plan.h"
#include "tests/onnx/fixture_support.h"

namespace co_up {
namespace {

const std::filesystem::path kDir = CO_UP_MNC_FIXTURES;
constexpr size_t kFrames = 16;  // the frames the script saved PyTorch's outputs for

// The first kFrames test images as the model's input: [1, 1, 28, 28], scaled to [0, 1].
std::vector<std::vector<std::vector<float>>> test_inputs() {
  const graph::NpyArray images = graph::read_npy(kDir / "test_images.npy");
  EXPECT_EQ(images.shape, (std::vector<int64_t>{1000, 28, 28}));
  std::vector<std::vector<std::vector<float>>> sets;
  for (size_t f = 0; f < kFrames; ++f) {
    std::vector<float> x(images.data.begin() + static_cast<long>(f * 784),
                         images.data.begin() + static_cast<long>((f + 1) * 784));
    for (float& v : x) v /= 255.0f;
    sets.push_back({x});
  }
  return sets;
}

// Every frame's outputs: [frame][output][values].
std::vector<std::vector<std::vector<float>>> run_frames(const graph::Graph& g, const std::string& order) {
  ExecutorOptions options;
  options.mode = ExecutionMode::kPipeline;
  Executor executor(g, Partition::create(g, order), onnx_fixtures::platform_with("cpu-reference"),
                    testing::build_plugins(), options);
  std::vector<std::vector<std::vector<float>>> outputs(kFrames, std::vector<std::vector<float>>(g.outputs().size()));
  std::mutex lock;
  RunRequest request;
  request.frames = kFrames;
  request.input_sets = test_inputs();
  request.on_output = [&](uint64_t frame, uint32_t output, std::span<const float> values) {
    std::lock_guard<std::mutex> hold(lock);
    outputs.at(frame).at(output).assign(values.begin(), values.end());
  };
  const RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, kFrames);
  return outputs;
}

// |co_up - PyTorch| <= 1e-4 per logit (logits are O(10); float32 rounding is ~1e-6 of that).
void expect_close(const std::vector<float>& got, const float* want, size_t n, const std::string& what) {
  ASSERT_EQ(got.size(), n) << what;
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << what << " logit " << i;
}

graph::Graph load_multi_exit() {
  NetworkSpec spec;
  spec.model = (kDir / "multi_exit.onnx").string();
  spec.stage_plan_file = (kDir / "stage_plan.json").string();
  return build_network(spec);
}

TEST(MapAndConquerFixture, StaticCnnMatchesPyTorch) {
  NetworkSpec spec;
  spec.model = (kDir / "static.onnx").string();
  const graph::Graph g = build_network(spec);
  const graph::NpyArray want = graph::read_npy(kDir / "static_ref.npy");
  ASSERT_EQ(want.shape, (std::vector<int64_t>{kFrames, 10}));
  const auto got = run_frames(g, std::string(g.layer_count(), 'B'));
  for (size_t f = 0; f < kFrames; ++f) expect_close(got[f][0], &want.data[f * 10], 10, "frame " + std::to_string(f));
}

TEST(MapAndConquerFixture, StagePlanMakesEachStageOneUnit) {
  const graph::Graph g = load_multi_exit();
  ASSERT_EQ(g.layer_count(), 3u);
  const auto units = g.layers();
  EXPECT_EQ(units[0].name, "stage1");
  EXPECT_EQ(units[2].name, "stage3");
  ASSERT_EQ(g.outputs().size(), 3u);
  // exit k is computed in stage k + 1.
  for (uint32_t k = 0; k < 3; ++k) EXPECT_EQ(g.node(g.tensor(g.outputs()[k]).producer).layer, k);
}

TEST(MapAndConquerFixture, EveryExitMatchesPyTorchWithStagesOnDifferentProcessors) {
  const graph::Graph g = load_multi_exit();
  const graph::NpyArray want = graph::read_npy(kDir / "multi_exit_ref.npy");
  ASSERT_EQ(want.shape, (std::vector<int64_t>{kFrames, 3, 10}));
  for (const std::string order : {"BBB", "BLB", "LBL"}) {
    const auto got = run_frames(g, order);
    for (size_t f = 0; f < kFrames; ++f) {
      for (size_t k = 0; k < 3; ++k) {
        expect_close(got[f][k], &want.data[(f * 3 + k) * 10], 10,
                     order + " frame " + std::to_string(f) + " exit" + std::to_string(k));
      }
    }
  }
}

TEST(MapAndConquerFixture, LabelledSubsetsAreConsistent) {
  const graph::NpyArray labels = graph::read_npy(kDir / "test_labels.npy");
  ASSERT_EQ(labels.shape, (std::vector<int64_t>{1000}));
  for (float v : labels.data) EXPECT_TRUE(v >= 0 && v <= 9 && v == static_cast<int>(v)) << v;
  const graph::NpyArray val = graph::read_npy(kDir / "val_exit_logits.npy");
  EXPECT_EQ(val.shape, (std::vector<int64_t>{10000, 3, 10}));
  EXPECT_EQ(graph::read_npy(kDir / "val_labels.npy").shape, (std::vector<int64_t>{10000}));
}

}  // namespace
}  // namespace co_up
