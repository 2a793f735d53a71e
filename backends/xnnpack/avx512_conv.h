// f32 convolution and fully connected layers as AVX-512 indirect GEMMs, for x86-64 CPUs that
// have AVX-512F (Skylake-SP and later, Zen 4).
//
// Why cpu-xnnpack has its own: Debian 12's XNNPACK (a February 2022 snapshot) reaches about half
// of an AVX-512 core's FMA peak on convolutions (its f32 GEMM 1024^3 runs at ~78 GFLOP/s where
// the core's peak is ~147), so on such a host co_up on one core was 0.47-0.91x ONNX Runtime's
// MLAS (bench/README.md). These kernels keep 16 or 24 accumulators in flight (8 pixels x 32
// output channels, or 6 x 64 on short reductions and large images), enough to cover an FMA
// latency of 4 cycles on two ports, and run each block of output channels over all pixel tiles
// before the next (XNNPACK does the opposite and re-reads every weight per pixel tile: costly
// where weights do not stay cached, ResNet50's last stage); very deep reductions run in parts
// that accumulate in the output, so that a part's weights stay cached across the tiles.
// On ARM and on x86 without AVX-512, XNNPACK's own kernels run (avx512_gemm_available() false).
//
// Numerics: every output is bias + sum over (tap, input channel) in that fixed order, in f32 FMA,
// so a result does not depend on the thread count or on how pixels are tiled; it differs from
// XNNPACK's summation order by rounding only (tests compare with cpu-reference within 1e-4 of the
// output range, as for XNNPACK).
//
// Like XNNPACK's operators, a convolution is created once for fixed input and output buffers
// (weights packed, indirection buffer built) and then run any number of times.
#pragma once

#include <cstdint>
#include <memory>

#include "op_shapes.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

// Compiled for x86-64 and the running CPU has AVX-512F. False also when the environment variable
// CO_UP_NO_AVX512_GEMM is set (to compare with XNNPACK's kernels on the same machine).
bool avx512_gemm_available();

// The shapes where these kernels beat XNNPACK's on this class of CPU (`co_up_bench_xnnpack
// --convs`, bench/README.md, and per layer in the networks): at least one full tile of 8 output
// pixels, and either >= 64 output channels per group over a reduction depth kH*kW*C/group >= 64,
// or 32-63 output channels over a depth of at least 96 — up to 448 (SqueezeNet's 128 -> 32 1x1:
// 1.24x XNNPACK), deeper only on images of 28x28 and more (a 32-channel slice of GoogLeNet's
// 128 -> 192 3x3 at 28x28, as `--split` cuts it: 0.35 vs 0.44 ms). Shallower reductions
// (MobileNetV2's 24 -> 144 1x1) pay the tile's fixed cost on too few FMAs; 16 output channels
// leave blocks half empty, and 32-48 over deep reductions on few pixels lose (GoogLeNet's
// 832 -> 48 at 7x7: 0.76x); a single pixel is a matrix-vector product. Depthwise convolutions
// are memory-bound and stay on XNNPACK. False wherever avx512_gemm_available() is.
bool avx512_conv_wins(const backends::Conv2dShape& shape);

// Where XNNPACK's convolution beats these kernels although avx512_conv_wins() says otherwise,
// when nothing is fused into the epilogue (a residual Add or SiLU needs the own kernel): 1x1
// expansions (group 1, stride 1, no padding) from at most kMaxExpansionInputs input channels to
// more outputs, over 7x7 pixels or more.
//
// Why 96 (docs/intra_op_threads.md, "ResNet-50's gap"), `co_up_bench_conv_choice` on an AMD EPYC
// host, own -> XNNPACK us: the own kernel is 5-10 % faster from 80 input channels up at one
// thread and ties or wins at two (112 -> 672 at 14x14 118 -> 128 us, 128 -> 512 at 28x28 412 -> 457 us, 192 -> 1152 at
// 7x7 86 -> 96 us); XNNPACK still wins below 64 (16 -> 96 at 112x112 252 -> 190 us) and ties at
// 64-96. In ResNet-50 the first bottleneck of a stage has its shortcut Add fused into the
// downsampling convolution, so its 128 -> 512 expansion had nothing fused and went to XNNPACK:
// at two threads 257-281 us against 210-224 us on the own kernel (and the next layer, which reads
// it as its residual, 30-40 us slower), in four alternating per-layer runs. Before (192), on
// another AVX-512 host of about half the per-core speed, one thread, fastest of 300 alternating
// rounds, own -> XNNPACK: MobileNetV2's 64 -> 384 and 96 -> 576 at 14x14 99 -> 83 us and 211 -> 186 us,
// 160 -> 960 at 7x7 136 -> 128 us; MobileNetV3's 80 -> 480 and 112 -> 672 at 14x14 148 -> 128
// and 280 -> 252 us; ResNet-50's 64 -> 256 at 56x56 1050 -> 878 us; SqueezeNet's fire expands
// 16 -> 64 at 55x55 93 -> 56 us, 48 -> 192 at 27x27 147 -> 116 us, 64 -> 256 at 13x13 57 -> 49 us;
// Inception-v3's 64 -> 80 at 73x73 550 -> 471 us (60 rounds). Both sides must be at least 7: a
// fully connected layer (rows x 1 pixels) keeps the own GEMM. (Deeper reductions and
// projections to fewer channels measure within 1-5 % either way and stay on the own kernel.)
constexpr int64_t kMaxExpansionInputs = 96;
bool xnnpack_1x1_expansion_wins(const backends::Conv2dShape& shape);

// Whether cpu-xnnpack runs this convolution on the own kernel: where avx512_conv_wins(), unless it
// is an expansion XNNPACK runs faster and nothing (`fused`: a residual Add or SiLU) needs the own
// kernel's epilogue. The one rule the plugin and co_up_bench_conv_choice both follow.
bool own_conv_runs(const backends::Conv2dShape& shape, bool fused);

struct F32ConvParams {
  const float* weights = nullptr;  // [M, C/group, kH, kW] (the ABI's OIHW)
  const float* bias = nullptr;     // [M], or NULL for none
  float output_min = -1.0f / 0.0f;
  float output_max = 1.0f / 0.0f;
  // NHWC like y (M channels per pixel), or NULL: added to the result before the clamp, so a
  // following elementwise Add (ResNet's shortcut) costs no extra pass over memory.
  const float* residual = nullptr;
  // Floats between consecutive output pixels of y, >= M; 0 means M. Larger when y is a slice of
  // a wider tensor, e.g. this convolution's channels of a Concat output it writes directly.
  int64_t output_stride = 0;
  // Bytes of input and output pixels that every block of output channels passes over before the
  // next pixels start (see the .cpp's kChunkBytes); 0: that default.
  int64_t chunk_bytes = 0;
  // SiLU (x * sigmoid(x), avx512_silu.h) after the residual and the clamp: a Conv followed by
  // SiLU (EfficientNet, YOLO) in one pass over the output.
  bool silu = false;
  // HardSwish (x * min(max(x / 6 + 1/2, 0), 1), XNNPACK's formula) after the residual and the
  // clamp: MobileNetV3's Conv followed by HardSwish in one pass over the output.
  bool hardswish = false;
};

// Any kernel, stride, dilation, padding and group count; x and y are NHWC. Fully connected layers
// are a 1x1 convolution over `batch` pixels of C inputs.
class Avx512Convolution {
 public:
  Avx512Convolution(const backends::Conv2dShape& shape, const F32ConvParams& params,
                    const float* x, float* y);
  ~Avx512Convolution();
  Avx512Convolution(const Avx512Convolution&) = delete;
  Avx512Convolution& operator=(const Avx512Convolution&) = delete;

  void run(const CpuPool& pool) const;

  struct State;  // packed weights, indirection buffer, parameters (the .cpp's kernels read it)
  struct Part;   // a slice of the reduction (deep layers run in several)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace co_up::xnnpack
