#include "ref_thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace co_up::reference {

ThreadPool::ThreadPool(int threads, std::span<const int> cores) : thread_count_(threads) {
  if (threads < 1) throw std::runtime_error("thread pool needs at least 1 thread, got " + std::to_string(threads));
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 0; i + 1 < threads; ++i) {
    try {
      workers_.emplace_back([this, i] { worker_loop(i + 1); });
    } catch (const std::system_error& e) {
      stop_workers();  // the destructor will not run: join what started
      throw std::runtime_error("failed to start worker thread " + std::to_string(i + 1) + ": " +
                               e.what());
    }
    if (cores.empty()) continue;
    const int core = cores[static_cast<size_t>(i + 1) % cores.size()];
    cpu_set_t set;
    CPU_ZERO(&set);
    int rc = EINVAL;
    if (core >= 0 && core < CPU_SETSIZE) {
      CPU_SET(core, &set);
      rc = pthread_setaffinity_np(workers_.back().native_handle(), sizeof(set), &set);
    }
    if (rc != 0) {
      stop_workers();
      throw std::runtime_error("failed to pin worker thread " + std::to_string(i + 1) + " to CPU " +
                               std::to_string(core) + ": " + std::strerror(rc) +
                               " (check the 'cores' list against the CPUs this process may use, "
                               "or pass option pin=off)");
    }
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void ThreadPool::worker_loop(int chunk) {
  uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const FunctionRef<void(int)>* job = job_;
    lock.unlock();
    std::exception_ptr error;
    try {
      (*job)(chunk);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

void ThreadPool::run(FunctionRef<void(int)> job) {
  std::lock_guard run_lock(run_mutex_);
  if (workers_.empty()) {
    job(0);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    pending_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  work_cv_.notify_all();
  std::exception_ptr error;
  try {
    job(0);
  } catch (...) {
    error = std::current_exception();
  }
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (!error) error = std::exchange(error_, nullptr);
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

void parallel_for(ThreadPool* pool, int64_t count, FunctionRef<void(int64_t, int64_t)> body) {
  if (count <= 0) return;
  const int threads = pool ? pool->thread_count() : 1;
  if (threads == 1 || count == 1) {
    body(0, count);
    return;
  }
  pool->run([&](int chunk) {
    const int64_t begin = count * chunk / threads;
    const int64_t end = count * (chunk + 1) / threads;
    if (begin < end) body(begin, end);
  });
}

}  // namespace co_up::reference
