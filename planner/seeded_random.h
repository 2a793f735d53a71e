// SeededRandom: the planners' random numbers, the same sequence for a seed on every standard
// library (std distributions are implementation-defined), so that plans are reproducible per seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

namespace co_up::planner {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n), n > 0 (modulo bias below 2^-40 for the sizes planners draw).
  size_t below(size_t n) { return static_cast<size_t>(engine_() % n); }
  // Uniform in [0, 1), 53 random bits.
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace co_up::planner
