// co_up opencl backend: kernels of the rank-N tensor ops and the CNN forms (broadcasting
// element-wise ops, unary math, table-driven data movement, reductions, layer normalisation).
// Appended to ocl_kernels.cl at build time (same conventions: f32, every kernel checks its index
// against `count`). Data movement whose index arithmetic would need the rank (transpose, slice,
// gather, pad, nearest resize, channel shuffle) reads an index table the host computed once at
// compile time: y[i] = idx[i] < 0 ? fill : x[idx[i]].

#ifndef MAX_TENSOR_RANK
#define MAX_TENSOR_RANK 8
#endif

#define BIN_ADD 0
#define BIN_SUB 1
#define BIN_MUL 2
#define BIN_DIV 3
#define BIN_POW 4

// meta: out dims[rank], a strides[rank], b strides[rank] (0 where the operand broadcasts).
__kernel void broadcast_binary(__global const float* a, __global const float* b,
                               __global const int* restrict meta, const int rank, const int op,
                               const int act, __global float* y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  int rest = i, ia = 0, ib = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int idx = rest % meta[d];
    rest /= meta[d];
    ia += idx * meta[rank + d];
    ib += idx * meta[2 * rank + d];
  }
  const float u = a[ia], v = b[ib];
  float r;
  switch (op) {
    case BIN_ADD: r = u + v; break;
    case BIN_SUB: r = u - v; break;
    case BIN_MUL: r = u * v; break;
    case BIN_DIV: r = u / v; break;
    default: r = pow(u, v); break;
  }
  y[i] = activate(r, act);
}

#define UN_SQRT 0
#define UN_ERF 1
#define UN_TANH 2
#define UN_EXP 3
#define UN_GELU 4
#define UN_GELU_TANH 5
#define UN_LEAKY_RELU 6
#define UN_SILU 7
#define UN_HARD_SIGMOID 8

__kernel void unary_math(__global const float* x, __global float* y, const int op,
                         const float alpha, const float beta, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const float v = x[i];
  float r;
  switch (op) {
    case UN_SQRT: r = sqrt(v); break;
    case UN_ERF: r = erf(v); break;
    case UN_TANH: r = tanh(v); break;
    case UN_EXP: r = exp(v); break;
    case UN_GELU: r = 0.5f * v * (1.0f + erf(v * 0.70710678118654752f)); break;
    case UN_GELU_TANH:
      r = 0.5f * v * (1.0f + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
      break;
    case UN_LEAKY_RELU: r = v >= 0.0f ? v : alpha * v; break;
    case UN_SILU: r = v / (1.0f + exp(-v)); break;
    default: r = fmax(0.0f, fmin(1.0f, alpha * v + beta)); break;  // UN_HARD_SIGMOID
  }
  y[i] = r;
}

__kernel void gather_index(__global const float* restrict x, __global const int* restrict idx,
                           const float fill, __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const int k = idx[i];
  y[i] = k < 0 ? fill : x[k];
}

// Bilinear resize: idx holds 4 source offsets per output (top-left, top-right, bottom-left,
// bottom-right), w 2 weights (row, column); the blend order is the reference backend's.
__kernel void resize_linear(__global const float* restrict x, __global const int* restrict idx,
                            __global const float* restrict w, __global float* restrict y,
                            const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  const float x00 = x[idx[4 * i]], x01 = x[idx[4 * i + 1]];
  const float x10 = x[idx[4 * i + 2]], x11 = x[idx[4 * i + 3]];
  const float wy = w[2 * i], wx = w[2 * i + 1];
  const float top = x00 + (x01 - x00) * wx;
  const float bottom = x10 + (x11 - x10) * wx;
  y[i] = top + (bottom - top) * wy;
}

// Sum over the reduced elements of each output, in index order: base[i] + offsets[r].
__kernel void reduce_table(__global const float* restrict x, __global const int* restrict base,
                           __global const int* restrict offsets, const int reduced,
                           const float scale, __global float* restrict y, const int count) {
  const int i = get_global_id(0);
  if (i >= count) return;
  float sum = 0.0f;
  const int b = base[i];
  for (int r = 0; r < reduced; ++r) sum += x[b + offsets[r]];
  y[i] = sum * scale;
}

// One work-item per row of `size`: mean and variance in two passes, as the reference backend.
__kernel void layer_norm(__global const float* restrict x, __global const float* restrict scale,
                         __global const float* restrict bias, const int has_bias, const int size,
                         const float epsilon, __global float* restrict y, const int count) {
  const int row = get_global_id(0);
  if (row >= count) return;
  __global const float* in = x + row * size;
  __global float* out = y + row * size;
  float sum = 0.0f;
  for (int i = 0; i < size; ++i) sum += in[i];
  const float mean = sum / (float)size;
  float var = 0.0f;
  for (int i = 0; i < size; ++i) {
    const float d = in[i] - mean;
    var += d * d;
  }
  const float inv = 1.0f / sqrt(var / (float)size + epsilon);
  for (int i = 0; i < size; ++i) {
    const float v = (in[i] - mean) * inv * scale[i];
    out[i] = has_bias ? v + bias[i] : v;
  }
}
