// Input data for the kernel benchmarks: the same values on every run, so two builds or two
// kernels are timed on the same numbers.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace co_up::bench {

// `count` floats uniform in [-1, 1) from a fixed seed, and 64 more: kernels may read a vector
// past the last element.
inline std::vector<float> random_floats(size_t count) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count + 64);
  for (float& f : v) f = dist(rng);
  return v;
}

}  // namespace co_up::bench
