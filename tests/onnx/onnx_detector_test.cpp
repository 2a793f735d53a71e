// Detector and Inception operators end to end: Resize (nearest and linear with the coordinate
// transforms torch emits and the others ONNX names), Pad (constant, reflect, edge; a zero Pad folded
// into a Conv or read as a tensor), LeakyRelu, shape arithmetic folded at import, and the networks
// built on them (a YOLOv5-style detector, a reduced Inception-v4) on cpu-reference in pipeline and
// switch mode with mixed B/L orders, against PyTorch's (or numpy's) output from make_fixtures.py
// --detectors. Plus one-line errors for the Resize and Pad forms co_up does not import.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_importer.h"
#include "tests/onnx/fixture_support.h"

namespace co_up {
namespace {

using onnx_fixtures::kFixtures;
using onnx_fixtures::load;
using onnx_fixtures::run;

std::map<std::string, int> op_counts(const graph::Graph& g) {
  std::map<std::string, int> counts;
  for (const graph::Node& n : g.nodes()) ++counts[std::string(graph::op_type_name(n.op))];
  return counts;
}

void expect_matches(const std::vector<float>& got, const graph::NpyArray& want, const std::string& what) {
  const auto [lo, hi] = std::minmax_element(want.data.begin(), want.data.end());
  ASSERT_GT(static_cast<double>(*hi - *lo), 1e-3) << what << ": the golden output is flat; the fixture tests nothing";
  onnx_fixtures::expect_matches_pytorch(got, want, what);
}

// Runs `name` with block units and --units=ops, all-B and alternating B/L, pipeline and switch.
void expect_fixture_matches(const std::string& name) {
  const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
  const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
  for (const std::string units : {"layers", "ops"}) {
    const graph::Graph g = load(name, units);
    ASSERT_EQ(g.tensor(g.inputs().at(0)).desc.shape, input.shape);
    const uint32_t layers = g.layer_count();
    std::string alternating;
    for (uint32_t i = 0; i < layers; ++i) alternating += i % 2 ? 'L' : 'B';
    for (const std::string& order : {std::string(layers, 'B'), alternating}) {
      for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
        const std::string what = name + " --units=" + units + " --order=" + order +
                                 (mode == ExecutionMode::kPipeline ? " pipeline" : " switch");
        expect_matches(run(g, order, mode, input.data, "cpu-reference"), want, what);
      }
    }
  }
}

class ResamplingOpFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ResamplingOpFixture, MatchesTheGoldenOutputOnCpuReference) { expect_fixture_matches(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Fixtures, ResamplingOpFixture,
                         ::testing::Values("op_resize", "op_resize_modes", "op_pad_modes",
                                           "op_pad_output", "op_pad_twice_conv", "op_shape_arith",
                                           "op_shape_chain"),
                         [](const auto& info) { return info.param; });

// The networks: every order of onnx_fixtures::orders_for (all B, half B / half L, alternating).
void expect_network_matches(const std::string& name, const std::string& units,
                            const std::function<void(const std::vector<float>&, const std::string&)>& extra = {}) {
  const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
  const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
  const graph::Graph g = load(name, units);
  for (const std::string& order : onnx_fixtures::orders_for(g.layer_count())) {
    for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
      const std::string what = name + " --units=" + units + " --order=" + order +
                               (mode == ExecutionMode::kPipeline ? " pipeline" : " switch");
      const std::vector<float> got = run(g, order, mode, input.data, "cpu-reference");
      expect_matches(got, want, what);
      if (extra) extra(got, what);
    }
  }
}

// The `count` boxes of a [1, boxes, 5 + classes] detector output with the highest confidence
// (objectness x best class score), best first.
std::vector<size_t> top_detections(const std::vector<float>& y, size_t row, size_t count) {
  std::vector<float> confidence(y.size() / row);
  for (size_t b = 0; b < confidence.size(); ++b) {
    const float* r = y.data() + b * row;
    confidence[b] = r[4] * *std::max_element(r + 5, r + row);
  }
  std::vector<size_t> order(confidence.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return confidence[a] > confidence[b]; });
  order.resize(count);
  return order;
}

TEST(DetectorNetwork, YoloMatchesPyTorchWithTheSameTopDetections) {
  const graph::NpyArray want = graph::read_npy(kFixtures / "yolo_tiny_output.npy");
  ASSERT_EQ(want.shape, (std::vector<int64_t>{1, 252, 9}));  // 3 anchors x (8x8 + 4x4 + 2x2), 4 classes
  const std::vector<size_t> top = top_detections(want.data, 9, 10);
  for (const std::string units : {"layers", "ops"}) {
    expect_network_matches("yolo_tiny", units, [&](const std::vector<float>& got, const std::string& what) {
      EXPECT_EQ(top_detections(got, 9, 10), top) << what;
    });
  }
}

TEST(DetectorNetwork, InceptionV4MatchesPyTorch) {
  for (const std::string units : {"layers", "ops"}) expect_network_matches("inception_v4_tiny", units);
}

TEST(DetectorNetwork, SwinMatchesPyTorch) {
  for (const std::string units : {"layers", "ops"}) expect_network_matches("swin_tiny", units);
}

std::vector<std::string> unit_names(const graph::Graph& g) {
  std::vector<std::string> names;
  for (const graph::LayerSummary& s : graph::summarize_layers(g)) names.push_back(s.name);
  return names;
}

TEST(DetectorUnits, OneUnitPerC3BlockNeckStageAndTheHead) {
  // The neck keeps P3 and P4 alive until its concats: no single-tensor boundary after b4, yet
  // every top-level module of the chain is a unit.
  EXPECT_EQ(unit_names(load("yolo_tiny")),
            (std::vector<std::string>{"b0/conv", "b1/conv", "b2", "b3/conv", "b4", "b5/conv", "b6", "b7/conv",
                                      "b8", "b9", "h10/conv", "h13", "h14/conv", "h17", "h18/conv", "h20",
                                      "h21/conv", "h23", "detect"}));
  const graph::Graph g = load("yolo_tiny");
  std::map<std::string, std::string> unit_of;
  for (const graph::Node& n : g.nodes()) {
    if (n.op == graph::OpType::kResize) unit_of[n.name] = g.layers().at(n.layer).name;
  }
  EXPECT_EQ(unit_of, (std::map<std::string, std::string>{{"/up/Resize", "h10/conv"}, {"/up_1/Resize", "h14/conv"}}));
}

TEST(DetectorUnits, InceptionBlocksAndSwinBlocksAreUnits) {
  const std::vector<std::string> inception = unit_names(load("inception_v4_tiny"));
  // Inception-A x2, Reduction-A, Inception-B x2, Reduction-B, Inception-C x2: one unit each.
  for (int block = 1; block <= 8; ++block) {
    EXPECT_EQ(std::count(inception.begin(), inception.end(), "features/features." + std::to_string(block)), 1)
        << block;
  }
  EXPECT_EQ(inception.back(), "last_linear");
  EXPECT_EQ(unit_names(load("swin_tiny")),
            (std::vector<std::string>{"features/features.0/features.0.0", "features/features.1/features.1.0",
                                      "features/features.1/features.1.1", "features/features.2/reduction",
                                      "features/features.3/features.3.0", "features/features.3/features.3.1",
                                      "head"}));
}

TEST(DetectorUnits, OpsUnitsAreOneUnitPerComputeOp) {
  for (const std::string name : {"yolo_tiny", "inception_v4_tiny", "swin_tiny"}) {
    const graph::Graph g = load(name, "ops");
    uint32_t compute = 0;
    for (const graph::Node& n : g.nodes()) compute += graph::is_compute_op(n.op) ? 1 : 0;
    EXPECT_EQ(g.layer_count(), compute) << name;
    EXPECT_GT(g.layer_count(), load(name).layer_count()) << name;
  }
}

TEST(ResamplingImport, ZeroPadFoldsIntoConvAndStaysATensorForOtherReaders) {
  const auto counts = op_counts(load("op_pad_modes"));
  // constant 0.5, reflect, edge, and the zero Pad read by MaxPool and Relu; the one before the
  // Conv is folded into its pads and dropped.
  EXPECT_EQ(counts.at("Pad"), 4);
  EXPECT_EQ(counts.at("LeakyRelu"), 2);
  EXPECT_EQ(counts.at("Conv"), 1);
  const graph::Graph g = load("op_pad_modes");
  for (const graph::Node& n : g.nodes()) {
    if (n.op == graph::OpType::kConv) {
      EXPECT_EQ(n.attrs.get_ints("pads"), (std::vector<int64_t>{2, 2, 3, 3})) << n.name;
    }
  }
}

TEST(ResamplingImport, ChainedZeroPadsFoldIntoOneConvOrStayPadNodes) {
  EXPECT_EQ(op_counts(load("op_pad_twice_conv")), (std::map<std::string, int>{{"Input", 1}, {"Conv", 1}}));
  const graph::Graph g = load("op_pad_twice_conv");
  for (const graph::Node& n : g.nodes()) {
    if (n.op == graph::OpType::kConv) {
      EXPECT_EQ(n.attrs.get_ints("pads"), (std::vector<int64_t>{1, 3, 2, 1}));
    }
  }
  // The same two Pads as the graph output: both computed.
  EXPECT_EQ(op_counts(load("op_pad_output")), (std::map<std::string, int>{{"Input", 1}, {"Pad", 2}}));
}

TEST(ResamplingImport, ShapeArithmeticFoldsToAConstantReshape) {
  const auto counts = op_counts(load("op_shape_chain"));
  EXPECT_EQ(counts, (std::map<std::string, int>{{"Input", 1}, {"Reshape", 1}, {"Relu", 1}}));
}

TEST(ResamplingImport, ResizeCarriesTheTorchCoordinateTransforms) {
  std::multiset<std::string> forms;
  const graph::Graph g = load("op_resize");
  for (const graph::Node& n : g.nodes()) {
    if (n.op != graph::OpType::kResize) continue;
    forms.insert(n.attrs.get_string("mode") + "/" + n.attrs.get_string("coordinate_transformation_mode"));
  }
  EXPECT_EQ(forms, (std::multiset<std::string>{"nearest/asymmetric", "nearest/asymmetric", "nearest/asymmetric",
                                               "linear/half_pixel", "linear/half_pixel", "linear/align_corners"}));
}

TEST(ResamplingImport, UnsupportedFormsAreOneLineErrorsNamingNodeOpAndForm) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"err_resize_cubic", {"node 'up_cubic' (Resize)", "mode 'cubic' is not supported"}},
      {"err_resize_channels", {"node 'up_channels' (Resize)", "resizes axis 1", "last two axes"}},
      {"err_pad_negative", {"node 'pad_crop' (Pad)", "negative pads"}},
  };
  onnx_fixtures::expect_one_line_import_errors(cases);
}

}  // namespace
}  // namespace co_up
