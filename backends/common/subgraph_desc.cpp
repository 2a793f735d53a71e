#include "subgraph_desc.h"

#include "plugin_status.h"

namespace co_up::backends {

void check_graph(const co_up_subgraph_desc* graph) {
  if (!graph) fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph description is NULL");
  // ABI 1.0's description ends before io_memory (1.3).
  constexpr size_t kAbi10Size = offsetof(co_up_subgraph_desc, io_memory);
  if (graph->struct_size < kAbi10Size) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "co_up_subgraph_desc.struct_size " + std::to_string(graph->struct_size) +
             " is smaller than ABI 1.0's " + std::to_string(kAbi10Size) +
             " (rebuild the host against plugin_abi.h)");
  }
  if (graph->tensor_count > 0 &&
      (!graph->tensors || graph->tensors[0].struct_size < sizeof(co_up_tensor_desc))) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "co_up_tensor_desc array is NULL or its struct_size is smaller than ABI 1.0's");
  }
  if (graph->node_count > 0 &&
      (!graph->nodes || graph->nodes[0].struct_size < sizeof(co_up_node_desc))) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "co_up_node_desc array is NULL or its struct_size is smaller than ABI 1.0's");
  }
  if ((graph->input_count > 0 && !graph->inputs) || (graph->output_count > 0 && !graph->outputs)) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, "sub-graph input or output index array is NULL");
  }
}

std::vector<co_up_io_memory> io_memory_of(const co_up_subgraph_desc& graph) {
  constexpr size_t kEnd = offsetof(co_up_subgraph_desc, io_memory_count) + sizeof(uint32_t);
  std::vector<co_up_io_memory> entries;
  if (graph.struct_size < kEnd || graph.io_memory_count == 0) return entries;
  if (!graph.io_memory || graph.io_memory[0].struct_size < sizeof(co_up_io_memory)) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, "co_up_io_memory array is NULL or its struct_size is too small");
  }
  for (uint32_t i = 0; i < graph.io_memory_count; ++i) {
    const co_up_io_memory& m = element_at(graph.io_memory, i);
    const bool input = m.direction == CO_UP_IO_INPUT;
    const std::string entry = "io_memory entry " + std::to_string(i);
    if ((!input && m.direction != CO_UP_IO_OUTPUT) || m.index >= (input ? graph.input_count : graph.output_count)) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, entry + " names no input or output of the sub-graph");
    }
    if (m.host_ptr == nullptr) fail(CO_UP_STATUS_INVALID_ARGUMENT, entry + ": host_ptr is NULL");
    for (const co_up_io_memory& earlier : entries) {
      if (earlier.direction == m.direction && earlier.index == m.index) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, entry + " names an " + (input ? "input" : "output") +
                                                " an earlier entry names already: one entry per port");
      }
    }
    // Channels per pixel: dims[1] of a 4-D tensor (dims are in NCHW order whatever the layout).
    const co_up_tensor_desc& t = element_at(graph.tensors, input ? graph.inputs[m.index] : graph.outputs[m.index]);
    const uint64_t channels = t.rank == 4 && t.dims[1] > 0 ? static_cast<uint64_t>(t.dims[1]) : 0;
    if (m.pixel_stride == 0 && m.channel_offset != 0) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, entry + ": channel_offset must be 0 when pixel_stride is 0 (dense)");
    }
    if (m.pixel_stride != 0 && (m.pixel_stride < channels || m.channel_offset > m.pixel_stride - channels)) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           entry + ": channel_offset " + std::to_string(m.channel_offset) + " + " + std::to_string(channels) +
               " channels exceed pixel_stride " + std::to_string(m.pixel_stride));
    }
    entries.push_back(m);
  }
  return entries;
}

std::string tensor_name(const co_up_subgraph_desc& graph, uint32_t index) {
  const co_up_tensor_desc& t = element_at(graph.tensors, index);
  if (t.name) return t.name;
  // Appended rather than "#" + to_string(): GCC 12 warns (-Wrestrict) on the latter, wrongly.
  std::string name = "#";
  name += std::to_string(index);
  return name;
}

std::string_view dtype_name(int32_t dtype) {
  switch (dtype) {
    case CO_UP_DTYPE_F32: return "f32";
    case CO_UP_DTYPE_F16: return "f16";
    case CO_UP_DTYPE_I8: return "int8";
    case CO_UP_DTYPE_U8: return "uint8";
    case CO_UP_DTYPE_I32: return "int32";
    case CO_UP_DTYPE_I64: return "int64";
    default: return "unknown";
  }
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t element_count(const co_up_tensor_desc& tensor) {
  int64_t n = 1;
  for (uint32_t k = 0; k < tensor.rank; ++k) n *= tensor.dims[k];
  return n;
}

}  // namespace co_up::backends
