#include "ref_resample_kernels.h"

#include <algorithm>
#include <cmath>

namespace co_up::reference {
namespace {

// Same threshold as ref_kernels.cpp: below it the calling thread runs alone.
constexpr int64_t kMinParallelWork = 16384;

ThreadPool* pool_for(ThreadPool* pool, int64_t work) { return work >= kMinParallelWork ? pool : nullptr; }

int64_t nearest_index(backends::NearestRounding rounding, float v, int64_t in_len) {
  using backends::NearestRounding;
  float r = 0.0f;
  switch (rounding) {
    case NearestRounding::kFloor: r = std::floor(v); break;
    case NearestRounding::kCeil: r = std::ceil(v); break;
    case NearestRounding::kRoundPreferFloor: r = std::ceil(v - 0.5f); break;
    case NearestRounding::kRoundPreferCeil: r = std::floor(v + 0.5f); break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in_len - 1);
}

void plan_axis(const backends::ResizeSpec& spec, int64_t in_len, int64_t out_len, float scale,
               std::vector<int64_t>& index0, std::vector<int64_t>& index1, std::vector<float>& weight) {
  index0.resize(static_cast<size_t>(out_len));
  index1.resize(static_cast<size_t>(out_len));
  weight.resize(static_cast<size_t>(out_len));
  for (int64_t o = 0; o < out_len; ++o) {
    const float v = resize_source_coordinate(spec.transform, o, scale, in_len, out_len);
    const auto i = static_cast<size_t>(o);
    if (spec.mode == backends::ResizeMode::kNearest) {
      index0[i] = index1[i] = nearest_index(spec.rounding, v, in_len);
      weight[i] = 0.0f;
      continue;
    }
    const float c = std::clamp(v, 0.0f, static_cast<float>(in_len - 1));
    const auto lo = static_cast<int64_t>(std::floor(c));
    index0[i] = lo;
    index1[i] = std::min(lo + 1, in_len - 1);
    weight[i] = c - static_cast<float>(lo);
  }
}

}  // namespace

float resize_source_coordinate(backends::ResizeTransform transform, int64_t out_index, float scale,
                               int64_t in_len, int64_t out_len) {
  using backends::ResizeTransform;
  const auto x = static_cast<float>(out_index);
  switch (transform) {
    case ResizeTransform::kAsymmetric:
      return x / scale;
    case ResizeTransform::kHalfPixel:
      return (x + 0.5f) / scale - 0.5f;
    case ResizeTransform::kPytorchHalfPixel:
      return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case ResizeTransform::kAlignCorners:
      return out_len == 1 ? 0.0f
                          : x * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
  }
  return 0.0f;
}

ResizePlan plan_resize(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                       const std::vector<float>& scales, const backends::ResizeSpec& spec) {
  ResizePlan p;
  const size_t rank = in.size();
  for (size_t d = 0; d + 2 < rank; ++d) p.outer *= in[d];
  p.in_h = in[rank - 2];
  p.in_w = in[rank - 1];
  p.out_h = out[rank - 2];
  p.out_w = out[rank - 1];
  p.linear = spec.mode == backends::ResizeMode::kLinear;
  plan_axis(spec, p.in_h, p.out_h, scales[rank - 2], p.row0, p.row1, p.row_weight);
  plan_axis(spec, p.in_w, p.out_w, scales[rank - 1], p.col0, p.col1, p.col_weight);
  return p;
}

void resize_rows(const ResizePlan& p, const float* x, float* y, int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    const int64_t o = row / p.out_h;
    const auto r = static_cast<size_t>(row % p.out_h);
    const float* plane = x + o * p.in_h * p.in_w;
    float* dst = y + row * p.out_w;
    const float* src0 = plane + p.row0[r] * p.in_w;
    if (!p.linear) {
      for (int64_t c = 0; c < p.out_w; ++c) dst[c] = src0[p.col0[static_cast<size_t>(c)]];
      continue;
    }
    const float* src1 = plane + p.row1[r] * p.in_w;
    const float wy = p.row_weight[r];
    for (int64_t c = 0; c < p.out_w; ++c) {
      const auto k = static_cast<size_t>(c);
      const float wx = p.col_weight[k];
      const float top = src0[p.col0[k]] + (src0[p.col1[k]] - src0[p.col0[k]]) * wx;
      const float bottom = src1[p.col0[k]] + (src1[p.col1[k]] - src1[p.col0[k]]) * wx;
      dst[c] = top + (bottom - top) * wy;
    }
  }
}

void resize(const ResizePlan& p, const float* x, float* y, ThreadPool* pool) {
  const int64_t rows = p.outer * p.out_h;
  parallel_for(pool_for(pool, rows * p.out_w), rows,
               [&](int64_t begin, int64_t end) { resize_rows(p, x, y, begin, end); });
}

PadPlan plan_pad(const std::vector<int64_t>& in, const std::vector<int64_t>& pads,
                 backends::PadMode mode, float value) {
  PadPlan p;
  p.in_dims = in;
  p.value = value;
  const size_t rank = in.size();
  p.out_dims.resize(rank);
  p.source.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t begin = pads[d], n = in[d];
    p.out_dims[d] = n + begin + pads[d + rank];
    std::vector<int64_t>& table = p.source[d];
    table.resize(static_cast<size_t>(p.out_dims[d]));
    for (int64_t o = 0; o < p.out_dims[d]; ++o) {
      int64_t i = o - begin;
      if (i < 0 || i >= n) {
        switch (mode) {
          case backends::PadMode::kConstant: i = -1; break;
          case backends::PadMode::kEdge: i = std::clamp<int64_t>(i, 0, n - 1); break;
          case backends::PadMode::kReflect: i = i < 0 ? -i : 2 * (n - 1) - i; break;
        }
      }
      table[static_cast<size_t>(o)] = i;
    }
  }
  return p;
}

void pad(const PadPlan& p, const float* x, float* y, ThreadPool* pool) {
  const size_t rank = p.in_dims.size();
  const int64_t width = p.out_dims[rank - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= p.out_dims[d];
  const std::vector<int64_t>& cols = p.source[rank - 1];
  parallel_for(pool_for(pool, rows * width), rows, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      // The input row this output row reads, or none when an outer axis is in the constant fill.
      int64_t rest = row, offset = 0, stride = p.in_dims[rank - 1];
      bool fill = false;
      for (size_t d = rank - 1; d-- > 0;) {
        const int64_t i = p.source[d][static_cast<size_t>(rest % p.out_dims[d])];
        rest /= p.out_dims[d];
        fill = fill || i < 0;
        offset += i * stride;
        stride *= p.in_dims[d];
      }
      float* dst = y + row * width;
      if (fill) {
        std::fill(dst, dst + width, p.value);
        continue;
      }
      const float* src = x + offset;
      for (int64_t c = 0; c < width; ++c) {
        const int64_t i = cols[static_cast<size_t>(c)];
        dst[c] = i < 0 ? p.value : src[i];
      }
    }
  });
}

void leaky_relu(const float* x, float* y, int64_t count, float alpha, ThreadPool* pool) {
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (count + kBlock - 1) / kBlock;
  parallel_for(pool_for(pool, count), blocks, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * kBlock; i < std::min(count, end * kBlock); ++i) {
      y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i];
    }
  });
}

}  // namespace co_up::reference
