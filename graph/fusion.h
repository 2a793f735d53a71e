// Fusion of what exporters spell out op by op into the IR's transformer ops, run at import:
//  - LayerNormalization from ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div,
//    optionally followed by Mul(scale) and Add(bias) (what opsets below 17 get from PyTorch);
//  - Gelu from any chain of element-wise ops over one tensor and scalar constants that computes
//    GELU: the chain is evaluated on sample values and compared with the erf form and the tanh
//    form, so every exporter's spelling of either is found without a pattern per spelling.
// Nodes are fused only when nothing outside the pattern reads their outputs. Deterministic.
#pragma once

#include "graph/graph.h"

namespace co_up::graph {

// Rebuilds `graph` with the patterns replaced; tensor and node ids change, names stay. Layer
// units are kept (a fused node takes the unit of the pattern's last node).
void fuse_transformer_patterns(Graph& graph);

}  // namespace co_up::graph
