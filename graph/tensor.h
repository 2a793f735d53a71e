// Tensor descriptions and the tensors a Graph owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace co_up::graph {

using TensorId = uint32_t;
using NodeId = uint32_t;
inline constexpr TensorId kNoTensor = UINT32_MAX;
inline constexpr NodeId kNoNode = UINT32_MAX;

// Values match co_up_dtype / co_up_layout in the plugin ABI, so they cross it unchanged.
enum class DataType : uint8_t { kF32 = 0, kF16 = 1, kI8 = 2, kU8 = 3, kI32 = 4, kI64 = 5 };
enum class Layout : uint8_t { kAny = 0, kNchw = 1, kNhwc = 2 };

size_t dtype_size(DataType dtype);
const char* dtype_name(DataType dtype);
const char* layout_name(Layout layout);

// real = scale * (q - zero_point); one entry per tensor, or one per channel along `axis`.
struct QuantParams {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  int32_t axis = 0;
};

struct TensorDesc {
  std::vector<int64_t> shape;
  DataType dtype = DataType::kF32;
  Layout layout = Layout::kNchw;
  QuantParams quant;

  int64_t element_count() const;
  size_t byte_size() const { return static_cast<size_t>(element_count()) * dtype_size(dtype); }
  std::string shape_string() const;  // "[1,96,55,55]"
  bool operator==(const TensorDesc& other) const {
    return shape == other.shape && dtype == other.dtype && layout == other.layout;
  }
};

struct Tensor {
  TensorId id = kNoTensor;
  std::string name;
  TensorDesc desc;
  NodeId producer = kNoNode;  // kNoNode for constants and graph inputs without a node
  bool is_constant = false;
  std::vector<float> data;  // constant values (f32), empty for activations
};

}  // namespace co_up::graph
