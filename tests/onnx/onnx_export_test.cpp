// ONNX export (graph/onnx/onnx_exporter.h) round trip: a graph or a partition's sub-graph is
// exported, re-imported with co_up's own importer, and both are run with the cpu-reference
// kernels (tests/rknn/graph_runner.h). Every zoo network (whole, and a first, middle and last
// partition of it) and a network holding every IR operator give the same outputs; boundary names
// survive; the files pass the ONNX checker where python3-onnx is installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/network.h"
#include "core/partition.h"
#include "graph/builder.h"
#include "graph/onnx/onnx_exporter.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/passes.h"
#include "tests/cli/scratch_dir.h"
#include "tests/rknn/graph_runner.h"

namespace co_up {
namespace {

using graph::Graph;
using graph::TensorId;
using ::testing::HasSubstr;

void expect_close(std::span<const float> got, std::span<const float> want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  const double range = std::max(static_cast<double>(*hi - *lo), 1e-6);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
  }
  EXPECT_LE(worst, 1e-5 * range) << what << ": max |diff| " << worst << ", range " << range;
}

// Re-imports an exported region as `co_up --model` would read it: import, then the inference
// passes (which fuse the exported Conv + Relu pairs back into one node).
Graph reimport(const Graph& g, const graph::OnnxExportRegion& region) {
  Graph back = graph::import_onnx_bytes(graph::export_onnx_bytes(g, region), region.name + ".onnx");
  graph::optimize_for_inference(back);
  return back;
}

// The whole graph: same outputs under the same names and shapes. `whole` has run `g` on
// `input`.
void check_whole_graph(const Graph& g, test::ReferenceGraphRunner& whole, const std::vector<float>& input) {
  const Graph back = reimport(g, graph::whole_graph_region(g));
  ASSERT_EQ(back.inputs().size(), g.inputs().size());
  ASSERT_EQ(back.outputs().size(), g.outputs().size());
  EXPECT_EQ(back.tensor(back.inputs()[0]).name, g.tensor(g.inputs()[0]).name);
  const auto got = test::run_reference(back, {input});
  for (size_t o = 0; o < got.size(); ++o) {
    const graph::Tensor& want = g.tensor(g.outputs()[o]);
    EXPECT_EQ(back.tensor(back.outputs()[o]).name, want.name);
    EXPECT_EQ(back.tensor(back.outputs()[o]).desc.shape, want.desc.shape);
    expect_close(got[o], whole.values(want.id), g.name() + " output " + want.name);
  }
}

// Runs `g` on its seeded input, keeping every tensor.
struct WholeRun {
  explicit WholeRun(const Graph& g) : runner(g), input(seeded_inputs(g, 11).at(0)) {
    std::copy(input.begin(), input.end(), runner.values(g.inputs()[0]).begin());
    runner.run();
  }
  test::ReferenceGraphRunner runner;
  std::vector<float> input;
};

// Layers [first, last] as one sub-graph (N there, B elsewhere): the exported model, fed the value
// the whole graph computed at its boundary, gives the values the whole graph computed there.
void check_partition(const Graph& g, test::ReferenceGraphRunner& whole, uint32_t first, uint32_t last) {
  std::string order(g.layer_count(), 'B');
  std::fill(order.begin() + first, order.begin() + last + 1, 'N');
  const Partition partition = Partition::create(g, order);
  const SubGraph& sg = partition.subgraphs()[partition.subgraph_of_layer(first)];
  const std::string what = g.name() + " layers " + std::to_string(first) + "-" + std::to_string(last);
  ASSERT_EQ(sg.inputs.size(), 1u) << what << ": the importer reads single-input models";
  const graph::OnnxExportRegion region{g.name() + "_" + std::to_string(first) + "_" + std::to_string(last),
                                       sg.nodes, sg.inputs, sg.outputs};
  const Graph back = reimport(g, region);
  ASSERT_EQ(back.outputs().size(), sg.outputs.size()) << what;
  EXPECT_EQ(back.tensor(back.inputs()[0]).name, g.tensor(sg.inputs[0]).name) << what;
  test::ReferenceGraphRunner part(back);
  std::span<const float> boundary = whole.values(sg.inputs[0]);
  std::span<float> in = part.values(back.inputs()[0]);
  ASSERT_EQ(in.size(), boundary.size()) << what;
  std::copy(boundary.begin(), boundary.end(), in.begin());
  part.run();
  for (size_t o = 0; o < sg.outputs.size(); ++o) {
    EXPECT_EQ(back.tensor(back.outputs()[o]).name, g.tensor(sg.outputs[o]).name) << what;
    expect_close(part.values(back.outputs()[o]), whole.values(sg.outputs[o]), what);
  }
}

class ZooExport : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooExport, WholeGraphAndPartitionsRoundTrip) {
  // Small inputs keep every layer; AlexNet's fully connected weights stay large whatever the size,
  // so the last partition is the last layer alone.
  const Graph g = build_network({GetParam(), "layers", 64, 1, ""});
  WholeRun whole(g);
  check_whole_graph(g, whole.runner, whole.input);
  const uint32_t layers = g.layer_count();
  check_partition(g, whole.runner, 0, 0);
  check_partition(g, whole.runner, layers / 3, 2 * layers / 3);
  check_partition(g, whole.runner, layers - 1, layers - 1);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooExport,
                         ::testing::Values("alexnet", "googlenet", "mobilenet", "resnet50", "squeezenet"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Every IR operator, with fused activations (relu, relu6 on Conv, FullyConnected and Add), a
// BatchNormalization that stays a node, an Identity, and two graph outputs.
Graph every_op_network() {
  graph::SeededWeights weights(5);
  graph::GraphBuilder b("every_op", weights);
  TensorId x = b.input("image", {1, 4, 11, 9});
  b.begin_layer("features");
  TensorId c = b.relu(b.conv(x, "conv", graph::ConvParams::square(8, 3, 1, 1)), "conv/relu");
  c = b.batch_norm(c, "bn");  // after a Relu: not folded
  TensorId dw = b.relu6(b.depthwise_conv(c, "dw", 3, 2, 1), "dw/relu6");
  graph::PoolParams max_pool = graph::PoolParams::square(3, 2, 1, true);
  TensorId mp = b.max_pool(c, "maxpool", max_pool);
  graph::PoolParams avg = graph::PoolParams::square(3, 2, 1, false);
  avg.count_include_pad = true;
  TensorId ap = b.relu(b.avg_pool(c, "avgpool", avg), "avgpool/relu");  // stays a Relu node
  TensorId sum = b.relu(b.add(mp, ap, "add"), "add/relu");
  TensorId cat = b.concat({b.sigmoid(dw, "sigmoid"), b.hard_swish(sum, "hswish"), b.identity(dw, "identity")},
                          "concat", 1);
  cat = b.lrn(cat, "lrn", 3, 1e-3f, 0.75f, 2.0f);
  cat = b.conv(cat, "project", graph::ConvParams::square(24, 1));  // activation "none"
  cat = b.clip(cat, "clip", -0.5f, 0.7f);  // not 0..6: stays a Clip node
  b.output(b.global_max_pool(cat, "gmp"));
  b.begin_layer("classifier");
  TensorId g = b.global_avg_pool(cat, "gap");
  TensorId f = b.relu(b.fully_connected(cat, "fc1", 16), "fc1/relu");  // 4-D input: Flatten first
  f = b.relu6(b.fully_connected(f, "fc2", 12), "fc2/relu6");
  f = b.reshape(f, "reshape", {1, 3, 4});
  f = b.softmax(f, "softmax", 2);
  f = b.flatten(f, "flatten", 1);
  TensorId gf = b.flatten(g, "gap/flatten", 1);
  b.output(b.concat({f, gf}, "out", 1));
  Graph graph = b.finish();
  graph::fold_batch_norm(graph);
  graph::fuse_activations(graph);  // no identity elimination: the Identity stays
  graph.validate();
  return graph;
}

TEST(OnnxExport, EveryOperatorRoundTrips) {
  const Graph g = every_op_network();
  std::set<graph::OpType> ops;
  std::set<std::string> activations;
  for (const graph::Node& n : g.nodes()) {
    ops.insert(n.op);
    if (n.attrs.has("activation")) activations.insert(n.attrs.get_string("activation"));
  }
  EXPECT_EQ(ops.size(), 19u) << "every OpType, Input included";
  EXPECT_EQ(activations, (std::set<std::string>{"none", "relu", "relu6"}));
  WholeRun whole(g);
  check_whole_graph(g, whole.runner, whole.input);
}

TEST(OnnxExport, RegionErrorsNameTheRegionAndTheNode) {
  const Graph g = every_op_network();
  graph::OnnxExportRegion region = graph::whole_graph_region(g);
  region.inputs.clear();  // the first node then reads an unknown tensor
  try {
    graph::export_onnx_bytes(g, region);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("exporting 'every_op'"));
    EXPECT_THAT(e.what(), HasSubstr("node 'conv' (Conv)"));
    EXPECT_THAT(e.what(), HasSubstr("neither a region input nor computed earlier"));
  }
}

// The ONNX project's own checker (with shape inference) on exported files, when python3-onnx is
// there: the models are standard ONNX, not only something co_up's importer accepts.
TEST(OnnxExport, FilesPassTheOnnxChecker) {
  const char* python = "/usr/bin/python3";
  if (std::system((std::string(python) + " -c 'import onnx' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "python3-onnx not installed (apt-get install python3-onnx)";
  }
  test::ScratchDir dir;
  const Graph every_op = every_op_network();
  const Graph squeezenet = build_network({"squeezenet", "layers", 64, 1, ""});
  const Partition partition = Partition::create(squeezenet, "BBBNNNNBBB");
  const SubGraph& sg = partition.subgraphs()[1];
  graph::export_onnx_file(every_op, graph::whole_graph_region(every_op), dir / "every_op.onnx");
  graph::export_onnx_file(squeezenet, {"squeezenet_3_6", sg.nodes, sg.inputs, sg.outputs},
                          dir / "squeezenet_3_6.onnx");
  const std::string command = std::string(python) +
                              " -c 'import onnx, sys\n"
                              "for p in sys.argv[1:]: onnx.checker.check_model(onnx.load(p), full_check=True)' " +
                              (dir / "every_op.onnx").string() + " " + (dir / "squeezenet_3_6.onnx").string();
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace co_up
