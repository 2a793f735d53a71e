// Small things cpu-xnnpack and npu-int8 share: owned operators, status checks,
// aligned activation buffers, fused-activation ranges and NHWC index mapping.
#pragma once

#include <xnnpack.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "line_aligned.h"
#include "op_shapes.h"

namespace co_up::xnnpack {

struct XnnOperatorDeleter {
  void operator()(xnn_operator* op) const { xnn_delete_operator(op); }
};
using XnnOperator = std::unique_ptr<xnn_operator, XnnOperatorDeleter>;

const char* xnn_status_name(xnn_status status);

// xnn_initialize: process-wide and idempotent, never undone (another factory may still use it).
// Throws PluginError NO_DEVICE when this CPU cannot run XNNPACK, ending with `advice` (what the
// user can map there instead).
void initialize_xnnpack(const std::string& advice);

// Throws PluginError (OUT_OF_MEMORY or RUNTIME_ERROR): "XNNPACK <what> failed: <status>".
void check_xnn(xnn_status status, const std::string& what);

// A zero-filled array of T with 64 + XNN_EXTRA_BYTES bytes of slack (XNNPACK kernels and the
// VNNI kernels may read, never use, a few bytes past the end of a tensor), aligned as
// backends::allocate_lines says (64 bytes; huge pages from 2 MiB).
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(int64_t count) : count_(count) {
    const size_t bytes =
        (static_cast<size_t>(count) * sizeof(T) + XNN_EXTRA_BYTES + 64 + 63) / 64 * 64;
    void* p = backends::allocate_lines(bytes);
    std::memset(p, 0, bytes);
    data_.reset(static_cast<T*>(p));
  }
  T* data() const { return data_.get(); }
  int64_t count() const { return count_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  int64_t count_ = 0;
};

// [lo, hi] in real units of a fused activation.
std::pair<float, float> activation_range(backends::Activation a);

// Inside a partition a 4-D tensor is NHWC; other ranks keep the ABI's dims.
std::vector<int64_t> internal_dims(const std::vector<int64_t>& dims);
int64_t internal_axis(int64_t axis, size_t rank);
// Sizes before, along and after `axis` of `dims`.
void split_at_axis(const std::vector<int64_t>& dims, int64_t axis, int64_t* outer,
                   int64_t* axis_len, int64_t* inner);

// Convolution weights W[M, C/g, kH, kW] (the ABI's OIHW) in XNNPACK's per-group OHWI order
// [M, kH, kW, C/g], the order in which an NHWC input is read.
std::vector<float> conv_weights_ohwi(const float* w, const backends::Conv2dShape& s);

// Fully connected weights [M, K] for an input that is NHWC inside: when `input_dims` (the ABI's
// NCHW dims) needs_transpose, K's columns are reordered from (c, h, w) to (h, w, c) into
// `storage` and its data returned; otherwise `w` itself.
const float* fc_weights_for_nhwc(const float* w, const std::vector<int64_t>& input_dims,
                                 int64_t fc_out, int64_t fc_in, std::vector<float>& storage);

// A 4-D tensor whose NHWC and NCHW element orders differ (C > 1 and H*W > 1): layout changes at
// the partition's boundary and at Flatten/Reshape cost a transpose only for these.
bool needs_transpose(const std::vector<int64_t>& dims);

}  // namespace co_up::xnnpack
