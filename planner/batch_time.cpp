#include "planner/batch_time.h"

#include <stdexcept>

namespace co_up::planner {

AffineBatchTime fit_affine_batch_time(const std::vector<BatchTime>& points) {
  double n = 0, sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const BatchTime& p : points) {
    if (p.batch == 0 || !(p.frame_us > 0)) throw std::invalid_argument("batch time: a point with batch 0 or no time");
    const double b = p.batch;
    n += 1;
    sb += b;
    st += p.frame_us;
    sbb += b * b;
    sbt += b * p.frame_us;
  }
  const double d = n * sbb - sb * sb;
  if (n < 2 || d <= 0) throw std::invalid_argument("batch time: needs two distinct batch sizes");
  AffineBatchTime f;
  f.per_request_us = (n * sbt - sb * st) / d;
  f.fixed_us = (st - f.per_request_us * sb) / n;
  return f;
}

uint32_t choose_batch(const std::vector<AffineBatchTime>& time, const std::vector<uint32_t>& candidates,
                      uint64_t frames) {
  if (time.empty() || frames == 0) return 1;
  const auto per_request = [&](uint32_t b) {
    const double frames_of_b = static_cast<double>((frames + b - 1) / b);
    double sum = 0;
    for (const AffineBatchTime& t : time) sum += frames_of_b * t.frame_us(b) / static_cast<double>(frames);
    return sum / static_cast<double>(time.size());
  };
  uint32_t best = 1;
  double best_us = per_request(1);
  for (uint32_t b : candidates) {
    if (b <= best || b > frames) continue;
    const double us = per_request(b);
    if (us <= best_us * (1 - kMinBatchGain)) {
      best = b;
      best_us = us;
    }
  }
  return best;
}

}  // namespace co_up::planner
