// Pooling moved through a channel Concat: Concat(a, b, ...) -> Pool becomes
// Concat(Pool(a), Pool(b), ...). Max and average pooling (global or windowed, any padding) compute
// each output channel from that channel alone, so the result is bit-identical; what changes is
// where the pooling runs. Each pool joins the layer unit of the node producing its input, so a
// --split layer's parts (graph/split_units.h) and an inception module's branches pool their own
// channels on their own processor, in parallel, and the join reads the pooled (for GoogLeNet's
// stride-2 pools, 4x smaller) tensors instead of the full ones across processors.
#pragma once

#include "graph/graph.h"

namespace co_up::graph {

// Rewrites every MaxPool, AveragePool or GlobalAveragePool whose input is a rank-4 Concat along
// channels (axis 1) that nothing else reads (and that is not a graph output), where each Concat
// input comes from a node (not a graph input or constant) and the rewrite empties no layer unit
// (a pool alone in a unit of its own, after the Concat's unit, stays). The new pools are named
// "<pool>#1", "#2", ... after the Concat inputs and follow their producers in node order; the
// Concat keeps its name and unit, its output the pool's output name. Unit names are kept.
// Repeated until nothing moves, so a pool goes through nested Concats (an inception module's
// join over a split branch's join) down to the split parts ("<pool>#1#2"). Deterministic; a graph
// without the pattern is left as it is.
void push_pools_through_concats(Graph& graph);

}  // namespace co_up::graph
