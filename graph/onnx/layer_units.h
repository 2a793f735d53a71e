// Automatic layer units for an imported graph, as Para-Pipe's graph partitioning (Algorithm 1 of
// ../shared/papers/para-pipe.txt) finds them:
//  - merge each compute op (Conv, FullyConnected) with the element-wise, pooling and
//    normalisation ops that follow it (mergeNodes);
//  - a fan-in block — the nodes from a fork to the join where its branches meet again (an
//    inception module, a residual block, the expand part of a fire module) — is one unit, so no
//    cut falls inside it.
// Units are cut only where exactly one activation crosses the cut (a "single-tensor boundary" of
// the topological order) and only before a compute op; a stretch without a compute op (a pool
// between two blocks, a final Flatten/Softmax) joins the unit before it.
//  - One exception uses the node names: in a network with residual blocks, consecutive segments
//    whose compute ops share a module path as deep as the residual blocks' paths are one unit,
//    so an inverted-residual block without its skip connection (MobileNetV2/V3, EfficientNet)
//    is one unit like its residual siblings. Without scoped names the cuts depend only on the
//    graph's structure and node order, never on its weights.
//
//  - a transformer encoder block is one unit: a unit with attention (a MatMul of two computed
//    tensors) takes the units after it in the same scope ("encoder/layers/encoder_layer_0/
//    self_attention" + ".../mlp" -> "encoder/layers/encoder_layer_0"), so patch embedding, each
//    block and the head are units of their own.
//  - a detector's neck, where backbone features stay alive across several stages so no
//    single-tensor boundary falls between them, is cut where the top-level module changes along
//    a chain of composite modules (YOLO: each C3 block, SPPF, neck conv + Upsample + Concat, and
//    the Detect head are units); several tensors then cross such a cut.
// Names: the common prefix of the unit's compute-op node names up to a '/' (PyTorch's scopes:
// "layer1/layer1.0"), else the first compute op's name.
#pragma once

#include "graph/graph.h"

namespace co_up::graph {

// Rewrites Node::layer and the layer names of `graph`. Run after the inference passes
// (optimize_for_inference) so that fused activations are already inside their producer.
void assign_block_units(Graph& graph);

// A multi-exit graph (Graph::has_exits): a new layer unit starts right after each exit but the
// final one, so a stage's exit head never shares a unit (a letter of --order) with the next
// stage's layers. The part cut off is named after its first node. No-op for a static graph.
void cut_units_after_exits(Graph& graph);

}  // namespace co_up::graph
