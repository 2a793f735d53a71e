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

// The split rule. A layer whose whole takes `work_us` on one thread, over `extent` splittable
// units (output rows, 16-channel blocks, 16-element blocks), is cut for `threads` threads into:
//  - 1 slice (kept whole) with one thread, one unit, or when a split's measured cost
//    (split_cost_us) is at least the time the other threads would save, work * (t - 1) / t;
//  - else one slice per thread, or a multiple of the thread count where each slice still takes
//    at least 20 split costs (so a late thread can take a share at under 5 % cost), at most
//    eight and at most `extent` (rounded down to a multiple of the thread count; `extent` itself
//    when it is smaller than the thread count).
// The costs and rates are measured by co_up_bench_split_cost (bench/split_cost_bench.cpp).
// Depends on the shape and the thread count only; never changes the bits (every slice computes
// its outputs as the whole layer would).
int64_t slice_count(double work_us, int64_t extent, int threads);
// A layer's one-thread time as the split rule estimates it: at the fastest measured rate.
double conv_work_us(int64_t macs);  // depthwise (and grouped) convolutions
// A dense (group 1) convolution's: `macs` multiply-adds over `weights` weights.
double dense_conv_work_us(int64_t macs, int64_t weights);
double pass_work_us(int64_t elements);
double split_cost_us();

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
  // then into bands of output rows; with fewer output rows than threads, or rows that do not
  // divide into the bands evenly (batch 1, group 1 or depthwise), into ranges of output channels. `slices` > 0 overrides slice_count (tests; spread over the
  // images); `slices` == 1 keeps the layer one operator, batch and all; else the split rule for
  // `threads` threads decides. Throws PluginError.
  // `hardswish`: each slice then applies XNNPACK's HardSwish to the outputs it wrote, in the
  // same chunk (MobileNetV3's Conv + HardSwish: no second pass over memory, no second join).
  static SlicedOperator convolution(const backends::Conv2dShape& s, const float* ohwi_weights,
                                    const float* bias, float lo, float hi, uint32_t flags,
                                    const float* x, float* y, int64_t y_stride,
                                    const std::string& where, int64_t slices = 0, int threads = 2,
                                    bool hardswish = false);
  // A convolution with group 1, or a depthwise one (one channel per group, multiplier 1), cut
  // into `slices` ranges of output channels (multiples of 16 channels except the last), each one
  // operator over all pixels. Throws PluginError (std::invalid_argument for other groupings).
  static SlicedOperator convolution_channels(const backends::Conv2dShape& s, const float* ohwi_weights,
                                             const float* bias, float lo, float hi, uint32_t flags,
                                             const float* x, float* y, int64_t y_stride,
                                             const std::string& where, int64_t slices,
                                             bool hardswish = false);
  // A fully connected layer over `rows` rows: weights [out][in] row-major, cut into ranges of
  // output channels (`slices` > 0 overrides slice_count for `threads`). Throws PluginError.
  static SlicedOperator fully_connected(int64_t rows, int64_t in, int64_t out, const float* weights,
                                        const float* bias, float lo, float hi, uint32_t flags,
                                        const float* x, float* y, const std::string& where,
                                        int64_t slices = 0, int threads = 2);

  // An operator that works on each of `extent` independent units (elements of an element-wise
  // op; channels of a global pooling) alone, `elements_per_unit` elements each, cut into ranges of
  // units as the split rule says for `threads` threads, each range a multiple of 16 units except
  // the last. make(range, &op) creates and sets up the operator for one range and returns its
  // status. `slices` > 0 overrides the count. Throws PluginError.
  static SlicedOperator per_range(int64_t extent, int64_t elements_per_unit,
                                  const std::function<xnn_status(SliceRange, xnn_operator_t*)>& make,
                                  const std::string& what, int64_t slices = 0, int threads = 2);

  // An operator over the output rows of a sliding window (pooling) of shape `window` (kernel,
  // stride, padding and input rows as a convolution's; batch 1), cut into bands of output rows as
  // the split rule says for a pass of `work_us` on `threads` threads. make(band, cut, &op) creates
  // and sets up the operator of output rows `band`, reading input rows cut.in_begin..+in_rows
  // with cut.pad_top/pad_bottom rows of padding. A band that would read nothing but padding
  // keeps the layer whole. `slices` > 0 overrides the count. Throws PluginError.
  static SlicedOperator row_bands(
      const backends::Conv2dShape& window, double work_us,
      const std::function<xnn_status(SliceRange, const ConvRowSlice&, xnn_operator_t*)>& make,
      const std::string& what, int64_t slices = 0, int threads = 2);

  int64_t slices() const { return static_cast<int64_t>(ops_->size()); }
  // Runs every slice once, on whichever of the pool's threads claim them. Throws PluginError.
  void run(const CpuPool& pool) const;

 private:
  // Shared so that a step's std::function can hold it by copy.
  std::shared_ptr<std::vector<XnnOperator>> ops_ = std::make_shared<std::vector<XnnOperator>>();
  // Per slice, an element-wise operator run in place on its outputs right after it, or none.
  std::shared_ptr<std::vector<XnnOperator>> epilogues_ = std::make_shared<std::vector<XnnOperator>>();

  // Adds slice i's epilogue: HardSwish over `pixels` rows of `channels` floats, `stride` apart,
  // from y (in place).
  void add_hardswish(int64_t pixels, int64_t channels, int64_t stride, float* y, const std::string& where);
};

}  // namespace co_up::xnnpack
