// subgraph_count with the model: the runtime's sub-graphs of an order (core/partition.h), which a
// spread split layer cuts around its parts and Concat unit (graph/split_units.h), so the
// planner's "more sub-graphs must gain more" rule sees the cuts a split plan really has.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/cost_model.h"
#include "planner/search.h"
#include "tests/planner/two_processor_dag.h"

namespace co_up::planner {
namespace {

CostModel split_model(const std::vector<std::string>& names) {
  LayerProfile p = test::two_processor_profile(std::vector<double>(names.size(), 10));
  for (size_t i = 0; i < names.size(); ++i) p.network.layers[i].name = names[i];
  return CostModel(p);
}

TEST(SplitSubgraphCount, ASpreadSplitCountsItsPartsAndConcatAsSubGraphs) {
  const CostModel model = split_model({"x", "c#1", "c#2", "c#concat", "y"});
  // Parts on one letter: the layer is cut as any run.
  EXPECT_EQ(subgraph_count(model, "BBBBB"), 1u);
  EXPECT_EQ(subgraph_count(model, "BBBLL"), 2u);
  // Spread: {x} {c#1} on B, {c#2} on L, {c#concat, y} on B, as Partition::create cuts it; the
  // letter runs alone say 3.
  EXPECT_EQ(subgraph_count("BBLBB"), 3u);
  EXPECT_EQ(subgraph_count(model, "BBLBB"), 4u);
  EXPECT_EQ(subgraph_count(model, "BLBLL"), 4u);  // {x} {c#1} {c#2} {c#concat, y}
}

TEST(SplitSubgraphCount, WithoutSplitUnitsItIsTheLetterRuns) {
  const CostModel model = split_model({"a", "b", "c", "d"});
  for (const std::string order : {"BBBB", "BLLB", "BLBL", "LLLL"}) {
    EXPECT_EQ(subgraph_count(model, order), subgraph_count(order)) << order;
  }
}

}  // namespace
}  // namespace co_up::planner
