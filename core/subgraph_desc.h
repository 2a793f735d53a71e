// SubGraphDesc: the C description of one sub-graph, as the plugin ABI's compiled_create reads it.
//
// Owns the arrays of C structs; strings, dims, attribute values and constant data point into the
// Graph, which must outlive this object (it is only needed while the plugin compiles).
#pragma once

#include <deque>
#include <map>
#include <set>
#include <vector>

#include "co_up/plugin_abi.h"
#include "core/partition.h"
#include "graph/graph.h"

namespace co_up {

class SubGraphDesc {
 public:
  // Tensors in `nhwc` are described with CO_UP_LAYOUT_NHWC (the runtime's choice for boundaries
  // between two NHWC backends, see PlacementOptions::nhwc_boundaries); all others keep the graph's.
  SubGraphDesc(const graph::Graph& graph, const SubGraph& subgraph,
               const std::set<graph::TensorId>& nhwc = {});
  SubGraphDesc(const SubGraphDesc&) = delete;
  SubGraphDesc& operator=(const SubGraphDesc&) = delete;

  const co_up_subgraph_desc& get() const { return desc_; }

 private:
  uint32_t local_index(const graph::Graph& graph, graph::TensorId tensor,
                       const std::set<graph::TensorId>& nhwc);

  std::map<graph::TensorId, uint32_t> local_;
  std::vector<co_up_tensor_desc> tensors_;
  std::vector<co_up_node_desc> nodes_;
  // Deques: elements never move, so the pointers the C structs hold stay valid.
  std::deque<std::vector<uint32_t>> node_io_;
  std::deque<std::vector<co_up_attr>> node_attrs_;
  std::vector<uint32_t> inputs_;
  std::vector<uint32_t> outputs_;
  co_up_subgraph_desc desc_{};
};

}  // namespace co_up
