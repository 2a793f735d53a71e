// Graph passes run after building or importing, before partitioning. All are deterministic and
// independent of the mapping, so every order string runs the same computation.
#pragma once

#include "graph/graph.h"

namespace co_up::graph {

// Folds BatchNormalization into the preceding Conv when that Conv feeds only the BN (ARM-CL and
// ONNX Runtime do the same at load). The remaining BNs stay as nodes.
void fold_batch_norm(Graph& graph);

// Removes Identity (Dropout) nodes.
void eliminate_identity(Graph& graph);

// Fuses Relu / Clip(0,6) into the preceding Conv, FullyConnected or Add of the same layer unit
// when that producer feeds nothing else and its output is not a graph output.
void fuse_activations(Graph& graph);

// --units=ops: every compute op (Conv, FullyConnected) starts a new layer unit; other ops join
// the unit of the compute op before them. Unit names become the compute op's node name.
void assign_op_units(Graph& graph);

// The standard pipeline: fold_batch_norm, eliminate_identity, fuse_activations.
void optimize_for_inference(Graph& graph);

}  // namespace co_up::graph
