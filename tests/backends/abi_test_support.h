// Shared harness for tests that drive a backend plugin through the C ABI
// (co_up/plugin_abi.h) directly, as the runtime does.
//
// Why this header exists: the opencl, cpu-reference and cpu-xnnpack plugin tests each used to
// carry their own copy of the sub-graph description builder. The ABI structs hold raw pointers
// (dims, inputs, attrs, ...), so every test needs the same "keep the storage alive, hand out
// pointers into it" bookkeeping; one copy keeps the three in step when the ABI grows a field.
//
// Header-only, so each test binary just includes it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"

namespace co_up::testing {

// Builds a co_up_subgraph_desc whose pointers stay valid as long as the builder.
//
// Storage that descriptors point into lives in std::deque (push_back never moves existing
// elements), so pointers handed out for earlier tensors/nodes stay valid as more are added.
// tensors_/nodes_ are std::vector because the descriptor needs contiguous arrays; desc() takes
// their data() only once everything has been added.
class GraphBuilder {
 public:
  // Adds an F32 tensor; `data` (not copied: it must outlive the builder's use) makes it a
  // constant. Returns its index.
  uint32_t tensor(const char* name, std::vector<int64_t> dims, const std::vector<float>* data = nullptr,
                  int32_t layout = CO_UP_LAYOUT_NCHW) {
    dims_.push_back(std::move(dims));
    co_up_tensor_desc t{};
    t.struct_size = sizeof(t);
    t.name = name;
    t.dtype = CO_UP_DTYPE_F32;
    t.layout = layout;
    t.rank = uint32_t(dims_.back().size());
    t.dims = dims_.back().data();
    if (data) {
      t.data = data->data();
      t.data_bytes = data->size() * sizeof(float);
    }
    tensors_.push_back(t);
    return uint32_t(tensors_.size() - 1);
  }

  // Changes tensor `t`'s layout (e.g. to describe an NHWC boundary).
  void set_layout(uint32_t t, int32_t layout) { tensors_.at(t).layout = layout; }

  // Attribute makers. ints() stores the list in the builder (the attr points into it).
  co_up_attr ints(const char* name, std::vector<int64_t> v) {
    ints_.push_back(std::move(v));
    co_up_attr a{};
    a.name = name;
    a.type = CO_UP_ATTR_INTS;
    a.ints = ints_.back().data();
    a.count = ints_.back().size();
    return a;
  }
  static co_up_attr integer(const char* name, int64_t v) {
    co_up_attr a{};
    a.name = name;
    a.type = CO_UP_ATTR_INT;
    a.i = v;
    return a;
  }
  static co_up_attr real(const char* name, double v) {
    co_up_attr a{};
    a.name = name;
    a.type = CO_UP_ATTR_FLOAT;
    a.f = v;
    return a;
  }
  static co_up_attr str(const char* name, const char* s) {
    co_up_attr a{};
    a.name = name;
    a.type = CO_UP_ATTR_STRING;
    a.s = s;
    return a;
  }

  // Adds a one-output node in `layer` (the runtime's layer index, reported through the hooks).
  void node(const char* name, const char* op, uint32_t layer, std::vector<uint32_t> in, uint32_t out,
            std::vector<co_up_attr> attrs) {
    node_inputs_.push_back(std::move(in));
    node_outputs_.push_back({out});
    node_attrs_.push_back(std::move(attrs));
    co_up_node_desc n{};
    n.struct_size = sizeof(n);
    n.name = name;
    n.op_type = op;
    n.layer = layer;
    n.inputs = node_inputs_.back().data();
    n.input_count = uint32_t(node_inputs_.back().size());
    n.outputs = node_outputs_.back().data();
    n.output_count = 1;
    n.attrs = node_attrs_.back().data();
    n.attr_count = uint32_t(node_attrs_.back().size());
    nodes_.push_back(n);
  }

  // The description of everything added so far. last_layer is the highest node layer (0 with no
  // nodes), as the runtime fills it in for a sub-graph.
  co_up_subgraph_desc desc(std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                           const char* graph_name = "test") {
    inputs_ = std::move(inputs);
    outputs_ = std::move(outputs);
    co_up_subgraph_desc g{};
    g.struct_size = sizeof(g);
    g.graph_name = graph_name;
    g.tensors = tensors_.data();
    g.tensor_count = uint32_t(tensors_.size());
    g.nodes = nodes_.data();
    g.node_count = uint32_t(nodes_.size());
    g.inputs = inputs_.data();
    g.input_count = uint32_t(inputs_.size());
    g.outputs = outputs_.data();
    g.output_count = uint32_t(outputs_.size());
    uint32_t last = 0;
    for (const auto& n : nodes_) last = std::max(last, n.layer);
    g.last_layer = last;
    return g;
  }

  // Element count of tensor `t`.
  int64_t count(uint32_t t) const {
    int64_t n = 1;
    for (uint32_t i = 0; i < tensors_[t].rank; ++i) n *= tensors_[t].dims[i];
    return n;
  }

  // For tests that alter a tensor after adding it (e.g. its dtype); descriptors built by desc()
  // point into this vector, so changes show through them.
  std::vector<co_up_tensor_desc>& tensors() { return tensors_; }
  size_t node_count() const { return nodes_.size(); }

 private:
  std::deque<std::vector<int64_t>> dims_, ints_;
  std::deque<std::vector<uint32_t>> node_inputs_, node_outputs_;
  std::deque<std::vector<co_up_attr>> node_attrs_;
  std::vector<co_up_tensor_desc> tensors_;
  std::vector<co_up_node_desc> nodes_;
  std::vector<uint32_t> inputs_, outputs_;
};

}  // namespace co_up::testing
