#include "xnn_thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#if defined(__SANITIZE_THREAD__)
#define CO_UP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CO_UP_TSAN 1
#endif
#endif
#if defined(CO_UP_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace co_up::xnnpack {
namespace {

// pthreadpool (Debian's build) is not instrumented: ThreadSanitizer cannot see that a job's
// dispatch happens before its tasks and that the tasks happen before parallelize returns, and would
// report every write our (instrumented) kernels make on a worker as racing with the caller's next
// read. These two calls state exactly those edges on the job object: the caller releases before
// dispatch and acquires after the join; each task acquires at its start and releases at its end.
// No-ops in other builds.
inline void tsan_release([[maybe_unused]] const void* job) {
#if defined(CO_UP_TSAN)
  __tsan_release(const_cast<void*>(job));
#endif
}
inline void tsan_acquire([[maybe_unused]] const void* job) {
#if defined(CO_UP_TSAN)
  __tsan_acquire(const_cast<void*>(job));
#endif
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct EveryThreadJob {
  const std::function<void(int)>* task;
  std::atomic<int> arrived{0};
  std::atomic<bool> timed_out{false};
  int threads = 0;
};

void run_on_thread(void* context, size_t index) {
  auto* job = static_cast<EveryThreadJob*>(context);
  tsan_acquire(job);
  job->arrived.fetch_add(1);
  // Wait until every thread holds one task: a thread busy here cannot take a second one, so the
  // tasks land on distinct threads. Bounded, so a pool that never starts a worker cannot hang us.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (job->arrived.load() < job->threads) {
    if (std::chrono::steady_clock::now() > deadline) {
      job->timed_out.store(true);
      tsan_release(job);
      return;
    }
    std::this_thread::yield();
  }
  (*job->task)(static_cast<int>(index));
  tsan_release(job);
}

}  // namespace

CpuPool::CpuPool(int threads, std::span<const int> cores, Schedule schedule)
    : threads_(threads), schedule_(schedule) {
  if (threads < 1) throw std::runtime_error("thread count must be >= 1");
  if (threads == 1) return;
  pool_ = pthreadpool_create(static_cast<size_t>(threads));
  if (!pool_) {
    throw std::runtime_error("pthreadpool_create(" + std::to_string(threads) +
                             ") failed (out of memory or thread limit reached)");
  }
  if (const size_t made = pthreadpool_get_threads_count(pool_); made != size_t(threads)) {
    pthreadpool_destroy(pool_);
    throw std::runtime_error("pthreadpool made " + std::to_string(made) + " threads instead of " +
                             std::to_string(threads));
  }
  if (!cores.empty()) pin_xnnpack_workers(cores);
  try {
    kernels_ = std::make_unique<ClaimPool>(threads - 1, cores);
  } catch (...) {
    pthreadpool_destroy(pool_);
    throw;
  }
}

void CpuPool::pin_xnnpack_workers(std::span<const int> cores) {
  // pthreadpool has no affinity API: every worker pins itself from inside a one-task-per-thread
  // job. The creating thread is not a worker (and is pinned, if at all, by whoever owns it).
  const pthread_t creator = pthread_self();
  std::atomic<int> failed_core{-1};
  std::atomic<int> failed_errno{0};
  try {
    on_every_thread([&](int index) {
      if (pthread_equal(pthread_self(), creator)) return;
      const int core = cores[static_cast<size_t>(index) % cores.size()];
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(core, &set);
      const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      if (rc != 0) {
        failed_core.store(core);
        failed_errno.store(rc);
      }
    });
  } catch (...) {
    pthreadpool_destroy(pool_);
    throw;
  }
  if (failed_core.load() >= 0) {
    pthreadpool_destroy(pool_);
    throw std::runtime_error("cannot pin a pool worker to CPU " + std::to_string(failed_core.load()) +
                             ": " + std::strerror(failed_errno.load()) +
                             " (is the core online and in this process's affinity mask?)");
  }
}

CpuPool::~CpuPool() {
  if (pool_) pthreadpool_destroy(pool_);
}

void CpuPool::on_every_thread(const std::function<void(int)>& task) const {
  if (threads_ == 1) {
    task(0);
    return;
  }
  EveryThreadJob job;
  job.task = &task;
  job.threads = threads_;
  tsan_release(&job);
  pthreadpool_parallelize_1d(pool_, &run_on_thread, &job, static_cast<size_t>(threads_), 0);
  tsan_acquire(&job);
  if (job.timed_out.load()) {
    throw std::runtime_error("pool threads did not all start within 20 s (machine overloaded?)");
  }
}

namespace {

std::vector<int> own_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

// Puts the caller's entry first; workers keep their order.
std::vector<std::vector<int>> caller_first(std::vector<std::vector<int>> result,
                                           const std::vector<int>& is_caller) {
  for (size_t i = 0; i < result.size(); ++i) {
    if (is_caller[i] && i != 0) std::swap(result[0], result[i]);
  }
  return result;
}

}  // namespace

std::vector<std::vector<int>> CpuPool::xnnpack_operator_affinities() const {
  std::vector<std::vector<int>> result(static_cast<size_t>(threads_));
  const pthread_t caller = pthread_self();
  std::vector<int> is_caller(static_cast<size_t>(threads_), 0);
  on_every_thread([&](int index) {
    result[static_cast<size_t>(index)] = own_affinity();
    is_caller[static_cast<size_t>(index)] = pthread_equal(pthread_self(), caller) ? 1 : 0;
  });
  return caller_first(std::move(result), is_caller);
}

std::vector<std::vector<int>> CpuPool::thread_affinities() const {
  if (!kernels_) return {own_affinity()};
  // Entry i for the pool's thread i (the caller 0, worker i - 1 at i), whichever chunk it took.
  std::vector<std::vector<int>> result(static_cast<size_t>(threads_));
  std::vector<int> filled(static_cast<size_t>(threads_), 0);
  std::atomic<int> arrived{0};
  std::atomic<bool> timed_out{false};
  kernels_->run(threads_, [&](int64_t) {
    // Wait until every thread holds one chunk: a thread busy here cannot claim a second one.
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < threads_) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out.store(true);
        return;
      }
      std::this_thread::yield();
    }
    const auto index = static_cast<size_t>(kernels_->thread_index());
    result[index] = own_affinity();
    filled[index] = 1;
  });
  if (timed_out.load() || std::count(filled.begin(), filled.end(), 1) != threads_) {
    throw std::runtime_error("pool threads did not all start within 20 s (machine overloaded?)");
  }
  return result;
}

void CpuPool::parallel_for(int64_t count, int64_t align, int64_t min_parallel,
                           const std::function<void(int64_t, int64_t)>& body, ClaimOrder order) const {
  if (count <= 0) return;
  if (threads_ == 1 || count < min_parallel) {
    body(0, count);
    return;
  }
  const int64_t blocks = ceil_div(count, align);
  // Static: one range per thread. Dynamic: four chunks per thread. Chunks go to whoever claims
  // them first, so the split (and so the bits) depends on count, align and the thread count only.
  // Near-equal chunks (their sizes differ by one block at most), as many as that allows: chunks
  // of one fixed size left a short last one and an odd count as often as not (42 tiles of a 1x1
  // convolution: 7 chunks of 6, so one thread ran 4 of them and the other 3).
  const int64_t per = schedule_ == Schedule::kStatic ? threads_ : threads_ * 4;
  const int64_t chunks = std::min(blocks, per);
  kernels_->run(chunks, [&](int64_t i) {
    const int64_t begin = std::min(count, blocks * i / chunks * align);
    const int64_t end = std::min(count, blocks * (i + 1) / chunks * align);
    if (begin < end) body(begin, end);
  }, order);
}

xnn_status CpuPool::run_operator(xnn_operator_t op, bool on_pool) const {
  if (!on_pool) return xnn_run_operator(op, nullptr);
#if defined(CO_UP_TSAN)
  const auto fence = [](int) {};
  if (threads_ > 1) on_every_thread(fence);
  const xnn_status status = xnn_run_operator(op, get());
  if (threads_ > 1) on_every_thread(fence);
  return status;
#else
  return xnn_run_operator(op, get());
#endif
}

}  // namespace co_up::xnnpack
