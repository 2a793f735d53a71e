// Which boundary tensors switch mode may share in place between sub-graphs (zero-copy: the
// producer writes into runtime-owned memory and every reader reads it there, plugin ABI 1.3
// co_up_io_memory). The executor (core/executor.cpp, plan_shared_tensors) shares exactly these,
// where both backends declare external_io and the tensor crosses in NHWC; the DAG cost model
// (planner/dag_cost_model.cpp) charges no copy for exactly these, through UnitDag::shareable.
#pragma once

#include "graph/graph.h"

namespace co_up::graph {

// A 4-D f32 tensor computed by a node, not a graph output, in a network without exits. Whether it
// also crosses in NHWC (Placement's choice) and between backends that take runtime memory is the
// caller's to add.
bool shareable_boundary(const Graph& graph, TensorId tensor);

}  // namespace co_up::graph
