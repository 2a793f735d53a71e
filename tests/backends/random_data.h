// Seeded uniform random tensors for kernel tests: the same seed gives the same values on every
// machine and run (std::mt19937 and uniform_real_distribution, as every such test used before).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace co_up::test {

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// Values in [-scale, scale).
inline std::vector<float> random_symmetric(size_t n, float scale, uint32_t seed) {
  return random_vector(n, seed, -scale, scale);
}

}  // namespace co_up::test
