#include "avx512_conv.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "avx512_silu.h"
#include "conv_indirection.h"
#include "line_aligned.h"

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" vector it then reports as
// maybe-uninitialized (a known false positive at -O3).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define CO_UP_AVX512_TARGET __attribute__((target("avx512f")))
#endif

namespace co_up::xnnpack {

using backends::Conv2dShape;

namespace {

// GEMM tile: up to kMaxRows output pixels x kCols output channels (kMaxVectors zmm of 16 floats).
// 8 x 32 measured fastest of 4x64, 6x64, 7x48, 8x32, 8x48, 10x32, 12x16, 12x32 and 14x16 on a
// Sapphire Rapids core: 16 accumulators hide the FMA latency, and one block's weights for one
// input channel (128 bytes) keep the weight panel of 3x3 layers small enough for L1/L2 reuse.
constexpr int kMaxRows = 8;
constexpr int64_t kCols = 32;
constexpr int kMaxVectors = kCols / 16;
// Two blocks at once, kPairRows x 64 (24 accumulators, kPairTiles): each broadcast feeds four
// FMAs instead of two and a tile's epilogue is amortised over more of them, but a tile streams
// two blocks' weights, so the pass over pixels must be long enough to reuse them from L1/L2:
// taken for short reductions (depth <= 128, row mode) and for layers of at least kPairMinTiles
// tiles (28x28 and larger). Measured in ResNet50 and GoogLeNet: 3x3 at 56x56 and 28x28 -3 to
// -6 %, 1x1 256 -> 64/128 at 56x56 -5 to -8 %; but at 14x14 (33 tiles) +6 to +11 % and at 7x7
// (9 tiles) +10 to +25 %.
constexpr int kPairRows = 6;
constexpr int64_t kPairMinTiles = 128;
// Below this many input channels (and one group) a convolution runs in row mode (see State).
constexpr int64_t kRowModeChannels = 8;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Input plus output bytes of the pixels that every block of output channels passes over before
// the next pixels start: a quarter of a 2 MiB L2, leaving room for the blocks' weights. Measured
// on ResNet50's 1x1 layers at 56x56 (256 KiB to 1 MiB alike, +5-10 % over one pass per block).
constexpr int64_t kChunkBytes = 512 * 1024;

// Reductions deeper than kSplitDepth (one block's weights over 512 KiB, a quarter of L2) run in
// parts of at most kPartDepth (tap, input channel) rows, each part over all pixel tiles of its run
// before the next, accumulating in the output: a part's weights for a block (64 KiB) are re-read
// from L1/L2 by every tile instead of a 576 KiB panel streaming through L2 for each of them
// (ResNet50's 512 -> 512 3x3 at 7x7: 2.0 -> 1.8 ms). The summation order is unchanged: parts
// follow the (tap, channel) order and partial sums round-trip through f32 memory exactly.
constexpr int64_t kSplitDepth = 4096;
constexpr int64_t kPartDepth = 512;

// Weights of the next pass (part of a block) to fetch into L2 during a tile: its rows phase,
// phase + period, ... in (tap, channel) order (nothing when rows is NULL). With `input`, also the
// input lines of the tile two tiles ahead into L1: set on a chunk's first block, which reads the
// chunk from L3 or memory (the previous layer's output does not fit in L2).
struct Prefetch {
  const float* rows = nullptr;  // the next pass's packed weight rows (a part's rows are contiguous)
  int64_t row_count = 0;
  int64_t phase = 0;
  int64_t period = 1;
  bool input = false;
};

// Kernel variants (bits): prefetch the input two tiles ahead (Prefetch::input); every column
// of the block live.
constexpr int kInputAheadVariant = 1;
constexpr int kFullBlockVariant = 2;

}  // namespace

// A slice of the reduction: taps [tap_begin, tap_end) x input channels [channel_begin,
// channel_end) of each group. The first part starts from the bias, later ones from the partial
// sums in the output; the last applies the residual and the clamp.
struct Avx512Convolution::Part {
  int64_t tap_begin = 0, tap_end = 0, channel_begin = 0, channel_end = 0;
  bool first = true, last = true;
};

namespace {

// The reduction over `taps` x `channels` in parts of at most `max_depth` rows (one part when
// max_depth is 0 or the reduction is not deeper): channel slices of multiples of 16 when one tap
// is deeper than max_depth, else runs of whole taps.
std::vector<Avx512Convolution::Part> make_parts(int64_t taps, int64_t channels, int64_t max_depth) {
  if (max_depth <= 0 || taps * channels <= max_depth) return {Avx512Convolution::Part{0, taps, 0, channels}};
  const int64_t slices = ceil_div(channels, max_depth);
  const int64_t slice = std::min(channels, ceil_div(ceil_div(channels, slices), 16) * 16);
  const int64_t taps_per_part = slices == 1 ? std::max<int64_t>(1, max_depth / channels) : 1;
  std::vector<Avx512Convolution::Part> parts;
  for (int64_t t = 0; t < taps; t += taps_per_part) {
    for (int64_t c = 0; c < channels; c += slice) {
      parts.push_back({t, std::min(t + taps_per_part, taps), c, std::min(c + slice, channels), false, false});
    }
  }
  parts.front().first = true;
  parts.back().last = true;
  return parts;
}

}  // namespace

struct Avx512Convolution::State {
  Conv2dShape shape;
  int64_t taps = 0, group_in = 0, group_out = 0, col_blocks = 0, pixels = 0;
  // [group][col block][tap][input channel][32 columns]: one input channel of one tap for 32
  // output channels is two zmm loads; columns past group_out are zero.
  backends::LineAlignedVector<float> packed;
  backends::LineAlignedVector<float> bias;         // [group][col block * 32], zero past group_out
  backends::LineAlignedVector<float> zero_row;     // C zeros: the padding's input
  // Row mode (few input channels, e.g. a network's first RGB layer): the input is copied into a
  // zero-padded NHWC image each run, so the kW taps of one kernel row are kW*C contiguous floats
  // and the GEMM runs over kH "taps" of kW*C "channels" (same packed weight order) instead of
  // kH*kW taps of C: far fewer row-pointer loads per FMA. Empty otherwise.
  backends::LineAlignedVector<float> padded;
  const float* x = nullptr;
  int64_t padded_height = 0, padded_width = 0;
  std::vector<const float*> indirection;  // [pixel][tap]
  std::vector<Avx512Convolution::Part> parts;  // in summation order; one unless the depth is large
  bool pairs = false;
  float* y = nullptr;
  int64_t y_stride = 0;  // floats between output pixels of y
  int64_t chunk_bytes = 0;  // F32ConvParams::chunk_bytes, 0 resolved to kChunkBytes
  const float* residual = nullptr;
  float out_min = 0, out_max = 0;
  bool clamp_low = false, clamp_high = false;  // out_min > -inf, out_max < inf
  bool silu = false;                           // F32ConvParams::silu
  bool hardswish = false;                      // F32ConvParams::hardswish
};

#if defined(__x86_64__)

namespace {

// Row mode's copy into the padded image runs on the pool from this many floats (a copy streams
// about twice as fast as an element-wise pass, whose threshold is 16 K elements).
constexpr int64_t kMinParallelCopy = 32768;

// 16 columns of a block: all of them (kFull), or the live ones of `mask`.
template <bool kFull>
CO_UP_AVX512_TARGET inline __m512 load_columns(const float* p, __mmask16 mask) {
  if constexpr (kFull) {
    return _mm512_loadu_ps(p);
  } else {
    return _mm512_maskz_loadu_ps(mask, p);
  }
}
template <bool kFull>
CO_UP_AVX512_TARGET inline void store_columns(float* p, __mmask16 mask, __m512 value) {
  if constexpr (kFull) {
    _mm512_storeu_ps(p, value);
  } else {
    _mm512_mask_storeu_ps(p, mask, value);
  }
}

// `tiles` consecutive tiles, each kRows pixels (from `first_pixel` on) x one block of 32 columns
// of one group, over one part of the reduction. kVectors = 1 when the block has at most 16 live
// columns (e.g. a 16-channel 1x1 reduce): half the FMAs. Everything is indexed by template
// constants, so the accumulators never leave registers. Looping over tiles here rather than in
// the caller keeps a tile's set-up (masks, pointers) out of the loop: at 64 input channels a
// tile is ~800 cycles of FMAs, and a call per tile cost 5-10 % of such layers.
// kVariant: kInputAheadVariant and/or kFullBlockVariant.
template <int kRows, int kVectors, int kVariant>
CO_UP_AVX512_TARGET void gemm_tile(const Avx512Convolution::State& st, int64_t group,
                                   int64_t block, int64_t first_pixel, int64_t tiles,
                                   const Avx512Convolution::Part& part, const Prefetch& next) {
  const int64_t at = (group * st.col_blocks + block) * kCols;
  const int64_t out_channels = st.shape.out_channels;
  const int64_t col0 = block * kCols;
  const int64_t column = group * st.group_out + col0;
  const int64_t cols = std::min<int64_t>(16 * kVectors, st.group_out - col0);
  constexpr bool kInputAhead = (kVariant & kInputAheadVariant) != 0;
  // A full block (every column live: all but a layer's last block when M is not a multiple of
  // the block's width) loads and stores without masks. With masks, the compiler re-materialises them in k
  // registers (kmovw, a port-5 uop, the FMA port) at every masked access: 51 per 6x64 tile.
  constexpr bool kFull = (kVariant & kFullBlockVariant) != 0;
  __mmask16 masks[kVectors];
  for (int v = 0; v < kVectors; ++v) {
    const int64_t live = std::clamp<int64_t>(cols - 16 * v, 0, 16);
    masks[v] = static_cast<__mmask16>((1u << live) - 1);
  }
  for (int64_t tile = 0; tile < tiles; ++tile, first_pixel += kRows) {
    float* const out = st.y + first_pixel * st.y_stride + column;
    __m512 acc[kRows][kVectors];
    if (part.first) {
      for (int v = 0; v < kVectors; ++v) {
        const __m512 b = _mm512_loadu_ps(st.bias.data() + at + 16 * v);
        for (int r = 0; r < kRows; ++r) acc[r][v] = b;
      }
    } else {
      for (int r = 0; r < kRows; ++r) {
        for (int v = 0; v < kVectors; ++v) acc[r][v] = load_columns<kFull>(out + r * st.y_stride + 16 * v, masks[v]);
      }
    }
    // The epilogue's residual and output lines, requested two tiles ahead into L2: in a layer
    // larger than L2 they come from L3 or memory, and a short reduction (64 input channels) would
    // otherwise wait for them after its FMAs instead of during them.
    const int64_t ahead = first_pixel + 2 * kRows;
    const bool ahead_live = ahead + kRows <= st.pixels;
    if (ahead_live && (part.first || part.last)) {
      for (int r = 0; r < kRows; ++r) {
        for (int v = 0; v < kVectors; ++v) {
          if (st.residual && part.last) {
            _mm_prefetch(reinterpret_cast<const char*>(st.residual + (ahead + r) * out_channels + column + 16 * v),
                         _MM_HINT_T1);
          }
          if (part.first) {
            _mm_prefetch(reinterpret_cast<const char*>(st.y + (ahead + r) * st.y_stride + column + 16 * v), _MM_HINT_ET1);
          }
        }
      }
    }
    const float* const weights = st.packed.data() + at * st.taps * st.group_in;
    // Vectors 2 and 3 (a tile of two blocks) read the next block's panel.
    const int64_t panel = kCols * st.taps * st.group_in;
    const int64_t offset = group * st.group_in + part.channel_begin;
    const float* const* rows = st.indirection.data() + first_pixel * st.taps;
    const int64_t channels = part.channel_end - part.channel_begin;
    // Every next.period-th weight row of the next pass, from row next.phase: the pass's tiles share
    // the prefetch evenly, so it overlaps their computation instead of bursting.
    int64_t row = 0;
    int64_t countdown = next.rows ? next.phase + tile + 1 : std::numeric_limits<int64_t>::max();
    for (int64_t t = part.tap_begin; t < part.tap_end; ++t) {
      const float* a[kRows];
      for (int r = 0; r < kRows; ++r) a[r] = rows[r * st.taps + t] + offset;
      const float* w = weights + (t * st.group_in + part.channel_begin) * kCols;
      for (int64_t c = 0; c < channels; ++c) {
        if constexpr (kInputAhead) {
          if (c % 16 == 0 && ahead_live) {
            const float* const* far = rows + 2 * kRows * st.taps;  // the tile two ahead
            for (int r = 0; r < kRows; ++r) {
              _mm_prefetch(reinterpret_cast<const char*>(far[r * st.taps + t] + offset + c), _MM_HINT_T0);
            }
          }
        }
        __m512 wv[kVectors];
        for (int v = 0; v < kVectors; ++v) wv[v] = _mm512_loadu_ps(w + v / 2 * panel + 16 * (v % 2));
        if (--countdown == 0) {
          if (row < next.row_count) {
            const float* line = next.rows + row * kCols;
            _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T1);
            _mm_prefetch(reinterpret_cast<const char*>(line + 16), _MM_HINT_T1);
          }
          countdown = next.period;
        }
        ++row;
        w += kCols;
        for (int r = 0; r < kRows; ++r) {
          const __m512 x = _mm512_set1_ps(a[r][c]);
          for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(x, wv[v], acc[r][v]);
        }
      }
    }
    if (part.last) {
      const __m512 lo = _mm512_set1_ps(st.out_min);
      const __m512 hi = _mm512_set1_ps(st.out_max);
      if (st.residual) {
        const float* residual = st.residual + first_pixel * out_channels + column;
        for (int r = 0; r < kRows; ++r) {
          for (int v = 0; v < kVectors; ++v) {
            acc[r][v] = _mm512_add_ps(acc[r][v], load_columns<kFull>(residual + 16 * v, masks[v]));
          }
          residual += out_channels;
        }
      }
      // Only the bounds there are (ReLU has no upper one): each is a uop per vector on the FMA
      // ports.
      if (st.clamp_low) {
        for (int r = 0; r < kRows; ++r) {
          for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_max_ps(acc[r][v], lo);
        }
      }
      if (st.clamp_high) {
        for (int r = 0; r < kRows; ++r) {
          for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_min_ps(acc[r][v], hi);
        }
      }
      if (st.silu) {
        for (int r = 0; r < kRows; ++r) {
          for (int v = 0; v < kVectors; ++v) acc[r][v] = silu_ps(acc[r][v]);
        }
      }
    }
    for (int r = 0; r < kRows; ++r) {
      for (int v = 0; v < kVectors; ++v) store_columns<kFull>(out + r * st.y_stride + 16 * v, masks[v], acc[r][v]);
    }
  }
}

// HardSwish (XNNPACK's formula, so a fused layer equals the convolution then XNNPACK's operator)
// in place on `columns` channels of `pixels` output pixels `stride` floats apart. Run by the thread
// that just wrote them (L1-hot), after a run's last part; kept out of the tile kernels, whose
// epilogue it slowed by 2 % for every other layer (YOLO-320, one thread) when it was a branch there.
CO_UP_AVX512_TARGET void hardswish_columns(float* y, int64_t stride, int64_t pixels, int64_t columns) {
  const __m512 sixth = _mm512_set1_ps(0x1.555556p-3f), half = _mm512_set1_ps(0.5f);
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  for (int64_t p = 0; p < pixels; ++p, y += stride) {
    for (int64_t c = 0; c < columns; c += 16) {
      const __mmask16 live = columns - c >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (columns - c)) - 1);
      const __m512 x = _mm512_maskz_loadu_ps(live, y + c);
      const __m512 gate = _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(x, sixth, half), zero), one);
      _mm512_mask_storeu_ps(y + c, live, _mm512_mul_ps(gate, x));
    }
  }
}

using TileFn = void (*)(const Avx512Convolution::State&, int64_t, int64_t, int64_t, int64_t,
                       const Avx512Convolution::Part&, const Prefetch&);

template <int kVariant, int kVectors, int... kRows>
constexpr auto make_tiles(std::integer_sequence<int, kRows...>) {
  return std::array<TileFn, sizeof...(kRows)>{&gemm_tile<kRows + 1, kVectors, kVariant>...};
}
// Tile tables: [v - 1][r - 1] computes r rows of v vectors, so a short last tile (or a batch-1
// fully connected layer) does not pay for a full one.
template <int kRowCount, int kVariant, int... kVectors>
constexpr auto make_all_tiles(std::integer_sequence<int, kVectors...>) {
  return std::array<std::array<TileFn, kRowCount>, sizeof...(kVectors)>{
      make_tiles<kVariant, kVectors + 1>(std::make_integer_sequence<int, kRowCount>{})...};
}
// [variant][vectors - 1][rows - 1]: the prefetching variant only where it is needed (its extra
// pointers cost the FMA loop registers), the unmasked one wherever it can be.
template <int kRowCount, int kVectorCount, int... kVariants>
constexpr auto make_tile_table(std::integer_sequence<int, kVariants...>) {
  return std::array{make_all_tiles<kRowCount, kVariants>(std::make_integer_sequence<int, kVectorCount>{})...};
}
constexpr auto kTiles = make_tile_table<kMaxRows, kMaxVectors>(std::make_integer_sequence<int, 4>{});
constexpr auto kPairTiles = make_tile_table<kPairRows, 2 * kMaxVectors>(std::make_integer_sequence<int, 4>{});

}  // namespace

bool avx512_conv_wins(const Conv2dShape& s) {
  const int64_t depth = s.kernel_h * s.kernel_w * (s.in_channels / s.group);
  const int64_t out = s.out_channels / s.group;
  const int64_t pixels = s.batch * s.out_height() * s.out_width();
  return avx512_gemm_available() && !s.is_depthwise() && pixels >= kMaxRows &&
         ((out >= 64 && depth >= 64) || (out >= 32 && depth >= 96 && (depth <= 448 || pixels >= 28 * 28)));
}

bool avx512_gemm_available() {
  static const bool available =
      __builtin_cpu_supports("avx512f") && std::getenv("CO_UP_NO_AVX512_GEMM") == nullptr;
  return available;
}

#else

bool avx512_gemm_available() { return false; }
bool avx512_conv_wins(const Conv2dShape&) { return false; }

#endif  // __x86_64__

// The shape alone, on every CPU (it matters only where avx512_conv_wins() is true).
bool xnnpack_1x1_expansion_wins(const Conv2dShape& s) {
  return s.kernel_h == 1 && s.kernel_w == 1 && s.group == 1 && s.stride_h == 1 && s.stride_w == 1 &&
         s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0 &&
         s.in_channels <= kMaxExpansionInputs && s.out_channels > s.in_channels && s.out_height() >= 7 && s.out_width() >= 7;
}

bool own_conv_runs(const Conv2dShape& s, bool fused) {
  return avx512_conv_wins(s) && (fused || !xnnpack_1x1_expansion_wins(s));
}

Avx512Convolution::Avx512Convolution(const Conv2dShape& s, const F32ConvParams& params,
                                     const float* x, float* y)
    : state_(std::make_unique<State>()) {
  if (!avx512_gemm_available()) {
    throw std::logic_error("Avx512Convolution: this CPU has no AVX-512 (check avx512_gemm_available())");
  }
  State& st = *state_;
  st.shape = s;
  st.taps = s.kernel_h * s.kernel_w;
  st.group_in = s.in_channels / s.group;
  st.group_out = s.out_channels / s.group;
  st.col_blocks = ceil_div(st.group_out, kCols);
  st.pixels = s.batch * s.out_height() * s.out_width();
  st.y = y;
  st.y_stride = params.output_stride > 0 ? params.output_stride : s.out_channels;
  if (st.y_stride < s.out_channels) {
    throw std::invalid_argument("Avx512Convolution: output_stride is smaller than the channel count");
  }
  st.residual = params.residual;
  st.chunk_bytes = params.chunk_bytes > 0 ? params.chunk_bytes : kChunkBytes;
  st.out_min = params.output_min;
  st.out_max = params.output_max;
  st.clamp_low = st.out_min > -std::numeric_limits<float>::infinity();
  st.clamp_high = st.out_max < std::numeric_limits<float>::infinity();
  st.silu = params.silu;
  st.hardswish = params.hardswish;

  const int64_t padded_cols = st.col_blocks * kCols;
  st.packed.assign(static_cast<size_t>(s.group * padded_cols * st.taps * st.group_in), 0.0f);
  st.bias.assign(static_cast<size_t>(s.group * padded_cols), 0.0f);
  for (int64_t g = 0; g < s.group; ++g) {
    for (int64_t m = 0; m < st.group_out; ++m) {
      const int64_t channel = g * st.group_out + m;
      const int64_t block = m / kCols, col = m % kCols;
      float* panel = st.packed.data() + (g * st.col_blocks + block) * kCols * st.taps * st.group_in;
      for (int64_t c = 0; c < st.group_in; ++c) {
        for (int64_t t = 0; t < st.taps; ++t) {
          const float v = params.weights[(channel * st.group_in + c) * st.taps + t];
          panel[(t * st.group_in + c) * kCols + col] = v;
        }
      }
      if (params.bias) st.bias[static_cast<size_t>(g * padded_cols + m)] = params.bias[channel];
    }
  }

  st.x = x;
  if (s.group == 1 && s.in_channels < kRowModeChannels && s.kernel_w > 1 && s.dilation_w == 1) {
    // Row mode: the (ky, kx, c) weight order above is (ky, [kx c]) with kW*C channels per tap.
    st.padded_height = s.in_height + s.pad_top + s.pad_bottom;
    st.padded_width = s.in_width + s.pad_left + s.pad_right;
    st.padded.assign(static_cast<size_t>(s.batch * st.padded_height * st.padded_width * s.in_channels), 0.0f);
    st.taps = s.kernel_h;
    st.group_in = s.kernel_w * s.in_channels;
    const int64_t oh = s.out_height(), ow = s.out_width();
    st.indirection.resize(static_cast<size_t>(st.pixels * st.taps));
    for (int64_t n = 0; n < s.batch; ++n) {
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          const int64_t p = (n * oh + oy) * ow + ox;
          for (int64_t ky = 0; ky < s.kernel_h; ++ky) {
            const int64_t iy = oy * s.stride_h + ky * s.dilation_h;  // in the padded image
            st.indirection[static_cast<size_t>(p * st.taps + ky)] =
                st.padded.data() + ((n * st.padded_height + iy) * st.padded_width + ox * s.stride_w) * s.in_channels;
          }
        }
      }
    }
  } else {
    st.zero_row.assign(static_cast<size_t>(s.in_channels), 0.0f);
    st.indirection = make_indirection(s, x, st.zero_row.data(), st.taps);
  }
  // Partial sums live in y between parts, so an in-place residual (y == residual) keeps one part.
  const bool may_split = st.padded.empty() && st.residual != st.y;
  const int64_t depth = st.taps * st.group_in;
  st.pairs = st.col_blocks >= 2 && (!st.padded.empty() || depth <= 128 || st.pixels >= kPairMinTiles * kPairRows);
  const int64_t max_depth = may_split && !st.pairs && depth > kSplitDepth ? kPartDepth : 0;
  st.parts = make_parts(st.taps, st.group_in, max_depth);
}

Avx512Convolution::~Avx512Convolution() = default;

void Avx512Convolution::run(const CpuPool& pool) const {
#if defined(__x86_64__)
  State& st = *state_;
  if (!st.padded.empty()) {
    // Row mode: this frame's input into the padded image's interior (borders stay zero), rows
    // over the pool (a 224x224 or 320x320 stem's copy of 0.6-1.2 MB took 2-4 % of its layer on
    // the caller alone).
    const Conv2dShape& s = st.shape;
    const int64_t row_floats = s.in_width * s.in_channels;
    pool.parallel_for(s.batch * s.in_height, 1, kMinParallelCopy / std::max<int64_t>(row_floats, 1) + 1,
                      [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r / s.in_height, y = r % s.in_height;
        std::memcpy(st.padded.data() + ((n * st.padded_height + y + s.pad_top) * st.padded_width + s.pad_left) * s.in_channels,
                    st.x + r * row_floats, static_cast<size_t>(row_floats) * sizeof(float));
      }
    });
  }
  const bool pairs = st.pairs;  // see kPairRows
  const int64_t tile_rows = pairs ? kPairRows : kMaxRows;
  const int64_t row_tiles = ceil_div(st.pixels, tile_rows);
  const int64_t step = pairs ? 2 : 1;  // blocks per tile
  const int64_t group_steps = ceil_div(st.col_blocks, step);
  const int64_t blocks = st.shape.group * group_steps;
  const int64_t panel = kCols * st.taps * st.group_in;  // floats of one block's packed weights
  // Pixels run in chunks whose input and output stay in L2 while every block of output channels
  // passes over them; inside a chunk items run block-major, so consecutive tiles of a thread
  // reuse one block of packed weights.
  const int64_t pixel_bytes = static_cast<int64_t>(sizeof(float)) * (st.shape.in_channels + st.shape.out_channels);
  const int64_t max_chunk_tiles = std::max<int64_t>(1, st.chunk_bytes / (pixel_bytes * tile_rows));
  const int64_t chunks = ceil_div(row_tiles, max_chunk_tiles);
  const int64_t chunk_tiles = ceil_div(row_tiles, chunks);
  // An item is a run of a chunk's tiles for one block, all parts of the reduction in turn (one
  // thread owns a tile's partial sums). With one part, a run is a quarter of a thread's share of
  // the chunk (dynamic scheduling balances them; one thread takes whole chunks), and its full
  // tiles go to the kernel in one call: a call per tile cost 5-10 % of a 1x1 layer with 64
  // input channels (ResNet50's 64 -> 256 at 56x56 and 28x28).
  const auto parts = static_cast<int64_t>(st.parts.size());
  const int64_t threads = pool.thread_count();
  const int64_t run_tiles = ceil_div(chunk_tiles, parts > 1 ? threads : threads == 1 ? 1 : 4 * threads);
  const int64_t runs = ceil_div(chunk_tiles, run_tiles);
  // How the threads claim the items' ranges (4 per thread). Where each range spans two passes
  // or more (many blocks of output channels: ResNet-50's stages 3 and 4), in order: a pass
  // prefetches the next block's weights (gb + 1), which a worker claiming from the back never
  // runs next (two threads: 15-20 % slower per layer that way). Where ranges are parts of one
  // pass (few blocks: MobileNet's and EfficientNet's projections), from both ends: each thread
  // keeps one half of the pixels and weights (in order: 10-20 % slower per layer).
  // docs/intra_op_threads.md, "ResNet-50's gap".
  const ClaimOrder order = chunks * blocks >= 8 * threads ? ClaimOrder::kInOrder : ClaimOrder::kBothEnds;
  // From both ends over several blocks per thread (GoogLeNet's 7x7 layers: 4-12 blocks of one
  // chunk of 7 tiles), one range per thread: four ranges each, the worker's taken from the back,
  // started three of its four passes on weights that no pass of its own had prefetched, and those
  // layers scaled 1.47-1.55x on two threads. One range each keeps every thread's passes in
  // sequence, each prefetching the next one's weights; each thread still keeps its half of the
  // weights, and a thread that comes late finds its range done by the other.
  const int64_t items = chunks * blocks * runs;
  const bool one_range_each = order == ClaimOrder::kBothEnds && parts == 1 && blocks >= 2 * threads;
  const auto run_items = [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t chunk = item / (blocks * runs);
      const int64_t gb = item / runs % blocks;
      const int64_t chunk_begin = chunk * chunk_tiles;
      const int64_t chunk_end = std::min(chunk_begin + chunk_tiles, row_tiles);
      const int64_t tile_begin = chunk_begin + item % runs * run_tiles;
      const int64_t tile_end = std::min(tile_begin + run_tiles, chunk_end);
      const int64_t group = gb / group_steps;
      const int64_t block = gb % group_steps * step;
      const int64_t vectors = std::min(step * kMaxVectors, ceil_div(st.group_out - block * kCols, 16));
      // A pass is one part of one block over tiles: the chunk's (one part) or this run's.
      const int64_t pass_begin = parts == 1 ? chunk_begin : tile_begin;
      const int64_t pass_tiles = (parts == 1 ? chunk_end : tile_end) - pass_begin;
      const int64_t next_gb = gb + 1 < blocks ? gb + 1 : (chunk + 1 < chunks ? 0 : -1);
      for (int64_t p = 0; p < parts; ++p) {
        const Part& part = st.parts[static_cast<size_t>(p)];
        // The pass after this one: the next part, else the next block's first part.
        const int64_t next_block = p + 1 < parts ? gb : next_gb;
        const Part& next_part = st.parts[static_cast<size_t>(p + 1 < parts ? p + 1 : 0)];
        // The run's tiles in as few calls as possible: one for the consecutive full tiles (with
        // one-block tiles, a pass's first tile alone: it prefetches nothing), one for a short
        // last tile.
        for (int64_t tile = tile_begin; tile < tile_end;) {
          const int64_t first = tile * tile_rows;
          const int64_t rows = std::min(tile_rows, st.pixels - first);
          const int64_t tile_in_pass = tile - pass_begin;
          const int64_t count =
              rows == tile_rows && (pairs || tile_in_pass > 0) ? std::min(tile_end, st.pixels / tile_rows) - tile : 1;
          Prefetch next;
          // The first block of a chunk reads the chunk's input from L3 or memory; a 1x1 layer's
          // tiles share no input lines, so nothing else brings them in early (ResNet50's
          // 256 -> 64 at 56x56: -7 to -15 %). 3x3 tiles re-read their neighbours' lines.
          next.input = gb == 0 && st.taps == 1;
          // Tiles 1..T-1 of a pass fetch the next pass's weights into L2 while they compute
          // (streaming from memory would otherwise stall the next pass's first tile). Two-block
          // tiles do not: their passes are long, and the prefetch's registers cost their loop.
          if (!pairs && tile_in_pass > 0 && next_block >= 0) {
            next.rows = st.packed.data() + next_block * panel +
                        (next_part.tap_begin * st.group_in + next_part.channel_begin) * kCols;
            next.row_count = (next_part.tap_end - next_part.tap_begin) * (next_part.channel_end - next_part.channel_begin);
            next.phase = tile_in_pass - 1;
            next.period = pass_tiles - 1;
          }
          const auto v = static_cast<size_t>(vectors - 1), r = static_cast<size_t>(rows - 1);
          const int variant = (next.input ? kInputAheadVariant : 0) |
                              (st.group_out - block * kCols >= 16 * vectors ? kFullBlockVariant : 0);
          const TileFn kernel = pairs ? kPairTiles[variant][v][r] : kTiles[variant][v][r];
          kernel(st, group, block, first, count, part, next);
          tile += count;
        }
      }
      if (st.hardswish) {  // every part of this run's tiles is summed: its outputs are final
        const int64_t first = tile_begin * tile_rows;
        hardswish_columns(st.y + first * st.y_stride + group * st.group_out + block * kCols, st.y_stride,
                          std::min(tile_end * tile_rows, st.pixels) - first,
                          std::min(step * kCols, st.group_out - block * kCols));
      }
    }
  };
  if (!one_range_each) {
    pool.parallel_for(items, 1, 2, run_items, order);
    return;
  }
  // The ranges are cut where the threads' shares of the work (output columns x pixels) are equal,
  // not of the items: where the last block is narrower (MobileNetV3's 112 outputs, 3.5 blocks;
  // GoogLeNet's 208, 6.5) equal halves of the items put a quarter-block more on one thread.
  const auto work_of = [&](int64_t item) {
    const int64_t chunk = item / (blocks * runs);
    const int64_t block = item / runs % blocks % group_steps * step;
    const int64_t tile_begin = std::min(chunk * chunk_tiles, row_tiles) + item % runs * run_tiles;
    const int64_t tile_end = std::min({tile_begin + run_tiles, (chunk + 1) * chunk_tiles, row_tiles});
    const int64_t pixels = std::min(tile_end * tile_rows, st.pixels) - std::min(tile_begin * tile_rows, st.pixels);
    return std::min(step * kCols, st.group_out - block * kCols) * pixels;
  };
  int64_t total = 0;
  for (int64_t item = 0; item < items; ++item) total += work_of(item);
  // The first item of thread t's range: where the work before it comes nearest t / threads.
  const auto range_begin = [&](int64_t t) {
    if (t == 0) return int64_t{0};
    if (t == threads) return items;
    const double target = double(total) * double(t) / double(threads);
    int64_t done = 0, item = 0;
    for (; item < items; ++item) {
      const int64_t next = done + work_of(item);
      if (double(next) > target) return double(next) - target < target - double(done) ? item + 1 : item;
      done = next;
    }
    return item;
  };
  pool.parallel_for(threads, 1, 2, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) run_items(range_begin(t), range_begin(t + 1));
  }, order);
#else
  (void)pool;
#endif
}

}  // namespace co_up::xnnpack
