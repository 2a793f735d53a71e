// The npu-int8 backend's own portable kernels, on NHWC activations: the terminal dtype and layout
// conversions of a partition (f32 NCHW <-> int8 NHWC, fused in one pass), the quantise/dequantise
// pairs around ops that run in f32 inside the partition, and the int8 data movement and pooling
// XNNPACK's 2022 operators do not cover. Written so the compiler vectorises the inner loops; each
// output element is computed the same way whatever the thread split.
//
// Every function takes the device's CpuPool (never null); arrays must not overlap.
#pragma once

#include <array>
#include <cstdint>

#include "int8_quant.h"
#include "op_shapes.h"
#include "xnn_thread_pool.h"

namespace co_up::int8 {

using xnnpack::CpuPool;

// x[count] (f32) -> y[count] (int8), and back.
void quantize(const float* x, int8_t* y, int64_t count, const QuantParams& q, const CpuPool& pool);
void dequantize(const int8_t* x, float* y, int64_t count, const QuantParams& q,
                const CpuPool& pool);

// The terminal conversions: x[N, C, HW] f32 -> y[N, HW, C] int8 at a partition's entry, and
// x[N, HW, C] int8 -> y[N, C, HW] f32 at its exit.
void quantize_nchw_to_nhwc(const float* x, int8_t* y, int64_t batch, int64_t channels,
                           int64_t plane, const QuantParams& q, const CpuPool& pool);
void dequantize_nhwc_to_nchw(const int8_t* x, float* y, int64_t batch, int64_t channels,
                             int64_t plane, const QuantParams& q, const CpuPool& pool);

// Byte layout changes x[N, C, HW] <-> y[N, HW, C] (Flatten/Reshape of a 4-D int8 tensor).
void nchw_to_nhwc_s8(const int8_t* x, int8_t* y, int64_t batch, int64_t channels, int64_t plane,
                     const CpuPool& pool);
void nhwc_to_nchw_s8(const int8_t* x, int8_t* y, int64_t batch, int64_t channels, int64_t plane,
                     const CpuPool& pool);

// Copies `rows` rows of `row_bytes` int8 values from x (row stride x_stride) to y (row stride
// y_stride), mapping each value through `table` (requantize_table) when it is not null. Concat
// writes each input's rows into its slice of the output this way.
void copy_rows_s8(const int8_t* x, int64_t x_stride, int8_t* y, int64_t y_stride, int64_t rows,
                  int64_t row_bytes, const std::array<int8_t, 256>* table, const CpuPool& pool);

// Max pooling with cpu-reference's semantics (ceil mode; padding never wins), for the windows
// XNNPACK's int8 max pooling declines. Output quantisation = input quantisation.
void max_pool2d_s8_nhwc(const backends::Pool2dShape& shape, const int8_t* x, int8_t* y,
                        const CpuPool& pool);

// x[N, HW, C] -> y[N, C]: max over the plane (output quantisation = input quantisation).
void global_max_pool_s8_nhwc(const int8_t* x, int8_t* y, int64_t batch, int64_t plane,
                             int64_t channels, const CpuPool& pool);

}  // namespace co_up::int8
