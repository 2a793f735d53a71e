// Partition: sub-graphs from an order string, boundary edges, receive-buffer capacities.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/network.h"
#include "core/partition.h"

namespace co_up {
namespace {

graph::Graph alexnet() { return build_network({"alexnet", "layers", 64, 1, ""}); }

TEST(PartitionTest, ConsecutiveLettersFormSubGraphs) {
  const graph::Graph g = alexnet();
  const Partition p = Partition::create(g, "BBLGGNNN");
  ASSERT_EQ(p.subgraphs().size(), 4u);
  EXPECT_EQ(p.processors(), "BLGN");
  const std::vector<std::tuple<char, uint32_t, uint32_t>> expected = {
      {'B', 0, 1}, {'L', 2, 2}, {'G', 3, 4}, {'N', 5, 7}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(p.subgraphs()[i].processor, std::get<0>(expected[i]));
    EXPECT_EQ(p.subgraphs()[i].first_layer, std::get<1>(expected[i]));
    EXPECT_EQ(p.subgraphs()[i].last_layer, std::get<2>(expected[i]));
  }
  // A chain: the input edge, three boundary edges and the graph output.
  int boundaries = 0;
  for (const Edge& e : p.edges()) {
    if (e.source != kGraphInput && !e.destinations.empty()) {
      ++boundaries;
      ASSERT_EQ(e.destinations.size(), 1u);
      EXPECT_EQ(e.destinations[0], e.source + 1);
    }
  }
  EXPECT_EQ(boundaries, 3);
  EXPECT_EQ(p.subgraph_of_layer(4), 2u);
}

TEST(PartitionTest, EveryNodeLandsInExactlyOneSubGraph) {
  const graph::Graph g = build_network({"googlenet", "ops", 64, 1, ""});
  const Partition p = Partition::create(g, std::string(g.layer_count() / 2, 'B') +
                                               std::string(g.layer_count() - g.layer_count() / 2, 'L'));
  size_t nodes = 0;
  for (const SubGraph& sg : p.subgraphs()) nodes += sg.nodes.size();
  EXPECT_EQ(nodes + g.inputs().size(), g.nodes().size());
}

TEST(PartitionTest, RepeatedLettersMakeSeparateSubGraphs) {
  const graph::Graph g = alexnet();
  const Partition p = Partition::create(g, "BBLLLBBB");
  ASSERT_EQ(p.subgraphs().size(), 3u);
  EXPECT_EQ(p.subgraphs()[0].processor, 'B');
  EXPECT_EQ(p.subgraphs()[2].processor, 'B');
  EXPECT_EQ(p.processors(), "BL");
}

TEST(PartitionTest, WrongLengthAndBadLettersAreInputErrors) {
  const graph::Graph g = alexnet();
  EXPECT_THROW(Partition::create(g, "BBB"), InputError);
  EXPECT_THROW(Partition::create(g, "BBBBBBBBB"), InputError);
  EXPECT_THROW(Partition::create(g, "BBBBbBBB"), InputError);
  EXPECT_THROW(Partition::create(g, "BBBB-BBB"), InputError);
  try {
    Partition::create(g, "BBB");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("8 layers"), std::string::npos) << e.what();
  }
}

TEST(PartitionTest, ResidualShortcutAcrossStagesFansOut) {
  // resnet50 with op units: cut between the first conv of a bottleneck and the rest, so the
  // block input goes to both the branch and the shortcut add.
  const graph::Graph g = build_network({"resnet50", "ops", 64, 1, ""});
  std::string order(g.layer_count(), 'B');
  for (size_t i = 2; i < order.size(); i += 2) order[i] = 'L';
  const Partition p = Partition::create(g, order);
  bool fan_out = false;
  for (const Edge& e : p.edges()) fan_out |= e.destinations.size() >= 2;
  EXPECT_TRUE(fan_out);
}

TEST(ReceiverCapacityTest, SkipEdgesGetTheDepthOfThePathTheySkip) {
  // Synthetic: AlexNet is a chain, so use BLBL and check adjacent edges get the base.
  const graph::Graph g = alexnet();
  const Partition chain = Partition::create(g, "BBLLBBLL");
  for (const auto& per_dest : receiver_capacities(chain, 2)) {
    for (uint32_t c : per_dest) EXPECT_EQ(c, 2u);
  }
  for (const auto& per_dest : receiver_capacities(chain, 3)) {
    for (uint32_t c : per_dest) EXPECT_EQ(c, 3u);
  }
  // Op-level resnet: an edge skipping k stages along the longest path gets k * base.
  const graph::Graph r = build_network({"resnet50", "ops", 64, 1, ""});
  std::string order(r.layer_count(), 'B');
  for (size_t i = 1; i < order.size(); i += 2) order[i] = 'L';
  const Partition p = Partition::create(r, order);
  const auto caps = receiver_capacities(p, 2);
  uint32_t largest = 0;
  for (size_t e = 0; e < p.edges().size(); ++e) {
    for (size_t k = 0; k < p.edges()[e].destinations.size(); ++k) {
      const uint32_t distance = p.edges()[e].destinations[k] - p.edges()[e].source;
      EXPECT_GE(caps[e][k], 2u);
      EXPECT_LE(caps[e][k], 2u * distance);
      largest = std::max(largest, caps[e][k]);
    }
  }
  EXPECT_GE(largest, 4u) << "some shortcut must skip at least two stages";
}

}  // namespace
}  // namespace co_up
