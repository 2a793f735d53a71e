// Sliced XNNPACK operators: one convolution or fully connected layer cut into independent slices
// (bands of output rows; ranges of output channels), each its own XNNPACK operator set up without
// a pthreadpool, run as chunks on the pool's claiming workers (CpuPool::parallel_for).
//
// Why: XNNPACK's operators otherwise run on pthreadpool, whose workers sleep between operators
// (they share their cores with the claiming pool's workers) and whose join waits for every
// worker: each such operator pays a wake-up, and a depthwise or squeeze-excite layer of 20-200 us
// gains little or nothing from its second thread. On the claiming pool the worker is the one that
// just ran the previous layer's kernel and is still spinning.
//
// Same bits as one operator over the whole layer, however it is cut: every output element is
// computed by the same micro-kernel over the same reduction (XNNPACK splits outputs, never a
// reduction). So a pool of one thread may keep the layer whole (no per-slice cost) and still
// match a pool of two bit for bit. That holds for the XNNPACK this is built against (Debian's
// 0.0~git20220216), whose micro-kernel does not depend on the slice's shape; a newer XNNPACK
// that picks kernels by M or N could break it, and tests/backends/xnnpack_sliced_ops_test.cpp
// would say so.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "op_shapes.h"
#include "xnn_common.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

// [begin, end) of a dimension.
struct SliceRange {
  int64_t begin = 0;
  int64_t end = 0;
};

// How many slices a layer of `macs` multiply-adds over `extent` splittable units (output rows,
// or output-channel blocks) is cut into: one per kMacsPerSlice of work, at most kMaxSlices and
// `extent`, at least one. Depends on the shape only.
int64_t slice_count(int64_t macs, int64_t extent);
// How many elements of a memory-bound pass (element-wise op, global pooling) make one slice.
inline constexpr int64_t kElementsPerSlice = 32 * 1024;

// `count` near-equal consecutive ranges covering [0, extent), each a multiple of `align` long
// except the last (count <= ceil(extent / align)).
std::vector<SliceRange> split_range(int64_t extent, int64_t count, int64_t align);

// For output rows [rows.begin, rows.end) of convolution `s`: the input rows they read, clipped to
// the input, and the padding above and below that the clipping leaves. Then a convolution of
// shape `s` over those input rows with that padding has exactly rows.end - rows.begin output rows.
struct ConvRowSlice {
  int64_t in_begin = 0;
  int64_t in_rows = 0;
  int64_t pad_top = 0;
  int64_t pad_bottom = 0;
};
ConvRowSlice conv_row_slice(const backends::Conv2dShape& s, SliceRange rows);

class SlicedOperator {
 public:
  // An NHWC convolution (weights in XNNPACK's OHWI order, see conv_weights_ohwi) reading `x` and
  // writing `y` with `y_stride` floats per output pixel, cut into batch-1 operators: per image,
  // then into bands of output rows. `slices` > 0 overrides slice_count (tests; spread over the
  // images); `slices` == 1 keeps the layer one operator, batch and all. Throws PluginError.
  static SlicedOperator convolution(const backends::Conv2dShape& s, const float* ohwi_weights,
                                    const float* bias, float lo, float hi, uint32_t flags,
                                    const float* x, float* y, int64_t y_stride,
                                    const std::string& where, int64_t slices = 0);
  // A fully connected layer over `rows` rows: weights [out][in] row-major, cut into ranges of
  // output channels (`slices` > 0 overrides slice_count). Throws PluginError.
  static SlicedOperator fully_connected(int64_t rows, int64_t in, int64_t out, const float* weights,
                                        const float* bias, float lo, float hi, uint32_t flags,
                                        const float* x, float* y, const std::string& where,
                                        int64_t slices = 0);

  // An operator that works on each of `extent` independent units (elements of an element-wise
  // op; channels of a global pooling) alone, cut into ranges of units, one slice per
  // `units_per_slice` (at most kMaxSlices), each range a multiple of 16 units except the last.
  // make(range, &op) creates and sets up the operator for one range and returns its status.
  // `slices` > 0 overrides the count. Throws PluginError.
  static SlicedOperator per_range(int64_t extent, int64_t units_per_slice,
                                  const std::function<xnn_status(SliceRange, xnn_operator_t*)>& make,
                                  const std::string& what, int64_t slices = 0);

  int64_t slices() const { return static_cast<int64_t>(ops_->size()); }
  // Runs every slice once, on whichever of the pool's threads claim them. Throws PluginError.
  void run(const CpuPool& pool) const;

 private:
  // Shared so that a step's std::function can hold it by copy.
  std::shared_ptr<std::vector<XnnOperator>> ops_ = std::make_shared<std::vector<XnnOperator>>();
};

}  // namespace co_up::xnnpack
