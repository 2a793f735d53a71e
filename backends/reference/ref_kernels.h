// Kernels of the cpu-reference backend: plain f32 NCHW arrays and shapes, no ABI types.
//
// Determinism contract (tests compare processor mappings bit for bit): every output element is
// computed by the same instruction sequence, with its reduction in one fixed order, whatever the
// thread count, the split, or the element's position relative to a split. Work is split only over
// independent outputs, never inside a reduction, and GEMM edge tiles run the same micro-kernel as
// full tiles through a zero-padded scratch tile.
//
// Every kernel takes a ThreadPool* that may be null (single-threaded). Input and output arrays
// must not overlap unless a function says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "op_shapes.h"
#include "ref_thread_pool.h"

namespace co_up::reference {

// The shapes every backend decodes nodes into (backends/common/op_shapes.h).
using backends::Activation;
using backends::Conv2dShape;
using backends::Pool2dShape;

// Owns a 64-byte-aligned float array (packed panels are loaded as whole vectors).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t count);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Convolution

// Weights W[M, C/group, kH, kW] and bias B[M] rearranged once for the kernel; then immutable, so
// one object may run on several threads at once, each with its own scratch.
class PackedConv2d {
 public:
  // `bias` may be null. Throws std::invalid_argument if the shape is inconsistent.
  // `use_isa_extensions` = false forces the portable micro-kernel (tests cover it on x86 too).
  PackedConv2d(const Conv2dShape& shape, const float* weights, const float* bias,
               bool use_isa_extensions = true);

  const Conv2dShape& shape() const { return shape_; }
  // Floats of scratch `run` needs for a pool of `threads` threads.
  size_t scratch_floats(int threads) const;
  // x[N, C, H, W] -> y[N, M, OH, OW]. `scratch` holds scratch_floats(pool threads) floats.
  void run(const float* x, float* y, float* scratch, ThreadPool* pool) const;

 public:
  // c[6 x 16] (+)= a_panel * b_panel; one ISA variant per machine (see ref_kernels.cpp).
  using MicroKernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                               bool accumulate);

 private:
  void run_gemm(const float* x, float* y, float* scratch, ThreadPool* pool) const;
  void run_depthwise(const float* x, float* y, ThreadPool* pool) const;

  Conv2dShape shape_;
  MicroKernel micro_kernel_;
  bool depthwise_ = false;
  int64_t out_h_ = 0;
  int64_t out_w_ = 0;
  int64_t group_out_ = 0;   // M / group
  int64_t group_depth_ = 0;  // K of the GEMM: C/group * kH * kW
  int64_t panels_m_ = 0;     // ceil(group_out_ / kMr) row panels per group
  AlignedBuffer weights_;    // GEMM: [group][panel][K][kMr]; depthwise: W as given
  std::vector<float> bias_;  // M entries, zeros when the node has none
};

// Convenience for tests and one-off calls: packs, allocates scratch and runs.
void conv2d(const Conv2dShape& shape, const float* x, const float* weights, const float* bias,
            float* y, ThreadPool* pool);

// ---------------------------------------------------------------------------------------------
// Fully connected: y[n, m] = sum_k x[n, k] * w[m, k] + b[m], k ascending in 16 fixed lanes.

class PackedFullyConnected {
 public:
  PackedFullyConnected(int64_t out_features, int64_t in_features, const float* weights,
                       const float* bias, Activation activation);
  void run(const float* x, int64_t batch, float* y, ThreadPool* pool) const;

 private:
  int64_t out_features_;
  int64_t in_features_;
  Activation activation_;
  AlignedBuffer weights_;  // [M][K] row-major, streamed once per run
  std::vector<float> bias_;
};

void fully_connected(const float* x, int64_t batch, int64_t in_features, const float* weights,
                     const float* bias, int64_t out_features, Activation activation, float* y,
                     ThreadPool* pool);

// ---------------------------------------------------------------------------------------------
// Pooling

// Padding never wins a max. Windows are read row-major.
void max_pool2d(const Pool2dShape& shape, const float* x, float* y, ThreadPool* pool);
// Divisor: in-image elements, or with count_include_pad the window clipped to the padded image.
void average_pool2d(const Pool2dShape& shape, const float* x, float* y, ThreadPool* pool);
// `planes` = N*C planes of `plane_size` elements each -> one value per plane.
void global_average_pool(int64_t planes, int64_t plane_size, const float* x, float* y,
                         ThreadPool* pool);
void global_max_pool(int64_t planes, int64_t plane_size, const float* x, float* y,
                     ThreadPool* pool);

// ---------------------------------------------------------------------------------------------
// Element-wise (x and y may be the same array)

void relu(const float* x, float* y, int64_t count, ThreadPool* pool);
void clip(const float* x, float* y, int64_t count, float min_value, float max_value,
          ThreadPool* pool);
void sigmoid(const float* x, float* y, int64_t count, ThreadPool* pool);
void hard_swish(const float* x, float* y, int64_t count, ThreadPool* pool);
void add(const float* a, const float* b, float* y, int64_t count, Activation activation,
         ThreadPool* pool);

// ---------------------------------------------------------------------------------------------
// Normalisation

// ONNX LRN across channels over x[N, C, plane_size].
void lrn(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane_size,
         int64_t size, float alpha, float beta, float bias, ThreadPool* pool);

// Inference batch norm folded to y = x * multiplier[c] + offset[c]; see fold_batch_norm.
void batch_norm(const float* x, float* y, int64_t batch, int64_t channels, int64_t plane_size,
                const float* multiplier, const float* offset, ThreadPool* pool);
// multiplier = scale / sqrt(var + epsilon), offset = bias - mean * multiplier.
void fold_batch_norm(int64_t channels, const float* scale, const float* bias, const float* mean,
                     const float* var, float epsilon, float* out_multiplier, float* out_offset);

// ---------------------------------------------------------------------------------------------
// Data movement

// Concatenates along an axis: each input is [outer, input_axis[i] * inner] viewed 2-D.
void concat(std::span<const float* const> inputs, std::span<const int64_t> input_axis,
            int64_t outer, int64_t inner, float* y, ThreadPool* pool);

// Softmax over the middle axis of x[outer, axis, inner], max-subtracted; sums in axis order.
void softmax(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner,
             ThreadPool* pool);

void copy(const float* x, float* y, int64_t count, ThreadPool* pool);

}  // namespace co_up::reference
