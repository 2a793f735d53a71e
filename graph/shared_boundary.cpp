#include "graph/shared_boundary.h"

#include <algorithm>

namespace co_up::graph {

bool shareable_boundary(const Graph& graph, TensorId tensor) {
  if (graph.has_exits()) return false;  // an exit's readers may never run: frames keep copies
  const Tensor& t = graph.tensor(tensor);
  if (t.producer == kNoNode || graph.node(t.producer).op == OpType::kInput) return false;
  if (t.desc.shape.size() != 4 || t.desc.dtype != DataType::kF32) return false;
  const std::vector<TensorId>& outputs = graph.outputs();
  return std::find(outputs.begin(), outputs.end(), tensor) == outputs.end();
}

}  // namespace co_up::graph
