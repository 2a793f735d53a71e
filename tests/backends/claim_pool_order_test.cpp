// ClaimPool's claim order (backends/xnnpack/xnn_claim_pool.h): the caller claims chunks from the
// front and workers from the back, so on two threads each runs one contiguous part of a job —
// the caller a prefix, the worker the rest — whatever the timing; and the same chunks run exactly
// once as before. With ClaimOrder::kInOrder every thread runs its chunks in ascending order.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "xnn_claim_pool.h"

namespace {

using co_up::xnnpack::ClaimOrder;
using co_up::xnnpack::ClaimPool;
using Clock = std::chrono::steady_clock;

void busy_us(int us) {
  const auto until = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < until) {
  }
}

// Makes the caller and the worker share every job whatever the scheduling: each thread's first
// two chunks wait until the other thread has started as many, so each runs at least two chunks
// (a late worker would otherwise find the job done, and a loaded host decide the outcome).
class ShareGate {
 public:
  void enter(int thread) {
    const int mine = started_[thread].fetch_add(1);
    if (mine >= 2) return;
    while (started_[1 - thread].load() < mine + 1) std::this_thread::yield();
  }

 private:
  std::atomic<int> started_[2] = {0, 0};
};

TEST(ClaimPoolOrder, CallerRunsAPrefixAndTheWorkerTheRest) {
  const ClaimPool pool(1, {});
  const ClaimPool::Warm warm(pool);  // the worker polls between jobs, so it joins them early
  constexpr int kChunks = 16;
  int64_t jobs_shared = 0;  // jobs where the caller and the worker each ran at least two chunks
  for (int64_t jobs = 1; jobs <= 20; ++jobs) {
    std::vector<std::atomic<int>> runner(kChunks);
    for (auto& r : runner) r.store(-1);
    ShareGate gate;
    pool.run(kChunks, [&](int64_t i) {
      runner[static_cast<size_t>(i)].store(pool.thread_index());
      gate.enter(pool.thread_index());
      busy_us(50);
    });
    int first_worker_chunk = kChunks;
    for (int i = 0; i < kChunks; ++i) {
      const int who = runner[static_cast<size_t>(i)].load();
      ASSERT_GE(who, 0) << "chunk " << i << " of job " << jobs << " never ran";
      if (who != 0 && first_worker_chunk == kChunks) first_worker_chunk = i;
      if (i > first_worker_chunk) {
        ASSERT_NE(who, 0) << "job " << jobs << ": the caller ran chunk " << i << " after the worker ran chunk "
                          << first_worker_chunk << " (the caller should run a prefix, the worker the rest)";
      }
    }
    if (first_worker_chunk >= 2 && first_worker_chunk <= kChunks - 2) ++jobs_shared;
  }
  EXPECT_EQ(jobs_shared, 20) << "the caller and the worker shared only " << jobs_shared << " of 20 jobs";
}

// The own convolution prefetches the next chunk's weights: with kInOrder a worker must walk up,
// not down (with the workers' back claims this fails at the first job the two share).
TEST(ClaimPoolOrder, InOrderJobsRunAscendingOnEveryThread) {
  const ClaimPool pool(1, {});
  const ClaimPool::Warm warm(pool);
  constexpr int kChunks = 16;
  int64_t jobs_shared = 0;
  for (int job = 0; job < 20; ++job) {
    std::vector<std::atomic<int>> runner(kChunks);
    std::vector<std::atomic<int>> started(kChunks);  // global start sequence number
    std::atomic<int> sequence{0};
    for (auto& r : runner) r.store(-1);
    ShareGate gate;
    pool.run(kChunks, [&](int64_t i) {
      started[static_cast<size_t>(i)].store(sequence.fetch_add(1));
      runner[static_cast<size_t>(i)].store(pool.thread_index());
      gate.enter(pool.thread_index());
      busy_us(50);
    }, ClaimOrder::kInOrder);
    int worker_chunks = 0;
    for (int thread = 0; thread < 2; ++thread) {
      int last_chunk = -1;
      for (int i = 0; i < kChunks; ++i) {
        ASSERT_GE(runner[static_cast<size_t>(i)].load(), 0) << "chunk " << i << " never ran";
        if (runner[static_cast<size_t>(i)].load() != thread) continue;
        if (thread == 1) ++worker_chunks;
        if (last_chunk >= 0) {
          ASSERT_GT(started[static_cast<size_t>(i)].load(), started[static_cast<size_t>(last_chunk)].load())
              << "thread " << thread << " ran chunk " << i << " before chunk " << last_chunk;
        }
        last_chunk = i;
      }
    }
    if (worker_chunks >= 2 && worker_chunks <= kChunks - 2) ++jobs_shared;
  }
  EXPECT_EQ(jobs_shared, 20) << "the caller and the worker shared only " << jobs_shared << " jobs";
}

}  // namespace
