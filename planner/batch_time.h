// Hetero2Pipe's affine batch time (papers/hetero2pipe.txt, VIII-D): a network's frame of b
// requests takes t(b) = a + b * c on a processor, fitted by least squares to whole-network frames
// profiled at a few batch sizes (co_up profile --workload). a is what a frame costs whatever its
// size (per-frame overheads, weights streamed once per frame, kernels too small for one request);
// c what each request adds. The planner batches a network where that cuts the time per request.
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace co_up::planner {

struct BatchTime {
  uint32_t batch = 1;
  double frame_us = 0;  // one frame of `batch` requests
};

struct AffineBatchTime {
  double fixed_us = 0;        // a
  double per_request_us = 0;  // c
  double frame_us(uint32_t batch) const { return fixed_us + per_request_us * batch; }
};

// Least squares over the points (at least two distinct batch sizes, every time > 0); throws
// std::invalid_argument otherwise.
AffineBatchTime fit_affine_batch_time(const std::vector<BatchTime>& points);

// A batch beats the next smaller candidate only when it cuts the predicted time per request by at
// least this fraction: a bigger frame costs latency and memory, so noise must not buy it.
inline constexpr double kMinBatchGain = 0.03;

// The batch for `frames` requests among `candidates` (ascending, starting at 1) that minimises the
// predicted time per request ceil(frames / b) * t(b) / frames (a last, partial batch is computed
// whole), taking a larger batch only for at least kMinBatchGain over the best smaller one. `time`
// holds one fit per processor the network may run on; per request costs are averaged over them.
uint32_t choose_batch(const std::vector<AffineBatchTime>& time, const std::vector<uint32_t>& candidates,
                      uint64_t frames);

}  // namespace co_up::planner
