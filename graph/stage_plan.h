// Width-partitioned stages (Map-and-Conquer, ../shared/papers/map-and-conquer.txt, Eq. 3-6):
// every layer of a network split along its width into M stages by the partitioning matrix P and
// the indicator matrix I, each stage ending in an exit classifier.
//
//  - P[i][j] (M x n): the fraction of layer j's channels computed by stage i. Every entry is in
//    (0, 1] and every column sums to 1, or (with more than one stage) the last stage's entry is 1
//    and the earlier ones sum to at most 1: the last stage computes the whole layer again, from
//    every stage's features of the layer before (a full layer at the end: the path to the last
//    exit then has the static network's width there; the earlier stages' channels of that layer
//    serve their own exits and, as I says, the later exits).
//  - I[i][j] (M x n, 0/1): stage i's layer-j features are reused by every later stage (its layer
//    j+1 reads them; for the last layer, its exit classifier does). The paper's definition: one
//    bit per producing stage and layer. The last stage has no later stage, so its row is all 0.
//
// The stage plan does not create weights: stages come from a trained multi-exit model (its exits
// are the graph outputs exit0, exit1, ... in stage order; scripts/train_map_and_conquer.py),
// and assign_stage_units() labels every node with its stage after checking that the model has
// the structure the plan describes (layer and exit counts, channels per stage, which features
// each stage reads). Each stage is then one layer unit, so an order string maps stage ->
// processor. The static (no-exit) width split is the same model with every frame running to
// the last exit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up::graph {

struct StagePlan {
  std::vector<std::vector<double>> p;  // [stage][layer]
  std::vector<std::vector<int>> reuse;  // I, [stage][layer]

  size_t stage_count() const { return p.size(); }
  size_t layer_count() const { return p.empty() ? 0 : p[0].size(); }
  // P[M-1][layer] = 1 with earlier stages: the last stage computes the whole layer.
  bool last_stage_computes_whole_layer(size_t layer) const { return p.size() > 1 && p.back()[layer] == 1.0; }
};

// --stages=P:ROW/ROW/...;I:ROW/ROW/...  — one row per stage, one comma-separated entry per layer:
//   P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,0.5;I:1,1,1/0,1,1/0,0,0
// Throws InputError ("--stages: ...") for bad syntax or a plan validate_stage_plan refuses.
StagePlan parse_stage_plan(const std::string& text);

// --stage-plan=FILE: {"P": [[...], ...], "I": [[...], ...]}. Throws InputError naming the file.
StagePlan read_stage_plan_file(const std::string& path);

// Checks shape and values; `where` starts each message ("--stages", "stage plan 'f.json'").
// One-line InputErrors: no stages, rows of different lengths, P and I of different shapes, a
// fraction outside (0, 1], a column not summing to 1 (nor a whole last-stage layer after earlier
// shares of at most 1), an I entry not 0/1, and an I bit set in the
// last stage's row (reuse by a stage that does not exist).
void validate_stage_plan(const StagePlan& plan, const std::string& where);

// Channels per stage of a layer of `width` channels: round(p * width) for every stage but the
// last, which takes the rest, or all `width` where it computes the whole layer (as the training
// script splits them).
std::vector<int64_t> stage_channels(const StagePlan& plan, size_t layer, int64_t width);

// The stages of a multi-exit `graph` as the plan describes them, checked against it: the stage
// of every node (the first exit whose computation needs it; kNoStage for Input nodes) and each
// stage's compute ops (Conv, FullyConnected) in order: its n layers, then its exit classifier.
// Throws InputError as assign_stage_units does.
inline constexpr uint32_t kNoStage = UINT32_MAX;
struct StageStructure {
  std::vector<uint32_t> node_stage;           // [node id]
  std::vector<std::vector<NodeId>> compute;  // [stage][layer, ..., exit]
};
StageStructure find_stages(const Graph& graph, const StagePlan& plan, const std::string& where);

// Makes every stage of the multi-exit `graph` one layer unit ("stage1", "stage2", ...): a node
// belongs to the first exit that needs it; nodes are reordered stage by stage (still a
// topological order). Throws InputError when the graph's exits, layers, channels or feature
// reuse differ from the plan (the message names the stage and layer and both values).
void assign_stage_units(Graph& graph, const StagePlan& plan, const std::string& where);

}  // namespace co_up::graph
