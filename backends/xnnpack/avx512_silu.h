// SiLU (x * sigmoid(x)) on 16 floats with AVX-512F, shared by the AVX-512 convolution's epilogue
// (avx512_conv.h, a Conv followed by SiLU) and the stand-alone SiLU step (xnn_silu.h): both
// compute it with this one function, so a result does not depend on whether a sub-graph boundary
// falls between the convolution and its SiLU.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace co_up::xnnpack {

// x / (1 + e^-x); e^-x as 2^n * p(r), x = n ln2 + r, |r| <= ln2 / 2, p the degree-6 Taylor
// polynomial (relative error < 2e-7), the argument clamped to [-87, 88] (so the sum never
// overflows to inf: large negative x give a tiny quotient, large positive x give x).
__attribute__((target("avx512f"))) inline __m512 silu_ps(__m512 x) {
  const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_sub_ps(_mm512_setzero_ps(), x), _mm512_set1_ps(-87.0f)),
                                 _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512 e = _mm512_scalef_ps(p, n);
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

}  // namespace co_up::xnnpack
#endif
