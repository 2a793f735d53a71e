// ClaimPool: the workers that run cpu-xnnpack's own kernels. A job is a number of chunks; every
// participant (the caller and each worker) claims an unclaimed chunk from one atomic word until
// none is left (by default the caller from the front, workers from the back, so that on two
// threads each runs a contiguous half: the same rows or weight blocks in every layer, kept in its
// own cache; or every participant in order, ClaimOrder::kInOrder),
// and the caller then waits only for chunks that were claimed and are still running. A worker
// that the OS has not scheduled yet (another process holds its core) therefore costs nothing but
// its share of the parallelism: the caller takes its chunks, and when the worker finally runs it
// finds the job closed and goes back to sleep. (pthreadpool's join waits for every
// worker to check in, started or not, which on a shared core costs a scheduler time slice per
// parallel region.)
//
// Idle workers spin briefly (back-to-back layers of a frame arrive within microseconds), then
// sleep on a futex (std::atomic::wait) until the next job. While a Warm lives (a sub-graph's run
// holds one) they do not sleep: past the spin they keep polling but yield the core at every poll
// (on an idle core that is a spin; where other threads want the core they get it), and sleeping
// ones are woken at once. Then no layer of a frame pays a futex wake-up, not even after a stretch
// of work that ran on the caller alone.
//
// Threading contract: run() may be called from any thread; jobs are serialised by a mutex, one at
// a time. The body must not call run() on the same pool (it would wait for itself).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace co_up::xnnpack {

// Which chunk a worker claims next. kBothEnds: the caller from the front, workers from the back
// (each of two threads a contiguous half of the job, the same half in every job). kInOrder:
// everyone the lowest unclaimed chunk, so every participant runs its chunks in ascending order —
// for a body that prepares chunk i + 1 while it runs chunk i (the own convolution prefetches the
// next pass's weights: a worker walking down from the back found them cold at every chunk).
enum class ClaimOrder { kBothEnds, kInOrder };

class ClaimPool {
 public:
  // Starts `workers` threads (0 is allowed: every job then runs on the caller). When `cores` is
  // non-empty, worker i (0-based) is pinned to cores[(i + 1) % cores.size()], i.e. the pool's
  // thread i + 1 where the caller is thread 0. Throws std::runtime_error when a worker cannot be
  // started or pinned (the message names the core).
  ClaimPool(int workers, std::span<const int> cores);
  ~ClaimPool();
  ClaimPool(const ClaimPool&) = delete;
  ClaimPool& operator=(const ClaimPool&) = delete;

  int worker_count() const { return static_cast<int>(workers_.size()); }
  // The pool's thread index of the calling thread: 1 + i on worker i, 0 on any other thread.
  int thread_index() const;

  // Calls chunk(i) once for every i in [0, chunks), on the caller and on whichever workers come
  // (claiming as `order` says); returns when every call has returned. chunks must be < 65536.
  void run(int64_t chunks, const std::function<void(int64_t)>& chunk,
           ClaimOrder order = ClaimOrder::kBothEnds) const;

  // For tests: while the returned object lives, workers stop before claiming any chunk (as if the
  // OS had descheduled them), so run() must finish on the caller alone. A Hold must not outlive
  // its pool (it refers to it; and a worker held at destruction would never be joined).
  class Hold {
   public:
    explicit Hold(const ClaimPool& pool);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    const ClaimPool& pool_;
  };

  // While one lives, idle workers poll for the next job (yielding) instead of sleeping;
  // constructing it wakes the sleeping ones. Several may live at once (a counter). Must not outlive its pool.
  class Warm {
   public:
    explicit Warm(const ClaimPool& pool);
    ~Warm();
    Warm(const Warm&) = delete;
    Warm& operator=(const Warm&) = delete;

   private:
    const ClaimPool& pool_;
  };
  // A Warm with a deadline, for a hand-off that usually but not surely leads to a job (a frame's
  // input written before its run: a run that never comes must not keep the workers polling).
  // Idle workers poll as under a Warm until `deadline` (or a later one already set) passes, then
  // sleep again with no further call; sleeping ones are woken now. end_warm_until(deadline) ends
  // the hold early when `deadline` is still the one in force (a later one stays). One deadline per
  // pool: when two sub-graphs on it map inputs, the later one's run also ends the earlier one's
  // hold, which then pays one wake-up at its first layer (a cost, never a wrong result).
  void warm_until(std::chrono::steady_clock::time_point deadline) const;
  void end_warm_until(std::chrono::steady_clock::time_point deadline) const;

  // For tests: how many workers are asleep (waiting on the futex) right now.
  int sleeping_workers() const;

  // For tests: how many chunks the workers (not the caller) ran since the pool was created.
  int64_t chunks_run_by_workers() const;
  // For tests: returns once every worker has handled the newest job run() started (claimed what
  // it could of it, or found it closed), so that chunks_run_by_workers() holds all the workers
  // will ever run of the jobs so far. Never returns while a Hold lives; no run() meanwhile.
  void wait_for_workers_to_catch_up() const;

 private:
  struct State;
  void worker_loop(int index) const;
  // Claims and runs chunks of job `generation` until none is left (a chunk's exception is kept
  // for the caller of run()).
  void claim_and_run(uint32_t generation, bool on_worker) const;

  // State before workers: the threads use it until the destructor has joined them.
  std::unique_ptr<State> state_;
  std::vector<std::thread> workers_;
};

}  // namespace co_up::xnnpack
