// Constant tensors of an ONNX graph while it is imported: initializers, Constant nodes, and the
// results of constant folding (shape arithmetic such as Shape -> Gather -> Concat -> Reshape, or
// the Slice/Transpose/Cast chain PyTorch emits for F.pad).
//
// Errors: every function throws std::invalid_argument with a short reason; the importer turns it
// into an InputError naming the file and node. Not thread-safe; values are small except weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class TensorProto;
}

namespace co_up::graph {

// A dense C-order tensor, floating point (f) or integer/boolean (i) valued.
struct OnnxConstant {
  std::vector<int64_t> shape;
  bool is_int = false;
  std::vector<float> f;
  std::vector<int64_t> i;

  int64_t count() const;
  std::vector<float> floats() const;  // converted when integer-valued
  std::vector<int64_t> ints() const;  // truncated when float-valued
  static OnnxConstant from_floats(std::vector<int64_t> shape, std::vector<float> values);
  static OnnxConstant from_ints(std::vector<int64_t> shape, std::vector<int64_t> values);
};

// Elements a shape holds; throws for negative dimensions or more than 2^31 elements.
int64_t checked_count(const std::vector<int64_t>& shape);

// Decodes an initializer or Constant value (float, double, float16, int8/16/32/64, uint8/16,
// bool; raw_data or typed fields). External data is refused.
OnnxConstant decode_tensor(const onnx::TensorProto& tensor);

// Folding kernels over constants (numpy semantics).
OnnxConstant fold_binary(const std::string& op, const OnnxConstant& a, const OnnxConstant& b);
OnnxConstant fold_gather(const OnnxConstant& data, const OnnxConstant& indices, int64_t axis);
OnnxConstant fold_slice(const OnnxConstant& data, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                        const std::vector<int64_t>& steps);
OnnxConstant fold_transpose(const OnnxConstant& data, std::vector<int64_t> perm);
OnnxConstant fold_concat(const std::vector<const OnnxConstant*>& parts, int64_t axis);

// Normalises a possibly negative axis into [0, rank) (or [0, rank] with inclusive_end).
int64_t normalize_axis(int64_t axis, int64_t rank, bool inclusive_end = false);

}  // namespace co_up::graph
