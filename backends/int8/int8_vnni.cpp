#include "int8_vnni.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "conv_indirection.h"
#include "line_aligned.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" vector it then reports as
// maybe-uninitialized (a known false positive at -O3).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define CO_UP_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#endif

namespace co_up::int8 {

using backends::Conv2dShape;
using xnnpack::CpuPool;
using xnnpack::make_indirection;

namespace {

// GEMM tile: up to kMaxRows output pixels x kCols output channels, 2 x 16 int32 accumulators per
// pixel. 12 x 32 keeps 24 accumulators, 2 weight vectors and the broadcast in the 32 zmm registers.
constexpr int kMaxRows = 12;
constexpr int64_t kCols = 32;
constexpr int64_t kDepthwiseBlock = 64;  // channels per depthwise step (4 x 16 lanes)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

struct VnniConvolution::State {
  Conv2dShape shape;
  int64_t taps = 0, group_in = 0, group_out = 0, quads = 0, col_blocks = 0, pixels = 0;
  // [group][col block][tap][quad][32 columns][4 bytes]: one quad of one tap for 32 columns is
  // two zmm loads.
  backends::LineAlignedVector<int8_t> packed;
  // [group][col block * 32]: bias - (x_zero_point + 128) * sum(w) (the kernel feeds x + 128 to
  // the unsigned side of vpdpbusd), and the requantisation scales; zero past group_out.
  backends::LineAlignedVector<int32_t> bias;
  std::vector<float> scales;
  std::vector<int8_t> zero_row;  // C + 64 bytes of x_zero_point: the padding's input
  std::vector<const int8_t*> indirection;  // [pixel][tap]
  int8_t* y = nullptr;
  int8_t zero_point = 0, out_min = -128, out_max = 127;
};

struct VnniDepthwise::State {
  Conv2dShape shape;
  int64_t taps = 0, quads = 0, blocks = 0, pixels = 0;
  // [block][quad][4 vectors][64 bytes]: vector j, lane L (128 bits), int32 element i holds the
  // quad's 4 tap weights of channel block*64 + 16L + 4j + i — the order in which unpacking four
  // taps' inputs leaves them (see run_depthwise_pixel).
  backends::LineAlignedVector<int8_t> packed;
  backends::LineAlignedVector<int32_t> bias;  // [block][4][16] in the same order, compensated as above
  std::vector<float> scales;  // [block][4][16]
  std::vector<int8_t> zero_row;
  std::vector<const int8_t*> indirection;  // [pixel][quads * 4]
  int8_t* y = nullptr;
  int8_t zero_point = 0, out_min = -128, out_max = 127;
};

#if defined(__x86_64__)

namespace {

// The requantisation of XNNPACK's qc8 kernels, clamped on both sides in float (so the integer
// conversion can neither overflow nor leave [out_min, out_max]).
CO_UP_VNNI_TARGET inline __m512i requantize(__m512i acc, __m512 scale, __m512 lo, __m512 hi,
                                            __m512i zero_point) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), scale);
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(v), zero_point);
}

// One tile: `rows` (<= kRows) pixels x one block of 32 columns of one group.
template <int kRows>
CO_UP_VNNI_TARGET void gemm_tile(const VnniConvolution::State& st, int64_t group, int64_t block,
                                 int64_t first_pixel, int64_t rows) {
  __m512i acc[kRows][2];
  const int32_t* bias = st.bias.data() + (group * st.col_blocks + block) * kCols;
  const __m512i bias0 = _mm512_loadu_si512(bias);
  const __m512i bias1 = _mm512_loadu_si512(bias + 16);
  for (int r = 0; r < kRows; ++r) {
    acc[r][0] = bias0;
    acc[r][1] = bias1;
  }
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  const int8_t* w = st.packed.data() + ((group * st.col_blocks + block) * st.taps) * st.quads * kCols * 4;
  const int64_t offset = group * st.group_in;
  const int8_t* const* indirection = st.indirection.data();
  for (int64_t t = 0; t < st.taps; ++t) {
    const int8_t* a[kRows];
    for (int r = 0; r < kRows; ++r) {
      // Rows past the tile's end repeat its last pixel: computed, never stored.
      const int64_t p = first_pixel + std::min<int64_t>(r, rows - 1);
      a[r] = indirection[p * st.taps + t] + offset;
    }
    for (int64_t q = 0; q < st.quads; ++q) {
      const __m512i w0 = _mm512_loadu_si512(w);
      const __m512i w1 = _mm512_loadu_si512(w + 64);
      w += 128;
      for (int r = 0; r < kRows; ++r) {
        int32_t four;
        std::memcpy(&four, a[r] + 4 * q, sizeof(four));
        const __m512i x = _mm512_xor_si512(_mm512_set1_epi32(four), flip);
        acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], x, w0);
        acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], x, w1);
      }
    }
  }
  const float* scales = st.scales.data() + (group * st.col_blocks + block) * kCols;
  const __m512 scale0 = _mm512_loadu_ps(scales);
  const __m512 scale1 = _mm512_loadu_ps(scales + 16);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(st.out_min - st.zero_point));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(st.out_max - st.zero_point));
  const __m512i zp = _mm512_set1_epi32(st.zero_point);
  const int64_t col0 = block * kCols;
  const int64_t cols = std::min(kCols, st.group_out - col0);
  const auto mask0 = static_cast<__mmask16>(cols >= 16 ? 0xFFFF : (1u << cols) - 1);
  const auto mask1 = static_cast<__mmask16>(cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
  const int64_t out_channels = st.shape.out_channels;
  for (int r = 0; r < rows; ++r) {
    int8_t* out = st.y + (first_pixel + r) * out_channels + group * st.group_out + col0;
    _mm512_mask_cvtepi32_storeu_epi8(out, mask0, requantize(acc[r][0], scale0, lo, hi, zp));
    if (mask1) {
      _mm512_mask_cvtepi32_storeu_epi8(out + 16, mask1, requantize(acc[r][1], scale1, lo, hi, zp));
    }
  }
}

using TileFn = void (*)(const VnniConvolution::State&, int64_t, int64_t, int64_t, int64_t);

template <int... kRows>
constexpr auto make_tiles(std::integer_sequence<int, kRows...>) {
  return std::array<TileFn, sizeof...(kRows)>{&gemm_tile<kRows + 1>...};
}
// tiles[r - 1] computes r rows: a short last tile (or a batch-1 fully connected layer) does not
// pay for 12.
constexpr auto kTiles = make_tiles(std::make_integer_sequence<int, kMaxRows>{});

CO_UP_VNNI_TARGET void depthwise_pixel(const VnniDepthwise::State& st, int64_t p) {
  const int64_t channels = st.shape.in_channels;
  const int8_t* const* taps = st.indirection.data() + p * st.quads * 4;
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  const __m512 lo = _mm512_set1_ps(static_cast<float>(st.out_min - st.zero_point));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(st.out_max - st.zero_point));
  const __m512i zp = _mm512_set1_epi32(st.zero_point);
  int8_t* out = st.y + p * channels;
  for (int64_t b = 0; b < st.blocks; ++b) {
    const int64_t c0 = b * kDepthwiseBlock;
    const int64_t left = channels - c0;
    const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
    const int32_t* bias = st.bias.data() + b * kDepthwiseBlock;
    __m512i acc[4];
    for (int j = 0; j < 4; ++j) acc[j] = _mm512_loadu_si512(bias + 16 * j);
    const int8_t* w = st.packed.data() + b * st.quads * 4 * 64;
    for (int64_t q = 0; q < st.quads; ++q) {
      __m512i x[4];
      for (int i = 0; i < 4; ++i) {
        x[i] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, taps[4 * q + i] + c0), flip);
      }
      // Per 128-bit lane (16 channels): bytes of taps 0,1 and 2,3 interleaved, then 16-bit pairs
      // interleaved: each int32 holds one channel's four taps, channels 4j..4j+3 in vector j.
      const __m512i t01lo = _mm512_unpacklo_epi8(x[0], x[1]);
      const __m512i t01hi = _mm512_unpackhi_epi8(x[0], x[1]);
      const __m512i t23lo = _mm512_unpacklo_epi8(x[2], x[3]);
      const __m512i t23hi = _mm512_unpackhi_epi8(x[2], x[3]);
      acc[0] = _mm512_dpbusd_epi32(acc[0], _mm512_unpacklo_epi16(t01lo, t23lo), _mm512_loadu_si512(w));
      acc[1] = _mm512_dpbusd_epi32(acc[1], _mm512_unpackhi_epi16(t01lo, t23lo), _mm512_loadu_si512(w + 64));
      acc[2] = _mm512_dpbusd_epi32(acc[2], _mm512_unpacklo_epi16(t01hi, t23hi), _mm512_loadu_si512(w + 128));
      acc[3] = _mm512_dpbusd_epi32(acc[3], _mm512_unpackhi_epi16(t01hi, t23hi), _mm512_loadu_si512(w + 192));
      w += 256;
    }
    const float* scales = st.scales.data() + b * kDepthwiseBlock;
    __m512i r[4];
    for (int j = 0; j < 4; ++j) {
      r[j] = requantize(acc[j], _mm512_loadu_ps(scales + 16 * j), lo, hi, zp);
    }
    // Packing undoes the interleave lane by lane: channels come out in order. Values are already
    // in [out_min, out_max], so the saturation never bites.
    const __m512i packed = _mm512_packs_epi16(_mm512_packs_epi32(r[0], r[1]), _mm512_packs_epi32(r[2], r[3]));
    _mm512_mask_storeu_epi8(out + c0, mask, packed);
  }
}

}  // namespace

bool vnni_available() {
  static const bool available = __builtin_cpu_supports("avx512f") &&
                                __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl") &&
                                __builtin_cpu_supports("avx512vnni");
  return available;
}

#else

bool vnni_available() { return false; }

#endif  // __x86_64__

VnniConvolution::VnniConvolution(const Conv2dShape& s, const Int8ConvParams& params,
                                 const int8_t* x, int8_t* y)
    : state_(std::make_unique<State>()) {
  if (!vnni_available()) {
    throw std::logic_error("VnniConvolution: this CPU has no AVX512-VNNI (check vnni_available())");
  }
  State& st = *state_;
  st.shape = s;
  st.taps = s.kernel_h * s.kernel_w;
  st.group_in = s.in_channels / s.group;
  st.group_out = s.out_channels / s.group;
  st.quads = ceil_div(st.group_in, 4);
  st.col_blocks = ceil_div(st.group_out, kCols);
  st.pixels = s.batch * s.out_height() * s.out_width();
  st.y = y;
  st.zero_point = params.output_zero_point;
  st.out_min = params.output_min;
  st.out_max = params.output_max;
  st.zero_row.assign(static_cast<size_t>(s.in_channels + 64), params.input_zero_point);
  st.indirection = make_indirection(s, x, st.zero_row.data(), st.taps);

  const int64_t padded_cols = st.col_blocks * kCols;
  st.packed.assign(static_cast<size_t>(s.group * padded_cols * st.taps * st.quads * 4), 0);
  st.bias.assign(static_cast<size_t>(s.group * padded_cols), 0);
  st.scales.assign(static_cast<size_t>(s.group * padded_cols), 0.0f);
  const int32_t unsigned_zero = int32_t{params.input_zero_point} + 128;
  for (int64_t g = 0; g < s.group; ++g) {
    for (int64_t m = 0; m < st.group_out; ++m) {
      const int64_t channel = g * st.group_out + m;
      const int8_t* w = params.weights + channel * st.taps * st.group_in;
      const int64_t block = m / kCols, col = m % kCols;
      int32_t sum = 0;
      for (int64_t t = 0; t < st.taps; ++t) {
        for (int64_t c = 0; c < st.group_in; ++c) {
          const int8_t v = w[t * st.group_in + c];
          sum += v;
          const int64_t q = c / 4;
          st.packed[static_cast<size_t>(
              ((((g * st.col_blocks + block) * st.taps + t) * st.quads + q) * kCols + col) * 4 +
              c % 4)] = v;
        }
      }
      const size_t at = static_cast<size_t>(g * padded_cols + m);
      st.bias[at] = params.bias[channel] - unsigned_zero * sum;
      st.scales[at] = params.scales[channel];
    }
  }
}

VnniConvolution::~VnniConvolution() = default;

void VnniConvolution::run(const CpuPool& pool) const {
#if defined(__x86_64__)
  const State& st = *state_;
  const int64_t row_tiles = ceil_div(st.pixels, kMaxRows);
  const int64_t blocks = st.shape.group * st.col_blocks;
  // Items run block-major, so consecutive tiles of a thread reuse one block of packed weights.
  pool.parallel_for(blocks * row_tiles, 1, 2, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t gb = item / row_tiles;
      const int64_t first = item % row_tiles * kMaxRows;
      const int64_t rows = std::min<int64_t>(kMaxRows, st.pixels - first);
      kTiles[static_cast<size_t>(rows - 1)](st, gb / st.col_blocks, gb % st.col_blocks, first, rows);
    }
  });
#else
  (void)pool;
#endif
}

VnniDepthwise::VnniDepthwise(const Conv2dShape& s, const Int8ConvParams& params, const int8_t* x,
                             int8_t* y)
    : state_(std::make_unique<State>()) {
  if (!vnni_available()) {
    throw std::logic_error("VnniDepthwise: this CPU has no AVX512-VNNI (check vnni_available())");
  }
  if (s.group != s.in_channels || s.out_channels != s.in_channels) {
    throw std::logic_error("VnniDepthwise: needs group == C == M (one filter per channel)");
  }
  State& st = *state_;
  st.shape = s;
  st.taps = s.kernel_h * s.kernel_w;
  st.quads = ceil_div(st.taps, 4);
  st.blocks = ceil_div(s.in_channels, kDepthwiseBlock);
  st.pixels = s.batch * s.out_height() * s.out_width();
  st.y = y;
  st.zero_point = params.output_zero_point;
  st.out_min = params.output_min;
  st.out_max = params.output_max;
  st.zero_row.assign(static_cast<size_t>(s.in_channels + 64), params.input_zero_point);
  st.indirection = make_indirection(s, x, st.zero_row.data(), st.quads * 4);

  const int64_t padded = st.blocks * kDepthwiseBlock;
  st.packed.assign(static_cast<size_t>(st.blocks * st.quads * 4 * 64), 0);
  st.bias.assign(static_cast<size_t>(padded), 0);
  st.scales.assign(static_cast<size_t>(padded), 0.0f);
  const int32_t unsigned_zero = int32_t{params.input_zero_point} + 128;
  for (int64_t c = 0; c < s.in_channels; ++c) {
    const int64_t block = c / kDepthwiseBlock, within = c % kDepthwiseBlock;
    const int64_t lane = within / 16, j = within % 16 / 4, i = within % 4;
    const int64_t element = lane * 4 + i;  // int32 element of vector j holding channel c
    const int8_t* w = params.weights + c * st.taps;  // [C, kH, kW, 1]
    int32_t sum = 0;
    for (int64_t t = 0; t < st.taps; ++t) {
      sum += w[t];
      const int64_t q = t / 4;
      st.packed[static_cast<size_t>((((block * st.quads + q) * 4 + j) * 16 + element) * 4 + t % 4)] = w[t];
    }
    const size_t at = static_cast<size_t>(block * kDepthwiseBlock + j * 16 + element);
    st.bias[at] = params.bias[c] - unsigned_zero * sum;
    st.scales[at] = params.scales[c];
  }
}

VnniDepthwise::~VnniDepthwise() = default;

void VnniDepthwise::run(const CpuPool& pool) const {
#if defined(__x86_64__)
  const State& st = *state_;
  pool.parallel_for(st.pixels, 1, 64, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) depthwise_pixel(st, p);
  });
#else
  (void)pool;
#endif
}

}  // namespace co_up::int8
