// CpuPool: the cpu-xnnpack backend's thread pools — one per device (= per CPU cluster), workers
// pinned to the cluster's cores:
//  - the backend's own kernels (parallel_for) run on a ClaimPool (xnn_claim_pool.h): chunks are
//    claimed from an atomic counter by whoever is running, so the caller never waits for a worker
//    that has not started (on a core shared with other processes that wait is a time slice);
//  - XNNPACK's operators take a pthreadpool (their only interface), whose join waits for every
//    worker. The f32 steps no longer give it to any: they cut XNNPACK's convolutions, fully
//    connected layers and element-wise passes into per-slice operators that run as chunks on
//    the ClaimPool (xnn_sliced_ops.h). npu-int8 still runs its int8 operators on it.
//
// Threading contract: every call may come from any thread; each pool serialises its parallel
// regions, so at most one job occupies its workers at a time (a device serves several compiled
// sub-graphs, possibly from several host threads). The calling thread takes part in every job as
// thread 0 and is pinned by the runtime, not by the pool.
#pragma once

#include <pthreadpool.h>
#include <xnnpack.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "xnn_claim_pool.h"

namespace co_up::xnnpack {

// How finely the backend's own kernels split their work. Either way chunks are claimed by whoever
// is running, so a late worker never holds the caller up (XNNPACK operators tile finely and let
// idle workers steal tiles whatever this says).
enum class Schedule : uint8_t {
  kStatic,   // one contiguous range per thread (paper §3.1, "static")
  kDynamic,  // four chunks per thread, claimed by idle threads (paper §3.1, "dynamic chunking";
             // the caller from the front, workers from the back: xnn_claim_pool.h)
};

class CpuPool {
 public:
  // Starts `threads - 1` workers. When `cores` is non-empty, worker i (1 <= i < threads) is pinned
  // to cores[i % cores.size()]; the caller (thread 0) runs on cores[0..] as the runtime pinned it.
  // Throws std::runtime_error when the pool cannot be created or a worker cannot be pinned.
  CpuPool(int threads, std::span<const int> cores, Schedule schedule);
  ~CpuPool();
  CpuPool(const CpuPool&) = delete;
  CpuPool& operator=(const CpuPool&) = delete;

  int thread_count() const { return threads_; }
  Schedule schedule() const { return schedule_; }
  // NULL for a single thread: XNNPACK then runs inline without touching a pool.
  pthreadpool_t get() const { return threads_ > 1 ? pool_ : nullptr; }

  // Calls body(begin, end) over [0, count) in ranges whose boundaries are multiples of `align`
  // (so vector/scalar loop splits fall at the same offsets for any thread count), split as the
  // schedule says. Below `min_parallel` items it runs inline on the caller. `order`: how the
  // threads claim the ranges (ClaimOrder; the ranges and so the bits are the same either way).
  void parallel_for(int64_t count, int64_t align, int64_t min_parallel,
                    const std::function<void(int64_t, int64_t)>& body,
                    ClaimOrder order = ClaimOrder::kBothEnds) const;

  // Runs one XNNPACK operator (created and set up with this pool, or with NULL when
  // `on_pool` is false: then it runs on the caller alone) on the pool's threads.
  // XNNPACK's tasks cannot be annotated, so in ThreadSanitizer builds every worker is fenced with
  // the caller before and after the operator (the edges pthreadpool makes but TSan cannot see).
  xnn_status run_operator(xnn_operator_t op, bool on_pool = true) const;

  // Keeps the kernels' workers polling while it lives (ClaimPool::Warm), so that no layer pays a
  // wake-up; a compiled sub-graph holds one for the whole of a run. Nothing for one thread.
  class Warm {
   public:
    explicit Warm(const CpuPool& pool) {
      if (pool.kernels_) warm_.emplace(*pool.kernels_);
    }

   private:
    std::optional<ClaimPool::Warm> warm_;
  };

  // ClaimPool::warm_until / end_warm_until on the kernels' pool; nothing for one thread.
  void warm_until(std::chrono::steady_clock::time_point deadline) const {
    if (kernels_) kernels_->warm_until(deadline);
  }
  void end_warm_until(std::chrono::steady_clock::time_point deadline) const {
    if (kernels_) kernels_->end_warm_until(deadline);
  }

  // For tests: runs one task on every thread of the kernels' pool at once (each waits until all
  // have started, so no thread runs two) and returns, per thread, the CPUs sched_getaffinity
  // reports from inside it; entry 0 is the calling thread. Throws std::runtime_error on timeout.
  // xnnpack_operator_affinities() does the same on the XNNPACK operators' pthreadpool.
  std::vector<std::vector<int>> thread_affinities() const;
  std::vector<std::vector<int>> xnnpack_operator_affinities() const;

  // The kernels' pool (NULL for a single thread), for tests.
  const ClaimPool* kernel_pool() const { return kernels_.get(); }

 private:
  // Pins pthreadpool's workers (worker i to cores[i % size]); destroys the pool and throws on failure.
  void pin_xnnpack_workers(std::span<const int> cores);
  // Runs task(thread_index) once on each of pthreadpool's threads, all concurrently.
  void on_every_thread(const std::function<void(int)>& task) const;

  int threads_;
  Schedule schedule_;
  pthreadpool_t pool_ = nullptr;
  std::unique_ptr<ClaimPool> kernels_;
};

}  // namespace co_up::xnnpack
