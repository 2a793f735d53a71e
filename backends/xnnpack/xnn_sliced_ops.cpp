#include "xnn_sliced_ops.h"

#include <algorithm>
#include <stdexcept>

namespace co_up::xnnpack {
namespace {

// The split rule's inputs, measured with co_up_bench_split_cost (bench/split_cost_bench.cpp) on
// a two-core AMD EPYC host, fastest of 300 runs (the runs whose second core was free):
//  - cutting a depthwise layer of 15-95 us in two on two warm threads took half its one-thread
//    time plus 1.0-1.2 us (publish, claim, one more xnn_run_operator, join); each slice beyond
//    one per thread added 0.5-3 us;
//  - one thread ran XNNPACK's depthwise 3x3 at 11-22 K multiply-adds per us and HardSwish at
//    10-13 K elements per us. The rule takes the fastest rate, so it never thinks a layer longer
//    than it can be: a layer it keeps whole is one a split could not have sped up.
constexpr double kSplitCostUs = 1.1;
constexpr double kMacsPerUs = 22000.0;
constexpr double kElementsPerUs = 13000.0;
// A dense convolution (group 1) reuses each weight over its pixels and each input over its
// output channels, so it runs far faster per multiply-add than a depthwise one: one thread ran
// MobileNetV3-L's and GoogLeNet's 1x1 layers at 83-128 K multiply-adds per us (the fastest, the
// own kernel's 672 -> 112 at 14x14), and a 1x1 over one pixel (squeeze-excite, 0.1-0.23 M
// weights) at 11 K weights per us: the weights stream through once. Its time is estimated as
// both, at the fastest rates (weights at kMacsPerUs, twice the one-pixel layers' rate). At the
// depthwise rate alone the rule took a 3 M multiply-add 1x1 for 140 us instead of 25-32 and cut
// it into six slices where two pay.
constexpr double kDenseMacsPerUs = 130000.0;
// Slices beyond one per thread (they let a thread that claims late still get a share) only where
// each slice is long enough that its cost stays under 5 % of it.
constexpr double kMinSliceUs = kSplitCostUs / 0.05;
constexpr int64_t kMaxSlices = 8;
// Output channels per slice of a fully connected layer: a multiple of XNNPACK's widest f32 GEMM
// tile, so no slice ends in a partial tile that a whole operator would not have.
constexpr int64_t kChannelAlign = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

double conv_work_us(int64_t macs) { return double(macs) / kMacsPerUs; }
double dense_conv_work_us(int64_t macs, int64_t weights) {
  return double(macs) / kDenseMacsPerUs + double(weights) / kMacsPerUs;
}
double pass_work_us(int64_t elements) { return double(elements) / kElementsPerUs; }
double split_cost_us() { return kSplitCostUs; }

int64_t slice_count(double work_us, int64_t extent, int threads) {
  const int64_t t = threads;
  // A split over t threads saves work * (t - 1) / t and costs kSplitCostUs.
  if (t < 2 || extent < 2 || work_us * double(t - 1) <= kSplitCostUs * double(t)) return 1;
  if (extent < t) return extent;
  const auto per_thread = std::max<int64_t>(1, static_cast<int64_t>(work_us / (double(t) * kMinSliceUs)));
  const int64_t most = std::max<int64_t>(t, std::min(kMaxSlices, extent) / t * t);
  return std::min(t * per_thread, most);
}

std::vector<SliceRange> split_range(int64_t extent, int64_t count, int64_t align) {
  const int64_t blocks = ceil_div(extent, align);
  count = std::clamp<int64_t>(count, 1, std::max<int64_t>(1, blocks));
  std::vector<SliceRange> ranges;
  ranges.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t begin = std::min(extent, blocks * i / count * align);
    const int64_t end = std::min(extent, blocks * (i + 1) / count * align);
    ranges.push_back({begin, end});
  }
  return ranges;
}

ConvRowSlice conv_row_slice(const backends::Conv2dShape& s, SliceRange rows) {
  // Input rows (in padded coordinates shifted by pad_top) that output rows [begin, end) read.
  const int64_t first = rows.begin * s.stride_h - s.pad_top;
  const int64_t last = (rows.end - 1) * s.stride_h - s.pad_top + s.dilation_h * (s.kernel_h - 1);
  ConvRowSlice slice;
  slice.in_begin = std::max<int64_t>(0, first);
  const int64_t in_last = std::min(s.in_height - 1, last);
  slice.in_rows = in_last - slice.in_begin + 1;
  slice.pad_top = slice.in_begin - first;
  slice.pad_bottom = last - in_last;
  return slice;
}

SlicedOperator SlicedOperator::convolution(const backends::Conv2dShape& s, const float* ohwi_weights,
                                           const float* bias, float lo, float hi, uint32_t flags,
                                           const float* x, float* y, int64_t y_stride,
                                           const std::string& where, int64_t slices,
                                           int threads, bool hardswish) {
  const int64_t out_h = s.out_height(), out_w = s.out_width();
  const int64_t macs = out_h * out_w * s.out_channels * s.kernel_h * s.kernel_w * (s.in_channels / s.group);
  // Batch > 1 is cut per image first (each image its own batch-1 operators), so a batch keeps
  // both threads; `slices` == 1 keeps the layer whole, batch and all.
  const int64_t images = slices == 1 || (slices <= 0 && threads < 2) ? 1 : s.batch;
  const bool by_channels_ok = s.group == 1 || (s.group == s.in_channels && s.group == s.out_channels);
  const int64_t weights = s.out_channels * s.kernel_h * s.kernel_w * (s.in_channels / s.group);
  const int64_t image_macs = macs / std::max<int64_t>(1, s.batch);
  const double work_us = s.group == 1 ? dense_conv_work_us(image_macs, weights) : conv_work_us(image_macs);
  if (slices <= 0 && images == 1 && out_h < threads && by_channels_ok) {
    // Fewer output rows than threads (a squeeze-excite 1x1 over one pixel): ranges of output
    // channels instead.
    const int64_t n = slice_count(work_us, ceil_div(s.out_channels, kChannelAlign), threads);
    if (n > 1) return convolution_channels(s, ohwi_weights, bias, lo, hi, flags, x, y, y_stride, where, n, hardswish);
  }
  int64_t per_image = slices > 0 ? std::max<int64_t>(1, slices / std::max<int64_t>(1, images))
                                 : slice_count(work_us, out_h, threads);
  if (slices <= 0 && per_image > threads && out_h % per_image != 0) {
    // Fewer bands that divide the rows, where a multiple of the thread count does: 112 rows in
    // four bands rather than six uneven ones or six ranges of channels (a range of channels
    // re-reads the whole input and writes its outputs strided, a fused HardSwish too).
    for (int64_t n = per_image - threads; n >= threads && out_h % per_image != 0; n -= threads) {
      if (out_h % n == 0) per_image = n;
    }
  }
  // The largest of `n` slices of `extent` cut in multiples of `align`, as a share of the whole.
  const auto largest_share = [](int64_t extent, int64_t n, int64_t align) {
    int64_t most = 0;
    for (const SliceRange& r : split_range(extent, n, align)) most = std::max(most, r.end - r.begin);
    return double(most) / double(extent);
  };
  if (slices <= 0 && images == 1 && per_image > 1 && out_h % per_image != 0 && by_channels_ok &&
      ceil_div(s.out_channels, kChannelAlign) >= per_image &&
      largest_share(s.out_channels, per_image, kChannelAlign) < largest_share(out_h, per_image, 1)) {
    // Rows that do not divide evenly (7 rows in two bands: 4 + 3) but channels that divide more
    // evenly (960 in two ranges of 480; not 48 in 16 + 32): ranges of output channels.
    return convolution_channels(s, ohwi_weights, bias, lo, hi, flags, x, y, y_stride, where, per_image,
                                hardswish);
  }
  std::vector<SliceRange> bands = split_range(out_h, per_image, 1);
  std::vector<ConvRowSlice> cuts;
  for (const SliceRange& band : bands) cuts.push_back(conv_row_slice(s, band));
  // A band that reads nothing but padding (padding taller than the kernel) cannot be an operator
  // of its own; then the layer stays whole.
  if (std::any_of(cuts.begin(), cuts.end(), [](const ConvRowSlice& c) { return c.in_rows < 1; })) {
    bands = {{0, out_h}};
    cuts = {{0, s.in_height, s.pad_top, s.pad_bottom}};
  }
  const int64_t gin = s.in_channels / s.group, gout = s.out_channels / s.group;
  const int64_t in_image = s.in_height * s.in_width * s.in_channels, out_image = out_h * out_w * y_stride;
  SlicedOperator sliced;
  for (size_t k = 0; k < static_cast<size_t>(images) * bands.size(); ++k) {
    const auto image = static_cast<int64_t>(k / bands.size());
    const size_t i = k % bands.size();
    const ConvRowSlice& c = cuts[i];
    xnn_operator_t op = nullptr;
    check_xnn(xnn_create_convolution2d_nhwc_f32(
                  uint32_t(c.pad_top), uint32_t(s.pad_right), uint32_t(c.pad_bottom),
                  uint32_t(s.pad_left), uint32_t(s.kernel_h), uint32_t(s.kernel_w),
                  uint32_t(s.stride_h), uint32_t(s.stride_w), uint32_t(s.dilation_h),
                  uint32_t(s.dilation_w), uint32_t(s.group), size_t(gin), size_t(gout),
                  size_t(s.in_channels), size_t(y_stride), ohwi_weights, bias, lo, hi, flags, &op),
              "convolution create for " + where);
    sliced.ops_->emplace_back(op);
    // Batch 1 whenever the layer is cut (per image or per band); a whole layer keeps its batch.
    const int64_t batch = images == 1 && bands.size() == 1 ? s.batch : 1;
    check_xnn(xnn_setup_convolution2d_nhwc_f32(op, size_t(batch), size_t(c.in_rows), size_t(s.in_width),
                                               x + image * in_image + c.in_begin * s.in_width * s.in_channels,
                                               y + image * out_image + bands[i].begin * out_w * y_stride, nullptr),
              "convolution setup for " + where);
    if (hardswish) {
      sliced.add_hardswish(batch * (bands[i].end - bands[i].begin) * out_w, s.out_channels, y_stride,
                           y + image * out_image + bands[i].begin * out_w * y_stride, where);
    }
  }
  return sliced;
}

SlicedOperator SlicedOperator::convolution_channels(const backends::Conv2dShape& s,
                                                    const float* ohwi_weights, const float* bias,
                                                    float lo, float hi, uint32_t flags,
                                                    const float* x, float* y, int64_t y_stride,
                                                    const std::string& where, int64_t slices,
                                                    bool hardswish) {
  const bool depthwise = s.group > 1 && s.group == s.in_channels && s.group == s.out_channels;
  if (s.group != 1 && !depthwise) {
    throw std::invalid_argument("SlicedOperator::convolution_channels: grouped convolution for " + where);
  }
  // Group 1: a range of output channels reads every input channel. Depthwise: a range of groups
  // (one channel each) reads its own input channels only.
  const int64_t weights_per_channel = s.kernel_h * s.kernel_w * (depthwise ? 1 : s.in_channels);
  SlicedOperator sliced;
  for (const SliceRange& r : split_range(s.out_channels, slices, kChannelAlign)) {
    const int64_t n = r.end - r.begin;
    xnn_operator_t op = nullptr;
    check_xnn(xnn_create_convolution2d_nhwc_f32(
                  uint32_t(s.pad_top), uint32_t(s.pad_right), uint32_t(s.pad_bottom),
                  uint32_t(s.pad_left), uint32_t(s.kernel_h), uint32_t(s.kernel_w),
                  uint32_t(s.stride_h), uint32_t(s.stride_w), uint32_t(s.dilation_h),
                  uint32_t(s.dilation_w), uint32_t(depthwise ? n : 1), size_t(depthwise ? 1 : s.in_channels),
                  size_t(depthwise ? 1 : n), size_t(s.in_channels), size_t(y_stride),
                  ohwi_weights + r.begin * weights_per_channel, bias ? bias + r.begin : nullptr, lo, hi,
                  flags, &op),
              "convolution create for " + where);
    sliced.ops_->emplace_back(op);
    check_xnn(xnn_setup_convolution2d_nhwc_f32(op, size_t(s.batch), size_t(s.in_height),
                                               size_t(s.in_width), depthwise ? x + r.begin : x,
                                               y + r.begin, nullptr),
              "convolution setup for " + where);
    if (hardswish) sliced.add_hardswish(s.batch * s.out_height() * s.out_width(), n, y_stride, y + r.begin, where);
  }
  return sliced;
}

SlicedOperator SlicedOperator::fully_connected(int64_t rows, int64_t in, int64_t out,
                                               const float* weights, const float* bias, float lo,
                                               float hi, uint32_t flags, const float* x, float* y,
                                               const std::string& where, int64_t slices,
                                               int threads) {
  const int64_t blocks = ceil_div(out, kChannelAlign);
  if (slices <= 0) slices = slice_count(conv_work_us(rows * in * out), blocks, threads);
  SlicedOperator sliced;
  for (const SliceRange& r : split_range(out, slices, kChannelAlign)) {
    xnn_operator_t op = nullptr;
    check_xnn(xnn_create_fully_connected_nc_f32(size_t(in), size_t(r.end - r.begin), size_t(in),
                                                size_t(out), weights + r.begin * in,
                                                bias ? bias + r.begin : nullptr, lo, hi, flags, &op),
              "fully connected create for " + where);
    sliced.ops_->emplace_back(op);
    check_xnn(xnn_setup_fully_connected_nc_f32(op, size_t(rows), x, y + r.begin, nullptr),
              "fully connected setup for " + where);
  }
  return sliced;
}

SlicedOperator SlicedOperator::per_range(
    int64_t extent, int64_t elements_per_unit,
    const std::function<xnn_status(SliceRange, xnn_operator_t*)>& make, const std::string& what,
    int64_t slices, int threads) {
  constexpr int64_t kAlign = 16;  // a cache line of floats: slices never share one
  if (slices <= 0) {
    slices = slice_count(pass_work_us(extent * std::max<int64_t>(1, elements_per_unit)),
                         ceil_div(extent, kAlign), threads);
  }
  SlicedOperator sliced;
  for (const SliceRange& r : split_range(extent, slices, kAlign)) {
    xnn_operator_t op = nullptr;
    const xnn_status status = make(r, &op);
    if (op != nullptr) sliced.ops_->emplace_back(op);
    check_xnn(status, what);
  }
  return sliced;
}

SlicedOperator SlicedOperator::row_bands(
    const backends::Conv2dShape& window, double work_us,
    const std::function<xnn_status(SliceRange, const ConvRowSlice&, xnn_operator_t*)>& make,
    const std::string& what, int64_t slices, int threads) {
  const int64_t out_h = window.out_height();
  if (slices <= 0) slices = slice_count(work_us, out_h, threads);
  std::vector<SliceRange> bands = split_range(out_h, slices, 1);
  std::vector<ConvRowSlice> cuts;
  for (const SliceRange& band : bands) cuts.push_back(conv_row_slice(window, band));
  if (std::any_of(cuts.begin(), cuts.end(), [](const ConvRowSlice& c) { return c.in_rows < 1; })) {
    bands = {{0, out_h}};
    cuts = {{0, window.in_height, window.pad_top, window.pad_bottom}};
  }
  SlicedOperator sliced;
  for (size_t i = 0; i < bands.size(); ++i) {
    xnn_operator_t op = nullptr;
    const xnn_status status = make(bands[i], cuts[i], &op);
    if (op != nullptr) sliced.ops_->emplace_back(op);
    check_xnn(status, what);
  }
  return sliced;
}

void SlicedOperator::add_hardswish(int64_t pixels, int64_t channels, int64_t stride, float* y,
                                   const std::string& where) {
  epilogues_->resize(ops_->size() - 1);  // slices before this one have none
  xnn_operator_t op = nullptr;
  check_xnn(xnn_create_hardswish_nc_f32(size_t(channels), size_t(stride), size_t(stride), 0, &op),
            "hardswish create for " + where);
  epilogues_->emplace_back(op);
  check_xnn(xnn_setup_hardswish_nc_f32(op, size_t(pixels), y, y, nullptr), "hardswish setup for " + where);
}

void SlicedOperator::run(const CpuPool& pool) const {
  const std::vector<XnnOperator>& ops = *ops_;
  const std::vector<XnnOperator>& epilogues = *epilogues_;
  auto run_slice = [&](size_t i) {
    check_xnn(xnn_run_operator(ops[i].get(), nullptr), "run");
    if (i < epilogues.size() && epilogues[i]) check_xnn(xnn_run_operator(epilogues[i].get(), nullptr), "run");
  };
  if (ops.size() == 1) {
    run_slice(0);
    return;
  }
  pool.parallel_for(static_cast<int64_t>(ops.size()), 1, 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) run_slice(static_cast<size_t>(i));
  });
}

}  // namespace co_up::xnnpack
