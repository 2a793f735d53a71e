// co_up opencl backend: every kernel that is not a GEMM (convolution and fully connected layers
// run through CLBlast after `im2col`). OpenCL C 1.2, f32, NCHW. Every kernel checks its index
// against `count` (the number of work-items it needs), so the host may round the global size up to
// a multiple of the work-group size it picked for the device.
//
// Work split: kernels that need a channel or a window position give each work-item one output
// row (or a ROW_CHUNK-element piece of one) and loop along it, so the index arithmetic (integer
// divisions) and the bounds checks are paid once per row, not per element. With one work-item per
// element they were 10-20x slower on PoCL (its work-group vectoriser scalarises the divisions and
// the masked loads); on GPUs a work-item still gets tens of elements, which keeps them busy.
//
// Tunables (CLBlast-style: a default here, the host may pass -DNAME=value at build time).
#ifndef WPT
#define WPT 1  // elements per work-item in element-wise kernels (grid-stride loop)
#endif
#ifndef ROW_CHUNK
#define ROW_CHUNK 64  // elements per work-item in per-channel element-wise kernels
#endif

// Test-only: the host defines this to check that build failures report the build log.
#ifdef CO_UP_TEST_BROKEN_KERNEL
deliberately_broken_for_a_test x = 1;
#endif

#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_RELU6 2

// Same comparisons as the reference backend (NaN handling included).
inline float activate(float v, int act) {
  if (act == ACT_RELU) return v > 0.0f ? v : 0.0f;
  if (act == ACT_RELU6) {
    const float r = v > 0.0f ? v : 0.0f;
    return r < 6.0f ? r : 6.0f;
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Convolution support

// One image, all channels: col[c * kH * kW + ki * kW + kj][oh * OW + ow], zero outside the input.
// Channels are outermost, so the rows of group g are the contiguous block g * (C/group) * kH * kW.
// One work-item per (row, oh): count = C * kH * kW * OH.
__kernel void im2col(__global const float* restrict x, const int x_offset, const int channels,
                     const int height, const int width, const int kernel_h, const int kernel_w,
                     const int stride_h, const int stride_w, const int pad_top,
                     const int pad_left, const int dilation_h, const int dilation_w,
                     const int out_h, const int out_w, __global float* restrict col,
                     const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int oh = i % out_h;
  const int row = i / out_h;
  const int kj = row % kernel_w;
  const int ki = (row / kernel_w) % kernel_h;
  const int c = row / (kernel_w * kernel_h);
  const int h = oh * stride_h - pad_top + ki * dilation_h;
  __global float* dst = col + i * out_w;
  if (h < 0 || h >= height) {
    for (int ow = 0; ow < out_w; ++ow) dst[ow] = 0.0f;
    return;
  }
  // Input column ow * stride_w + off; in the image for ow in [lo, hi).
  const int off = kj * dilation_w - pad_left;
  const int lo = min(out_w, off < 0 ? (-off + stride_w - 1) / stride_w : 0);
  const int hi = max(lo, min(out_w, width - off <= 0 ? 0 : (width - 1 - off) / stride_w + 1));
  __global const float* src = x + x_offset + (c * height + h) * width;
  for (int ow = 0; ow < lo; ++ow) dst[ow] = 0.0f;
  for (int ow = lo; ow < hi; ++ow) dst[ow] = src[ow * stride_w + off];
  for (int ow = hi; ow < out_w; ++ow) dst[ow] = 0.0f;
}

// y[r][p] = act(y[r][p] + bias[r % channels]) over rows r of `plane` elements; one work-item per
// ROW_CHUNK elements of a row: count = rows * chunks, chunks = ceil(plane / ROW_CHUNK).
__kernel void bias_activation(__global float* restrict y, __global const float* restrict bias,
                              const int has_bias, const int channels, const int plane,
                              const int act, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int chunks = (plane + ROW_CHUNK - 1) / ROW_CHUNK;
  const int r = i / chunks;
  const int begin = (i - r * chunks) * ROW_CHUNK;
  const int end = min(begin + ROW_CHUNK, plane);
  const float b = has_bias ? bias[r % channels] : 0.0f;
  __global float* row = y + r * plane;
  for (int p = begin; p < end; ++p) row[p] = activate(row[p] + b, act);
}

// Depthwise (group == C, M = C * multiplier), input channel m / multiplier. One work-item per
// output row (n, m, oh): count = N * M * OH. The row is accumulated in place, one kernel tap at a
// time over the output columns whose input column is inside the image (no per-element checks).
__kernel void depthwise_conv2d(__global const float* restrict x, __global const float* restrict w,
                               __global const float* restrict bias, const int has_bias,
                               const int channels, const int height, const int width,
                               const int out_channels, const int kernel_h, const int kernel_w,
                               const int stride_h, const int stride_w, const int pad_top,
                               const int pad_left, const int dilation_h, const int dilation_w,
                               const int out_h, const int out_w, const int act,
                               __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int oh = i % out_h;
  const int m = (i / out_h) % out_channels;
  const int n = i / (out_h * out_channels);
  const int c = m / (out_channels / channels);
  __global const float* src = x + (n * channels + c) * height * width;
  __global const float* ker = w + m * kernel_h * kernel_w;
  __global float* dst = y + i * out_w;
  const float b = has_bias ? bias[m] : 0.0f;
  for (int ow = 0; ow < out_w; ++ow) dst[ow] = 0.0f;
  for (int ki = 0; ki < kernel_h; ++ki) {
    const int h = oh * stride_h - pad_top + ki * dilation_h;
    if (h < 0 || h >= height) continue;
    __global const float* src_row = src + h * width;
    for (int kj = 0; kj < kernel_w; ++kj) {
      const int off = kj * dilation_w - pad_left;
      const int lo = min(out_w, off < 0 ? (-off + stride_w - 1) / stride_w : 0);
      const int hi = min(out_w, width - off <= 0 ? 0 : (width - 1 - off) / stride_w + 1);
      const float k = ker[ki * kernel_w + kj];
      for (int ow = lo; ow < hi; ++ow) dst[ow] = fma(src_row[ow * stride_w + off], k, dst[ow]);
    }
  }
  for (int ow = 0; ow < out_w; ++ow) dst[ow] = activate(dst[ow] + b, act);
}

// ---------------------------------------------------------------------------------------------
// Pooling: one work-item per output row (plane, oh): count = planes * OH. Padding never wins a max.

__kernel void max_pool2d(__global const float* restrict x, const int height, const int width,
                         const int kernel_h, const int kernel_w, const int stride_h,
                         const int stride_w, const int pad_top, const int pad_left,
                         const int out_h, const int out_w, __global float* restrict y,
                         const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int oh = i % out_h;
  const int plane = i / out_h;
  __global const float* src = x + plane * height * width;
  __global float* dst = y + i * out_w;
  const int h0 = oh * stride_h - pad_top;
  const int hb = max(h0, 0), he = min(h0 + kernel_h, height);
  for (int ow = 0; ow < out_w; ++ow) {
    const int w0 = ow * stride_w - pad_left;
    const int wb = max(w0, 0), we = min(w0 + kernel_w, width);
    float best = -INFINITY;
    for (int h = hb; h < he; ++h) {
      for (int w = wb; w < we; ++w) {
        const float v = src[h * width + w];
        best = best > v ? best : v;
      }
    }
    dst[ow] = best;
  }
}

// Divisor: in-image elements, or with count_include_pad the window clipped to the padded image.
__kernel void average_pool2d(__global const float* restrict x, const int height, const int width,
                             const int kernel_h, const int kernel_w, const int stride_h,
                             const int stride_w, const int pad_top, const int pad_left,
                             const int pad_bottom, const int pad_right,
                             const int count_include_pad, const int out_h, const int out_w,
                             __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int oh = i % out_h;
  const int plane = i / out_h;
  __global const float* src = x + plane * height * width;
  __global float* dst = y + i * out_w;
  const int h0 = oh * stride_h - pad_top;
  const int hb = max(h0, 0), he = min(h0 + kernel_h, height);
  for (int ow = 0; ow < out_w; ++ow) {
    const int w0 = ow * stride_w - pad_left;
    const int wb = max(w0, 0), we = min(w0 + kernel_w, width);
    float sum = 0.0f;
    for (int h = hb; h < he; ++h) {
      for (int w = wb; w < we; ++w) sum += src[h * width + w];
    }
    int n = (he - hb) * (we - wb);
    if (count_include_pad) {
      n = (min(h0 + kernel_h, height + pad_bottom) - h0) *
          (min(w0 + kernel_w, width + pad_right) - w0);
    }
    dst[ow] = n > 0 ? sum / (float)n : 0.0f;
  }
}

// One work-item per plane (planes are small at the end of a CNN).
__kernel void global_average_pool(__global const float* restrict x, const int plane_size,
                                  __global float* restrict y, const int count) {
  const int p = get_global_id(0);
  if (p >= count) return;
  __global const float* src = x + p * plane_size;
  float sum = 0.0f, carry = 0.0f;  // compensated: close to the reference's double sum
  for (int i = 0; i < plane_size; ++i) {
    const float t = src[i] - carry;
    const float s = sum + t;
    carry = (s - sum) - t;
    sum = s;
  }
  y[p] = sum / (float)plane_size;
}

__kernel void global_max_pool(__global const float* restrict x, const int plane_size,
                              __global float* restrict y, const int count) {
  const int p = get_global_id(0);
  if (p >= count) return;
  __global const float* src = x + p * plane_size;
  float best = -INFINITY;
  for (int i = 0; i < plane_size; ++i) best = best > src[i] ? best : src[i];
  y[p] = best;
}

// ---------------------------------------------------------------------------------------------
// Element-wise (x and y may be the same buffer)

#define ELEMENTWISE_LOOP(i) \
  for (int i = get_global_id(0); i < count; i += get_global_size(0))

__kernel void relu(__global const float* x, __global float* y, const int count) {
  ELEMENTWISE_LOOP(i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
}

__kernel void clip(__global const float* x, __global float* y, const float lo, const float hi,
                   const int count) {
  ELEMENTWISE_LOOP(i) {
    const float v = x[i] < lo ? lo : x[i];
    y[i] = v > hi ? hi : v;
  }
}

__kernel void sigmoid(__global const float* x, __global float* y, const int count) {
  ELEMENTWISE_LOOP(i) { y[i] = 1.0f / (1.0f + exp(-x[i])); }
}

__kernel void hard_swish(__global const float* x, __global float* y, const int count) {
  ELEMENTWISE_LOOP(i) {
    const float v = x[i];
    const float gate = fmin(fmax(v + 3.0f, 0.0f), 6.0f);
    y[i] = v * gate / 6.0f;
  }
}

__kernel void add(__global const float* a, __global const float* b, __global float* y,
                  const int act, const int count) {
  ELEMENTWISE_LOOP(i) { y[i] = activate(a[i] + b[i], act); }
}

// ---------------------------------------------------------------------------------------------
// Normalisation

// v^-beta for v > 0. pow() cost ~200 ns per element on PoCL (SLEEF, scalar) and made LRN the
// slowest layer of GoogLeNet; beta = 0.75 (AlexNet, GoogLeNet, Caffe's default) is
// rsqrt(v) * sqrt(rsqrt(v)), two hardware operations.
inline float inverse_power(float v, float beta) {
  if (beta == 0.75f) {
    const float r = rsqrt(v);
    return r * sqrt(r);
  }
  return exp(-beta * log(v));
}

// ONNX LRN across channels: window floor((size-1)/2) below, ceil((size-1)/2) above. One
// work-item per ROW_CHUNK elements of a (n, c) plane: count = N * C * chunks.
__kernel void lrn(__global const float* restrict x, const int channels, const int plane_size,
                  const int size, const float alpha, const float beta, const float bias,
                  __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int chunks = (plane_size + ROW_CHUNK - 1) / ROW_CHUNK;
  const int row = i / chunks;
  const int begin = (i - row * chunks) * ROW_CHUNK;
  const int end = min(begin + ROW_CHUNK, plane_size);
  const int c = row % channels;
  __global const float* image = x + (row - c) * plane_size;  // channel 0 of this n
  const int c_begin = max(0, c - (size - 1) / 2);
  const int c_end = min(channels - 1, c + size / 2);
  const float scale = alpha / (float)size;
  for (int p = begin; p < end; ++p) {
    float sum = 0.0f;
    for (int cc = c_begin; cc <= c_end; ++cc) {
      const float v = image[cc * plane_size + p];
      sum += v * v;
    }
    y[row * plane_size + p] = x[row * plane_size + p] * inverse_power(bias + scale * sum, beta);
  }
}

// Inference batch norm folded on the host: y = x * multiplier[c] + offset[c]. One work-item per
// ROW_CHUNK elements of a (n, c) plane: count = N * C * chunks.
__kernel void batch_norm(__global const float* x, __global const float* restrict multiplier,
                         __global const float* restrict offset, const int channels,
                         const int plane_size, __global float* y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int chunks = (plane_size + ROW_CHUNK - 1) / ROW_CHUNK;
  const int row = i / chunks;
  const int begin = (i - row * chunks) * ROW_CHUNK;
  const int end = min(begin + ROW_CHUNK, plane_size);
  const float mul = multiplier[row % channels];
  const float add = offset[row % channels];
  for (int p = row * plane_size + begin; p < row * plane_size + end; ++p) y[p] = x[p] * mul + add;
}

// ---------------------------------------------------------------------------------------------
// Data movement

// One input of a concat: x[outer][block] -> y[outer][total_block] at column `column`. One
// work-item per ROW_CHUNK elements of a block: count = outer * chunks.
__kernel void concat_slice(__global const float* restrict x, const int block,
                           const int total_block, const int column, __global float* restrict y,
                           const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int chunks = (block + ROW_CHUNK - 1) / ROW_CHUNK;
  const int o = i / chunks;
  const int begin = (i - o * chunks) * ROW_CHUNK;
  const int end = min(begin + ROW_CHUNK, block);
  __global const float* src = x + o * block;
  __global float* dst = y + o * total_block + column;
  for (int p = begin; p < end; ++p) dst[p] = src[p];
}

// One work-item per line of x[outer, axis, inner]; max-subtracted, sums in axis order.
__kernel void softmax(__global const float* restrict x, const int axis, const int inner,
                      __global float* restrict y, const int count) {
  const int line = get_global_id(0);
  if (line >= count) return;
  const int base = line / inner * axis * inner + line % inner;
  float m = -INFINITY;
  for (int a = 0; a < axis; ++a) m = fmax(m, x[base + a * inner]);
  float sum = 0.0f;
  for (int a = 0; a < axis; ++a) {
    const float e = exp(x[base + a * inner] - m);
    y[base + a * inner] = e;
    sum += e;
  }
  for (int a = 0; a < axis; ++a) y[base + a * inner] /= sum;
}

// Layout conversion at sub-graph boundaries: one work-item per destination element.
__kernel void nchw_to_nhwc(__global const float* restrict x, const int channels, const int height,
                           const int width, __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int c = i % channels;
  const int w = (i / channels) % width;
  const int h = (i / (channels * width)) % height;
  const int n = i / (channels * width * height);
  y[i] = x[((n * channels + c) * height + h) * width + w];
}

__kernel void nhwc_to_nchw(__global const float* restrict x, const int channels, const int height,
                           const int width, __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int w = i % width;
  const int h = (i / width) % height;
  const int c = (i / (width * height)) % channels;
  const int n = i / (width * height * channels);
  y[i] = x[((n * height + h) * width + w) * channels + c];
}
