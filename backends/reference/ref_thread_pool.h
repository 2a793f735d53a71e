// Fixed-size worker pool of the cpu-reference backend: one per device, living as long as it.
//
// Threading contract: `run` may be called from several threads at once (a device serves several
// compiled sub-graphs); calls are serialised, so at most one job occupies the workers at a time.
// The calling thread always executes chunk 0 of a job and workers execute chunks 1..threads-1, so a
// pool of one thread starts no worker at all. Jobs must not call `run` on the same pool.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace co_up::reference {

// Non-owning reference to a callable, so a job costs no allocation (the pool runs one per node).
template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef>)
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): used like a function parameter
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

class ThreadPool {
 public:
  // Starts `threads - 1` workers. When `cores` is non-empty, worker i is pinned to
  // cores[(i + 1) % cores.size()] (the caller, chunk 0, is pinned by the runtime to cores[0..]).
  // Throws std::runtime_error when a worker cannot be pinned; no thread is left running then.
  ThreadPool(int threads, std::span<const int> cores);
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int thread_count() const { return thread_count_; }

  // Calls job(chunk) once for every chunk in [0, thread_count()) and returns when all are done.
  // An exception thrown by a chunk is rethrown here after every chunk finished.
  void run(FunctionRef<void(int)> job);

 private:
  void worker_loop(int chunk);
  void stop_workers();

  int thread_count_;
  std::mutex run_mutex_;  // serialises callers of run()

  // Hand-off state, all guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;  // bumped once per job; a worker runs each generation once
  int pending_ = 0;          // chunks of the current job not finished yet
  bool stopping_ = false;
  const FunctionRef<void(int)>* job_ = nullptr;
  std::exception_ptr error_;

  // Declared last: the threads use every member above and are joined before those die.
  std::vector<std::thread> workers_;
};

// Splits [0, count) into thread_count() contiguous ranges, range t = [count*t/T, count*(t+1)/T),
// and calls body(begin, end) for the non-empty ones. `pool` may be null (runs inline).
void parallel_for(ThreadPool* pool, int64_t count, FunctionRef<void(int64_t, int64_t)> body);

}  // namespace co_up::reference
