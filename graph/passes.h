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

// --units=branches: as assign_op_units, except that an op which does not continue the unit before
// it (it reads no tensor of that unit: the pool opening an inception branch) or joins several
// units (a Concat or Add where branches meet) starts a unit of its own, named after it. So every
// branch of a fork/join region (graph/parallel_regions.h) is its own units and the join is a
// unit apart: an order can run all branches at once, none waits for the join's sub-graph.
void assign_branch_units(Graph& graph);

// Data parallelism inside one layer (the task + data parallel paper, papers/task-data-parallel-
// csdf.txt): the compute op of layer unit `unit` becomes `parts` ops over consecutive slices of
// its output channels, each its own layer unit, so that an order string can give the slices to
// different processors; a Concat in the last slice's unit joins them, followed by the rest of
// the unit. Later units move up by parts - 1; slice units are named "<unit>#1", "#2", ...
// Slices are multiples of 16 channels where the op has at least 16 per part.
// Throws InputError when the unit does not exist, holds no or several compute ops (use
// --units=ops), the op is a grouped convolution, or it has fewer output channels than parts.
void split_output_channels(Graph& graph, uint32_t unit, int parts);

// The standard pipeline: fold_batch_norm, eliminate_identity, fuse_activations.
void optimize_for_inference(Graph& graph);

}  // namespace co_up::graph
