// Pools moved through channel Concats (graph/pool_through_concat.h): where the rewrite happens,
// where it must not, and what it does to GoogLeNet's split and inception units.
#include "graph/pool_through_concat.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/passes.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

Attributes pool_attrs() {
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("ceil_mode", int64_t{0});
  a.set("count_include_pad", int64_t{0});
  return a;
}

Attributes concat_attrs(int64_t axis) {
  Attributes a;
  a.set("axis", axis);
  return a;
}

// x -> Relu a (unit 0), Relu b (unit 1) -> Concat(axis) -> pool (unit 2) [-> Relu reading the
// Concat too, unit 2].
Graph join_then_pool(OpType pool, int64_t axis, bool concat_read_twice) {
  Graph g("join");
  TensorDesc desc;
  desc.shape = {1, 4, 8, 8};
  const TensorId x = g.add_input("x", desc);
  const TensorId a = g.add_node("a", OpType::kRelu, {x}, {}, 0);
  const TensorId b = g.add_node("b", OpType::kRelu, {x}, {}, 1);
  const TensorId joined = g.add_node("join", OpType::kConcat, {a, b}, concat_attrs(axis), 2);
  const TensorId pooled = g.add_node("pool", pool, {joined}, pool == OpType::kGlobalAveragePool ? Attributes{} : pool_attrs(), 2);
  g.mark_output(pooled);
  if (concat_read_twice) g.mark_output(g.add_node("other", OpType::kRelu, {joined}, {}, 2));
  for (uint32_t u = 0; u < 3; ++u) g.set_layer_name(u, "unit" + std::to_string(u));
  g.validate();
  return g;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const LayerSummary& s : summarize_layers(g)) ops.push_back(s.ops);
  return ops;
}

TEST(PoolThroughConcat, EachChannelPoolMovesIntoTheUnitsOfTheConcatInputs) {
  for (OpType pool : {OpType::kMaxPool, OpType::kAveragePool, OpType::kGlobalAveragePool}) {
    Graph g = join_then_pool(pool, 1, false);
    const TensorDesc before = g.tensor(g.outputs()[0]).desc;
    push_pools_through_concats(g);
    const std::string p(op_type_name(pool));
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{"Relu+" + p, "Relu+" + p, "Concat"})) << p;
    const Tensor& out = g.tensor(g.outputs()[0]);
    EXPECT_EQ(out.desc, before) << p;
    EXPECT_EQ(out.name, "pool") << p;
    EXPECT_EQ(g.node(out.producer).op, OpType::kConcat) << p;
    EXPECT_EQ(g.node(g.tensor(g.node(out.producer).inputs[1]).producer).name, "pool#2") << p;
    EXPECT_EQ(g.layers()[2].name, "unit2");
  }
}

TEST(PoolThroughConcat, AConcatReadElsewhereOrNotAlongChannelsStays) {
  for (const bool read_twice : {false, true}) {
    Graph g = join_then_pool(OpType::kMaxPool, read_twice ? 1 : 2, read_twice);
    const std::vector<std::string> before = ops_of(g);
    push_pools_through_concats(g);
    EXPECT_EQ(ops_of(g), before) << (read_twice ? "Concat read twice" : "Concat along rows");
  }
}

// GoogLeNet's stem and inception_3b/1x1 split in two: each part pools its own channels, the
// stem's join keeps LRN; the inception outputs before pool3, pool4 and the classifier's average
// pool lose their pool, and pool3 moves on into the 1x1's parts. Unit count and names stay.
TEST(PoolThroughConcat, GoogLeNetSplitPartsAndInceptionBranchesPoolTheirOwnChannels) {
  SeededWeights weights(7);
  ZooOptions options;
  options.image_size = 64;
  Graph g = build_zoo_graph("googlenet", weights, options);
  optimize_for_inference(g);
  assign_branch_units(g);
  split_output_channels(g, 11, 2);  // inception_3b/1x1, a branch the module's Concat joins
  split_output_channels(g, 0, 2);
  assign_branch_units(g);
  const std::vector<std::string> before = ops_of(g);
  const std::vector<LayerSummary> names = summarize_layers(g);
  push_pools_through_concats(g);
  const std::vector<std::string> after = ops_of(g);
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(before[0], "Conv(relu)");
  EXPECT_EQ(after[0], "Conv(relu)+MaxPool");
  EXPECT_EQ(after[1], "Conv(relu)+MaxPool");
  EXPECT_EQ(names[2].name, "conv1/7x7_s2#concat");
  EXPECT_EQ(before[2], "Concat+MaxPool+LRN");
  EXPECT_EQ(after[2], "Concat+LRN");
  // inception_3b's pool3 goes through the module's Concat and on through the split 1x1's.
  for (size_t u = 0; u < after.size(); ++u) {
    if (names[u].name == "inception_3b/1x1#1" || names[u].name == "inception_3b/1x1#2") {
      EXPECT_EQ(after[u], "Conv(relu)+MaxPool") << names[u].name;
    }
    if (names[u].name == "inception_3b/1x1#concat") EXPECT_EQ(after[u], "Concat");
  }
  int joins_losing_pools = 0;
  for (size_t u = 0; u < after.size(); ++u) {
    EXPECT_EQ(summarize_layers(g)[u].name, names[u].name);
    if (before[u] == "Concat+MaxPool" || before[u] == "Concat+GlobalAveragePool") {
      EXPECT_EQ(after[u], "Concat") << names[u].name;
      ++joins_losing_pools;
    }
  }
  EXPECT_EQ(joins_losing_pools, 3);  // inception_3b, 4e and 5b
  // A second run finds nothing more to move.
  push_pools_through_concats(g);
  EXPECT_EQ(ops_of(g), after);
}

}  // namespace
}  // namespace co_up::graph
