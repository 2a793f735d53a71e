// Direct textbook formulas for the operators of graph/op.h, in double precision, for checking
// backends. Deliberately slow and obvious: every loop follows the definition.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace co_up::testing {

struct NaiveConv {
  int64_t n = 1, c = 1, h = 1, w = 1, m = 1, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1, group = 1;
  int act = 0;  // 0 none, 1 relu, 2 relu6
  int64_t oh() const { return (h + pt + pb - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (kw - 1) - 1) / sw + 1; }
};

inline double naive_activate(double v, int act) {
  if (act == 1) return std::max(v, 0.0);
  if (act == 2) return std::min(std::max(v, 0.0), 6.0);
  return v;
}

// Returns y and, in out_magnitude, sum |terms| per element (the scale of its rounding error).
inline std::vector<double> naive_conv(const NaiveConv& s, const std::vector<float>& x,
                                      const std::vector<float>& wt, const std::vector<float>& b,
                                      std::vector<double>* out_magnitude) {
  const int64_t oh = s.oh(), ow = s.ow(), cg = s.c / s.group, mg = s.m / s.group;
  std::vector<double> y(static_cast<size_t>(s.n * s.m * oh * ow));
  out_magnitude->assign(y.size(), 0.0);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t m = 0; m < s.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const int64_t g = m / mg;
          double sum = b.empty() ? 0.0 : b[m];
          double mag = std::abs(sum);
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t ky = 0; ky < s.kh; ++ky)
              for (int64_t kx = 0; kx < s.kw; ++kx) {
                const int64_t iy = i * s.sh - s.pt + ky * s.dh;
                const int64_t ix = j * s.sw - s.pl + kx * s.dw;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                const double t = double(x[((n * s.c + g * cg + c) * s.h + iy) * s.w + ix]) *
                                 wt[((m * cg + c) * s.kh + ky) * s.kw + kx];
                sum += t;
                mag += std::abs(t);
              }
          const size_t o = static_cast<size_t>(((n * s.m + m) * oh + i) * ow + j);
          y[o] = naive_activate(sum, s.act);
          (*out_magnitude)[o] = mag;
        }
  return y;
}

struct NaivePool {
  int64_t n = 1, c = 1, h = 1, w = 1, kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil_mode = false, include_pad = false;
  static int64_t out(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t s, bool ceil_mode) {
    const double v = double(in + p0 + p1 - k) / double(s);
    int64_t o = int64_t(ceil_mode ? std::ceil(v) : std::floor(v)) + 1;
    if (ceil_mode && (o - 1) * s >= in + p0) --o;  // last window starts in the bottom padding
    return o;
  }
  int64_t oh() const { return out(h, pt, pb, kh, sh, ceil_mode); }
  int64_t ow() const { return out(w, pl, pr, kw, sw, ceil_mode); }
};

inline std::vector<double> naive_pool(const NaivePool& s, const std::vector<float>& x,
                                      bool average) {
  const int64_t oh = s.oh(), ow = s.ow();
  std::vector<double> y;
  for (int64_t p = 0; p < s.n * s.c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
        int64_t valid = 0, padded = 0;
        for (int64_t ky = 0; ky < s.kh; ++ky)
          for (int64_t kx = 0; kx < s.kw; ++kx) {
            const int64_t iy = i * s.sh - s.pt + ky, ix = j * s.sw - s.pl + kx;
            if (iy < s.h + s.pb && ix < s.w + s.pr) ++padded;  // inside the padded image
            if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
            const double v = x[(p * s.h + iy) * s.w + ix];
            best = std::max(best, v);
            sum += v;
            ++valid;
          }
        y.push_back(average ? sum / double(s.include_pad ? padded : valid) : best);
      }
  return y;
}

}  // namespace co_up::testing
