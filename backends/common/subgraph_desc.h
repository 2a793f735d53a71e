// Safe reading of the ABI's sub-graph description (co_up_subgraph_desc and the arrays it points
// to), and the small formatting helpers every backend's messages use.
//
// Functions that check something throw PluginError (see plugin_status.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "co_up/plugin_abi.h"

namespace co_up::backends {

// Element `index` of an array of ABI structs. Arrays are strided by their first element's
// struct_size, so a newer host whose structs grew by appending still indexes correctly.
template <typename T>
const T& element_at(const T* array, uint32_t index) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(array);
  return *reinterpret_cast<const T*>(bytes + static_cast<size_t>(index) * array[0].struct_size);
}

// Throws INVALID_ARGUMENT when `graph` is NULL, older than ABI 1.0, or an array it counts is NULL.
void check_graph(const co_up_subgraph_desc* graph);

// The description's co_up_io_memory entries (ABI 1.3), in order; empty for an older host's
// description. Throws INVALID_ARGUMENT for an entry whose direction or index is out of range.
std::vector<co_up_io_memory> io_memory_of(const co_up_subgraph_desc& graph);

// The tensor's name, or "#<index>" for an unnamed one.
std::string tensor_name(const co_up_subgraph_desc& graph, uint32_t index);

std::string_view dtype_name(int32_t dtype);       // "f32", "int8", ...
std::string dims_string(const std::vector<int64_t>& dims);  // "[1,3,224,224]"
int64_t element_count(const std::vector<int64_t>& dims);
int64_t element_count(const co_up_tensor_desc& tensor);  // product of its dims

}  // namespace co_up::backends
