// Exits in the IR and the ONNX importer: what marks a graph's outputs as exits, what it refuses,
// that passes keep the mark, and that exits end layer units.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "graph/onnx/layer_units.h"
#include "graph/passes.h"
#include "tests/exits/exit_network.h"

#ifdef CO_UP_HAVE_ONNX
#include "graph/onnx/onnx_exporter.h"
#include "graph/onnx/onnx_importer.h"
#endif

namespace co_up {
namespace {

using test::exit_network;

std::string mark_error(graph::Graph g) {
  try {
    g.mark_outputs_as_exits();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ExitGraphTest, MarkRefusesOutputsOutOfStageOrderOrOfOtherShapes) {
  graph::Graph g = exit_network(false);
  EXPECT_FALSE(g.has_exits());
  const std::vector<graph::TensorId> outputs = g.outputs();
  graph::Graph reversed = g;
  reversed.reorder_outputs({outputs[1], outputs[0], outputs[2]});
  EXPECT_EQ(mark_error(reversed),
            "exit 1 'exit0' is computed before exit 0 'exit1'; list exits in stage order (the order "
            "the network computes them)");

  graph::SeededWeights weights(3);
  graph::GraphBuilder b("uneven", weights);
  const graph::TensorId x = b.input("data", {1, 3, 8, 8});
  b.begin_layer("a");
  const graph::TensorId a = b.softmax(b.fully_connected(b.flatten(x, "f"), "fa", 10), "exit0");
  const graph::TensorId c = b.softmax(b.fully_connected(b.flatten(x, "g"), "fb", 5), "exit1");
  b.output(a);
  b.output(c);
  EXPECT_EQ(mark_error(b.finish()),
            "exit 1 'exit1' has shape [1,5] but exit 0 'exit0' has [1,10]; every exit must score "
            "the same classes");
  graph::Graph one = g;
  one.reorder_outputs(outputs);
  EXPECT_THROW(one.reorder_outputs({outputs[0], outputs[0], outputs[2]}), InputError);
}

TEST(ExitGraphTest, PassesThatRebuildTheGraphKeepTheMark) {
  graph::Graph g = exit_network(true);
  ASSERT_TRUE(g.has_exits());
  graph::assign_op_units(g);  // conv1, exit0_fc, conv2, ...: a unit with one conv to split
  graph::split_output_channels(g, 2, 2);
  EXPECT_TRUE(g.has_exits());
  graph::optimize_for_inference(g);
  EXPECT_TRUE(g.has_exits());
  EXPECT_EQ(g.tensor(g.outputs().back()).name, "exit2");
}

TEST(ExitGraphTest, ExitsEndLayerUnits) {
  graph::Graph g = exit_network(true);
  for (const graph::Node& n : g.nodes()) g.mutable_node(n.id).layer = 0;  // one unit for everything
  g.set_layer_name(0, "all");
  graph::cut_units_after_exits(g);
  g.validate();
  const std::vector<graph::LayerUnit> units = g.layers();
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[0].name, "all");
  EXPECT_EQ(units[1].name, "conv2");  // named after its first node
  EXPECT_EQ(g.node(units[0].nodes.back()).name, "exit0");
  EXPECT_EQ(g.node(units[1].nodes.back()).name, "exit1");
  graph::Graph fixed = exit_network(false);
  const uint32_t before = fixed.layer_count();
  graph::cut_units_after_exits(fixed);
  EXPECT_EQ(fixed.layer_count(), before);
}

#ifdef CO_UP_HAVE_ONNX
graph::Graph round_trip(const graph::Graph& g, const graph::OnnxImportOptions& options = {}) {
  return graph::import_onnx_bytes(graph::export_onnx_bytes(g, graph::whole_graph_region(g)), "m.onnx", options);
}

TEST(ExitGraphTest, ImporterFindsExitsByNameOrFromAList) {
  EXPECT_TRUE(round_trip(exit_network(true)).has_exits());
  EXPECT_TRUE(round_trip(exit_network(true, 11, {"exit0", "exit1", "logits"})).has_exits());
  EXPECT_FALSE(round_trip(exit_network(true, 11, {"exit0", "head", "logits"})).has_exits());
  EXPECT_FALSE(round_trip(exit_network(true, 11, {"exit1", "exit0", "exit2"})).has_exits());

  const graph::Graph named = exit_network(true, 11, {"a", "b", "c"});
  graph::OnnxImportOptions options;
  options.exits = {"a", "b", "c"};
  options.exits_origin = "exits file 'x.json'";
  const graph::Graph imported = round_trip(named, options);
  EXPECT_TRUE(imported.has_exits());
  options.exits = {"a", "c"};
  try {
    round_trip(named, options);
    FAIL() << "a list missing an output accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "m.onnx: exits file 'x.json' lists 2 exits but the model has 3 outputs; "
                           "list every output, in stage order");
  }
  options.exits = {"b", "a", "c"};
  EXPECT_THROW(round_trip(named, options), InputError);  // not in stage order
  options.exits = {"a", "a", "c"};
  EXPECT_THROW(round_trip(named, options), InputError);
}
#endif

}  // namespace
}  // namespace co_up
