// co_up opencl backend: every kernel that is not a GEMM (convolution and fully connected layers
// run through CLBlast after `im2col`). OpenCL C 1.2, f32, NCHW, one work-item per output element
// unless a kernel says otherwise; every kernel checks its index against `count`, so the host may
// round the global size up to a multiple of the work-group size it picked for the device.
//
// Tunables (CLBlast-style: a default here, the host may pass -DNAME=value at build time).
#ifndef WPT
#define WPT 1  // elements per work-item in element-wise kernels (grid-stride loop)
#endif
#ifndef DW_UNROLL
#define DW_UNROLL 1  // 1: let the compiler decide; the depthwise window is small anyway
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
__kernel void im2col(__global const float* restrict x, const int x_offset, const int channels,
                     const int height, const int width, const int kernel_h, const int kernel_w,
                     const int stride_h, const int stride_w, const int pad_top,
                     const int pad_left, const int dilation_h, const int dilation_w,
                     const int out_h, const int out_w, __global float* restrict col,
                     const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int ow = i % out_w;
  const int oh = (i / out_w) % out_h;
  const int row = i / (out_w * out_h);
  const int kj = row % kernel_w;
  const int ki = (row / kernel_w) % kernel_h;
  const int c = row / (kernel_w * kernel_h);
  const int h = oh * stride_h - pad_top + ki * dilation_h;
  const int w = ow * stride_w - pad_left + kj * dilation_w;
  float v = 0.0f;
  if (h >= 0 && h < height && w >= 0 && w < width) {
    v = x[x_offset + (c * height + h) * width + w];
  }
  col[i] = v;
}

// y[item][p] = act(y[item][p] + bias[item % channels]) over `count` = items * plane elements.
__kernel void bias_activation(__global float* restrict y, __global const float* restrict bias,
                              const int has_bias, const int channels, const int plane,
                              const int act, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  float v = y[i];
  if (has_bias) v += bias[(i / plane) % channels];
  y[i] = activate(v, act);
}

// Depthwise (group == C, M = C * multiplier): y[n, m, oh, ow] with input channel m / multiplier.
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
  const int ow = i % out_w;
  const int oh = (i / out_w) % out_h;
  const int m = (i / (out_w * out_h)) % out_channels;
  const int n = i / (out_w * out_h * out_channels);
  const int c = m / (out_channels / channels);
  __global const float* src = x + (n * channels + c) * height * width;
  __global const float* ker = w + m * kernel_h * kernel_w;
  const int h0 = oh * stride_h - pad_top;
  const int w0 = ow * stride_w - pad_left;
  float sum = 0.0f;
#if DW_UNROLL > 1
#pragma unroll DW_UNROLL
#endif
  for (int ki = 0; ki < kernel_h; ++ki) {
    const int h = h0 + ki * dilation_h;
    if (h < 0 || h >= height) continue;
    for (int kj = 0; kj < kernel_w; ++kj) {
      const int ww = w0 + kj * dilation_w;
      if (ww < 0 || ww >= width) continue;
      sum = fma(src[h * width + ww], ker[ki * kernel_w + kj], sum);
    }
  }
  if (has_bias) sum += bias[m];
  y[i] = activate(sum, act);
}

// ---------------------------------------------------------------------------------------------
// Pooling: one work-item per output; padding never wins a max.

__kernel void max_pool2d(__global const float* restrict x, const int height, const int width,
                         const int kernel_h, const int kernel_w, const int stride_h,
                         const int stride_w, const int pad_top, const int pad_left,
                         const int out_h, const int out_w, __global float* restrict y,
                         const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int ow = i % out_w;
  const int oh = (i / out_w) % out_h;
  const int plane = i / (out_w * out_h);
  __global const float* src = x + plane * height * width;
  const int h0 = oh * stride_h - pad_top;
  const int w0 = ow * stride_w - pad_left;
  const int hb = max(h0, 0), he = min(h0 + kernel_h, height);
  const int wb = max(w0, 0), we = min(w0 + kernel_w, width);
  float best = -INFINITY;
  for (int h = hb; h < he; ++h) {
    for (int w = wb; w < we; ++w) {
      const float v = src[h * width + w];
      best = best > v ? best : v;
    }
  }
  y[i] = best;
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
  const int ow = i % out_w;
  const int oh = (i / out_w) % out_h;
  const int plane = i / (out_w * out_h);
  __global const float* src = x + plane * height * width;
  const int h0 = oh * stride_h - pad_top;
  const int w0 = ow * stride_w - pad_left;
  const int hb = max(h0, 0), he = min(h0 + kernel_h, height);
  const int wb = max(w0, 0), we = min(w0 + kernel_w, width);
  float sum = 0.0f;
  for (int h = hb; h < he; ++h) {
    for (int w = wb; w < we; ++w) sum += src[h * width + w];
  }
  int n = (he - hb) * (we - wb);
  if (count_include_pad) {
    n = (min(h0 + kernel_h, height + pad_bottom) - h0) * (min(w0 + kernel_w, width + pad_right) - w0);
  }
  y[i] = n > 0 ? sum / (float)n : 0.0f;
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

// ONNX LRN across channels: window floor((size-1)/2) below, ceil((size-1)/2) above.
__kernel void lrn(__global const float* restrict x, const int channels, const int plane_size,
                  const int size, const float alpha, const float beta, const float bias,
                  __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int p = i % plane_size;
  const int c = (i / plane_size) % channels;
  const int n = i / (plane_size * channels);
  const int c_begin = max(0, c - (size - 1) / 2);
  const int c_end = min(channels - 1, c + size / 2);
  float sum = 0.0f;
  for (int cc = c_begin; cc <= c_end; ++cc) {
    const float v = x[(n * channels + cc) * plane_size + p];
    sum += v * v;
  }
  y[i] = x[i] / pow(bias + alpha / (float)size * sum, beta);
}

// Inference batch norm folded on the host: y = x * multiplier[c] + offset[c].
__kernel void batch_norm(__global const float* x, __global const float* restrict multiplier,
                         __global const float* restrict offset, const int channels,
                         const int plane_size, __global float* y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int c = (i / plane_size) % channels;
  y[i] = x[i] * multiplier[c] + offset[c];
}

// ---------------------------------------------------------------------------------------------
// Data movement

// One input of a concat: x[outer][block] -> y[outer][total_block] at column `column`.
__kernel void concat_slice(__global const float* restrict x, const int block,
                           const int total_block, const int column, __global float* restrict y,
                           const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int o = i / block;
  y[o * total_block + column + i % block] = x[i];
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
