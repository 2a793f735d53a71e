// CpuPool: the cpu-xnnpack backend's thread pool — one per device (= per CPU cluster), a
// pthreadpool whose workers are pinned to the cluster's cores, shared by XNNPACK operators and by
// the backend's own kernels.
//
// Threading contract: every call may come from any thread; pthreadpool serialises parallel
// regions, so at most one job occupies the workers at a time (a device serves several compiled
// sub-graphs, possibly from several host threads). The calling thread takes part in every job as
// thread 0 and is pinned by the runtime, not by the pool.
#pragma once

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace co_up::xnnpack {

// How the backend's own kernels split their work (XNNPACK operators always tile finely and let
// idle workers steal tiles, i.e. they are dynamic whatever this says).
enum class Schedule : uint8_t {
  kStatic,   // one contiguous range per thread (paper §3.1, "static")
  kDynamic,  // small chunks, idle threads take the next one (paper §3.1, "dynamic chunking")
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
  // schedule says. Below `min_parallel` items it runs inline on the caller.
  void parallel_for(int64_t count, int64_t align, int64_t min_parallel,
                    const std::function<void(int64_t, int64_t)>& body) const;

  // Runs one XNNPACK operator (created and set up with this pool) on the pool's threads.
  // XNNPACK's tasks cannot be annotated, so in ThreadSanitizer builds every worker is fenced with
  // the caller before and after the operator (the edges pthreadpool makes but TSan cannot see).
  xnn_status run_operator(xnn_operator_t op) const;

  // For tests: runs one task on every thread of the pool at once (each waits until all have
  // started, so no thread runs two) and returns, per thread, the CPUs sched_getaffinity reports
  // from inside it; entry 0 is the calling thread. Throws std::runtime_error on timeout.
  std::vector<std::vector<int>> thread_affinities() const;

 private:
  // Runs task(thread_index) once on each of the pool's threads, all concurrently.
  void on_every_thread(const std::function<void(int)>& task) const;

  int threads_;
  Schedule schedule_;
  pthreadpool_t pool_ = nullptr;
};

}  // namespace co_up::xnnpack
