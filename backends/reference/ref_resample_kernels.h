// Kernels of the cpu-reference backend for the resampling ops of detectors and segmentation nets:
// Resize (nearest, bilinear), Pad (constant, reflect, edge) and LeakyRelu.
//
// As in ref_tensor_kernels.h, a plan holding every index table is made once at compile time; runs
// only read the tables and write the output, split over independent output rows.
#pragma once

#include <cstdint>
#include <vector>

#include "node_decode.h"
#include "ref_thread_pool.h"

namespace co_up::reference {

// Source coordinate of output index `out_index` along an axis of `in_len` -> `out_len` with the
// ONNX coordinate transform; `scale` is the axis' scale (out / in unless given otherwise).
float resize_source_coordinate(backends::ResizeTransform transform, int64_t out_index, float scale,
                               int64_t in_len, int64_t out_len);

// Resize of the last two axes of x[outer, in_h, in_w] into y[outer, out_h, out_w]. Nearest uses
// index0 only; linear blends index0 and index1 with weight1 (edge values outside the input).
struct ResizePlan {
  int64_t outer = 1, in_h = 1, in_w = 1, out_h = 1, out_w = 1;
  bool linear = false;
  std::vector<int64_t> row0, row1, col0, col1;
  std::vector<float> row_weight, col_weight;
};
ResizePlan plan_resize(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                       const std::vector<float>& scales, const backends::ResizeSpec& spec);
void resize(const ResizePlan& plan, const float* x, float* y, ThreadPool* pool);
// Output rows [begin, end) of the plan's outer * out_h rows: what resize() runs per range, for
// backends that split the rows over their own pools (same bits however the rows are cut).
void resize_rows(const ResizePlan& plan, const float* x, float* y, int64_t begin, int64_t end);

// Pad of a rank-N tensor: per axis a table from output index to input index, -1 where the constant
// fills. The last axis is the inner loop.
struct PadPlan {
  std::vector<int64_t> in_dims, out_dims;
  std::vector<std::vector<int64_t>> source;  // per axis, per output index
  float value = 0.0f;
};
PadPlan plan_pad(const std::vector<int64_t>& in, const std::vector<int64_t>& pads,
                 backends::PadMode mode, float value);
void pad(const PadPlan& plan, const float* x, float* y, ThreadPool* pool);

// y = x >= 0 ? x : alpha * x; x and y may be the same array.
void leaky_relu(const float* x, float* y, int64_t count, float alpha, ThreadPool* pool);

}  // namespace co_up::reference
