// Parallel regions: fork/join sets of independent branches, found exactly on synthetic DAGs and
// on the zoo's inception modules and projection shortcuts.
#include "graph/parallel_regions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/onnx/onnx_importer.h"
#include "graph/passes.h"
#include "graph/shared_boundary.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

using Branches = std::vector<std::vector<uint32_t>>;

TEST(DagRegions, DiamondIsOneRegionOfTwoBranches) {
  const auto regions = find_dag_regions({{1, 2}, {3}, {3}, {}});
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].fork, 0u);
  EXPECT_EQ(regions[0].join, 3u);
  EXPECT_EQ(regions[0].branches, (Branches{{1}, {2}}));
}

TEST(DagRegions, AnIdentitySkipIsNoBranch) {
  // 0 -> 1 -> 2 and 0 -> 2: a residual block without a projection.
  EXPECT_TRUE(find_dag_regions({{1, 2}, {2}, {}}).empty());
}

TEST(DagRegions, ChainedModulesGiveOneRegionEachWithChainsAsBranches) {
  // 0 -> {1 -> 2, 3} -> 4 -> {5, 6, 7 -> 8} -> 9
  const auto regions = find_dag_regions({{1, 3}, {2}, {4}, {4}, {5, 6, 7}, {9}, {9}, {8}, {9}, {}});
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0].fork, 0u);
  EXPECT_EQ(regions[0].join, 4u);
  EXPECT_EQ(regions[0].branches, (Branches{{1, 2}, {3}}));
  EXPECT_EQ(regions[1].fork, 4u);
  EXPECT_EQ(regions[1].join, 9u);
  EXPECT_EQ(regions[1].branches, (Branches{{5}, {6}, {7, 8}}));
}

TEST(DagRegions, ABranchThatReadsAnotherBranchMergesWithIt) {
  // 0 -> {1, 2}, 1 -> 2 -> 3: the join of 0 is 2; only 1 lies between: no region.
  EXPECT_TRUE(find_dag_regions({{1, 2}, {2}, {3}, {}}).empty());
  // 0 -> {1, 2, 3}, 1 -> 2, {2, 3} -> 4: branches {1, 2} and {3}.
  const auto regions = find_dag_regions({{1, 2, 3}, {2}, {4}, {4}, {}});
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].branches, (Branches{{1, 2}, {3}}));
}

TEST(DagRegions, AnInputFromOutsideAfterTheForkIsNotARegion) {
  // 1 is a second source; 3 reads the fork 0 and 1: the branches cannot start when 0 is done.
  EXPECT_TRUE(find_dag_regions({{2, 3}, {3}, {4}, {4}, {}}).empty());
}

TEST(DagRegions, HeadsThatAreSeparateOutputsJoinAtTheEnd) {
  // 0 -> 1 -> {2 -> 3, 4}: 3 and 4 are graph outputs (detector heads).
  const auto regions = find_dag_regions({{1}, {2, 4}, {3}, {}, {}});
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].fork, 1u);
  EXPECT_EQ(regions[0].join, kDagExit);
  EXPECT_EQ(regions[0].branches, (Branches{{2, 3}, {4}}));
}

TEST(DagRegions, AnOutputInsideAModuleLeavesNoJoinBeforeTheEnd) {
  // 0 -> {1, 2} -> 3, and 1 is also a graph output: the paths from 0 meet only at the end, and
  // everything between (1, 2, 3) is one connected piece: no region.
  EXPECT_TRUE(find_dag_regions({{1, 2}, {3}, {3}, {}}, {false, true, false, false}).empty());
  EXPECT_EQ(find_dag_regions({{1, 2}, {3}, {3}, {}}).size(), 1u);
}

TEST(DagRegions, ASuccessorBeforeItsVertexIsALogicError) {
  EXPECT_THROW(find_dag_regions({{1}, {0}}), std::logic_error);
}

Graph zoo_graph(const std::string& name, bool op_units, bool branch_units = false) {
  SeededWeights weights(1);
  ZooOptions options;
  options.image_size = 64;
  Graph g = build_zoo_graph(name, weights, options);
  optimize_for_inference(g);
  if (op_units) assign_op_units(g);
  if (branch_units) assign_branch_units(g);
  return g;
}

TEST(ParallelRegions, GoogLeNetHasItsNineInceptionModules) {
  const Graph g = zoo_graph("googlenet", false);
  const std::vector<ParallelRegion> regions = find_parallel_regions(g);
  const std::vector<std::string> modules = {"3a", "3b", "4a", "4b", "4c", "4d", "4e", "5a", "5b"};
  ASSERT_EQ(regions.size(), modules.size());
  double share = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    const std::string p = "inception_" + modules[i] + "/";
    const ParallelRegion& r = regions[i];
    EXPECT_EQ(g.node(r.join).name, p + "output");
    ASSERT_EQ(r.branches.size(), 4u) << p;
    EXPECT_EQ(g.node(r.branches[0].nodes.front()).name, p + "1x1");
    EXPECT_EQ(g.node(r.branches[1].nodes.front()).name, p + "3x3_reduce");
    EXPECT_EQ(g.node(r.branches[1].nodes.back()).name, p + "3x3");
    EXPECT_EQ(g.node(r.branches[2].nodes.front()).name, p + "5x5_reduce");
    EXPECT_EQ(g.node(r.branches[3].nodes.front()).name, p + "pool");
    EXPECT_EQ(g.node(r.branches[3].nodes.back()).name, p + "pool_proj");
    // With the paper's layer units each module is one unit: units 2..10.
    for (const RegionBranch& b : r.branches) {
      EXPECT_EQ(b.first_layer, i + 2) << p;
      EXPECT_EQ(b.last_layer, i + 2) << p;
    }
    EXPECT_GT(r.cost_share, 0.0);
    share += r.cost_share;
  }
  EXPECT_LT(share, 1.0);
  const std::vector<std::string> lines = describe_parallel_regions(g, regions);
  ASSERT_EQ(lines.size(), 9u);
  EXPECT_EQ(lines[0].rfind("inception_3a: fork pool2/3x3_s2 -> join inception_3a/output, 4 branches, ", 0), 0u)
      << lines[0];
}

TEST(ParallelRegions, ResNetHasItsFourProjectionShortcuts) {
  const Graph g = zoo_graph("resnet50", false);
  const std::vector<ParallelRegion> regions = find_parallel_regions(g);
  ASSERT_EQ(regions.size(), 4u);
  const std::vector<std::string> joins = {"res2a", "res3a", "res4a", "res5a"};
  for (size_t i = 0; i < joins.size(); ++i) {
    EXPECT_EQ(g.node(regions[i].join).name, joins[i]);
    ASSERT_EQ(regions[i].branches.size(), 2u);
    EXPECT_EQ(g.node(regions[i].branches[1].nodes.front()).name, joins[i] + "_branch1");
  }
}

TEST(ParallelRegions, ChainsHaveNone) {
  EXPECT_TRUE(find_parallel_regions(zoo_graph("alexnet", false)).empty());
  EXPECT_TRUE(find_parallel_regions(zoo_graph("mobilenet", false)).empty());
}

TEST(UnitRegions, GoogLeNetOpUnitsSpreadThreeBranchesPerModule) {
  // --units=ops: one unit per convolution; a module's pool joins the 5x5 unit before it and the
  // Concat the pool_proj unit, so each module is fork -> {1x1}, {3x3_reduce, 3x3},
  // {5x5_reduce, 5x5 + pool} -> pool_proj + Concat.
  const Graph g = zoo_graph("googlenet", true);
  const UnitDag dag = unit_dag(g);
  ASSERT_EQ(dag.predecessors.size(), g.layer_count());
  EXPECT_TRUE(dag.inputs[0]);
  EXPECT_TRUE(dag.outputs.back());
  const std::vector<DagRegion> regions = find_unit_regions(dag);
  ASSERT_EQ(regions.size(), 9u);
  const std::vector<LayerUnit> units = g.layers();
  for (const DagRegion& r : regions) {
    ASSERT_EQ(r.branches.size(), 3u);
    const uint32_t f = r.fork;
    EXPECT_EQ(r.branches[0], (std::vector<uint32_t>{f + 1}));
    EXPECT_EQ(r.branches[1], (std::vector<uint32_t>{f + 2, f + 3}));
    EXPECT_EQ(r.branches[2], (std::vector<uint32_t>{f + 4, f + 5}));
    EXPECT_EQ(r.join, f + 6);
    EXPECT_NE(units[r.join].name.find("pool_proj"), std::string::npos) << units[r.join].name;
  }
}

TEST(UnitDag, MarksTheUnitsWhoseBoundariesSwitchModeMayShare) {
  // AlexNet: the convolution units pass 4-D f32 tensors on (shareable), the classifier units
  // 2-D ones (copied), and the last unit's output is the graph's (copied).
  const Graph g = zoo_graph("alexnet", true);
  const UnitDag dag = unit_dag(g);
  ASSERT_EQ(dag.shareable.size(), g.layer_count());
  size_t shared = 0, copied = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == OpType::kInput) continue;
    for (TensorId t : n.inputs) {
      const Tensor& in = g.tensor(t);
      if (in.is_constant || in.producer == kNoNode || g.node(in.producer).op == OpType::kInput) continue;
      const uint32_t producer = g.node(in.producer).layer;
      if (producer == n.layer) continue;
      const bool four_d = in.desc.shape.size() == 4;
      EXPECT_EQ(shareable_boundary(g, t), four_d) << in.name;
      if (!four_d) EXPECT_FALSE(dag.shareable[producer]) << in.name;
      (four_d ? shared : copied) += 1;
    }
  }
  EXPECT_GT(shared, 0u);
  EXPECT_GT(copied, 0u);
  EXPECT_TRUE(dag.shareable[0]);
  EXPECT_FALSE(shareable_boundary(g, g.outputs().front()));
}

TEST(UnitRegions, GoogLeNetBranchUnitsSpreadAllFourBranchesAndJoinApart) {
  // --units=branches: the pool opening the fourth branch and each module's Concat are units of
  // their own: fork -> {1x1}, {3x3_reduce, 3x3}, {5x5_reduce, 5x5}, {pool, pool_proj} -> output.
  const Graph g = zoo_graph("googlenet", false, true);
  const std::vector<LayerUnit> units = g.layers();
  EXPECT_EQ(units.size(), 76u);
  const std::vector<DagRegion> regions = find_unit_regions(unit_dag(g));
  ASSERT_EQ(regions.size(), 9u);
  for (const DagRegion& r : regions) {
    const uint32_t f = r.fork;
    EXPECT_EQ(r.branches, (std::vector<std::vector<uint32_t>>{{f + 1}, {f + 2, f + 3}, {f + 4, f + 5}, {f + 6, f + 7}}));
    EXPECT_EQ(r.join, f + 8);
    EXPECT_NE(units[f + 6].name.find("/pool"), std::string::npos) << units[f + 6].name;
    EXPECT_NE(units[r.join].name.find("/output"), std::string::npos) << units[r.join].name;
  }
  // A chain keeps one unit per compute op, as --units=ops.
  EXPECT_EQ(zoo_graph("alexnet", false, true).layer_count(), zoo_graph("alexnet", true).layer_count());
}

#ifdef CO_UP_HAVE_ONNX
size_t onnx_region_count(const std::string& fixture) {
  Graph g = import_onnx_file(std::string(CO_UP_SOURCE_DIR) + "/tests/fixtures/onnx/" + fixture);
  optimize_for_inference(g);
  const std::vector<ParallelRegion> regions = find_parallel_regions(g);
  for (const ParallelRegion& r : regions) EXPECT_GE(r.branches.size(), 2u) << fixture;
  return regions.size();
}

TEST(ParallelRegions, ImportedModelsHaveTheirs) {
  EXPECT_EQ(onnx_region_count("inception_v4_tiny.onnx"), 15u);
  EXPECT_EQ(onnx_region_count("op_attention.onnx"), 3u);
  EXPECT_EQ(onnx_region_count("yolo_tiny.onnx"), 13u);
}
#endif

}  // namespace
}  // namespace co_up::graph
