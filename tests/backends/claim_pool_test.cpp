// cpu-xnnpack's kernel pool (ClaimPool, used by CpuPool::parallel_for): every chunk runs exactly
// once, the caller finishes a job alone when no worker comes (a worker the OS has not scheduled
// never holds it up), late workers claim nothing of a finished job, errors reach the caller.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "xnn_claim_pool.h"
#include "xnn_thread_pool.h"

namespace {

using co_up::xnnpack::ClaimPool;
using co_up::xnnpack::CpuPool;
using co_up::xnnpack::Schedule;

// Runs f on another thread; fails (instead of hanging the suite) when it takes over `limit`.
template <typename F>
bool finishes_within(std::chrono::seconds limit, F f) {
  auto done = std::async(std::launch::async, f);
  if (done.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "did not finish within " << limit.count() << " s";
    std::abort();  // the job still runs on a pool we cannot tear down
  }
  done.get();
  return true;
}

TEST(ClaimPool, EveryChunkRunsOnceOverManyJobs) {
  for (int workers : {0, 1, 2, 3}) {
    const ClaimPool pool(workers, {});
    EXPECT_EQ(pool.worker_count(), workers);
    for (int job = 0; job < 2000; ++job) {
      const int64_t chunks = 1 + job % 37;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(chunks));
      pool.run(chunks, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < chunks; ++i) {
        ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
            << "chunk " << i << " of job " << job << ", " << workers << " workers";
      }
    }
  }
}

TEST(ClaimPool, CallerFinishesAloneWhileNoWorkerRuns) {
  const ClaimPool pool(1, {});
  std::vector<std::thread::id> ran_on(64);
  {
    const ClaimPool::Hold hold(pool);  // the worker is woken but cannot claim
    finishes_within(std::chrono::seconds(20), [&] {
      for (int job = 0; job < 50; ++job) {
        // run() is called from the async thread: it is the caller here.
        const auto me = std::this_thread::get_id();
        pool.run(64, [&](int64_t i) { ran_on[static_cast<size_t>(i)] = std::this_thread::get_id(); });
        for (const auto& id : ran_on) ASSERT_EQ(id, me);
      }
    });
  }
  // Released, the worker finds those jobs closed: once it has handled the newest one, it has run
  // none of their chunks (and never will).
  finishes_within(std::chrono::seconds(20), [&] { pool.wait_for_workers_to_catch_up(); });
  EXPECT_EQ(pool.chunks_run_by_workers(), 0);
}

TEST(ClaimPool, WorkersTakeChunksWhenTheyRun) {
  const ClaimPool pool(1, {});
  // Chunks long enough that a running worker claims some before the caller has taken them all.
  for (int attempt = 0; attempt < 20 && pool.chunks_run_by_workers() == 0; ++attempt) {
    pool.run(40, [](int64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
  }
  EXPECT_GT(pool.chunks_run_by_workers(), 0);
}

TEST(ClaimPool, AChunksExceptionReachesTheCallerAndThePoolGoesOn) {
  const ClaimPool pool(2, {});
  for (int job = 0; job < 20; ++job) {
    EXPECT_THROW(pool.run(16,
                          [&](int64_t i) {
                            if (i == job % 16) throw std::runtime_error("chunk failed");
                          }),
                 std::runtime_error);
    std::atomic<int> ran{0};
    pool.run(16, [&](int64_t) { ran.fetch_add(1); });
    EXPECT_EQ(ran.load(), 16);
  }
  EXPECT_THROW(pool.run(70000, [](int64_t) {}), std::invalid_argument);
}

TEST(ClaimPool, SeveralCallersShareOnePool) {
  const ClaimPool pool(1, {});
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int job = 0; job < 300; ++job) pool.run(8, [&](int64_t i) { total.fetch_add(i + 1); });
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 3 * 300 * 36);
}

// CpuPool's parallel_for on top of it: a held worker costs nothing but its share; the ranges
// (and so the bits a kernel writes) do not depend on who ran them.
TEST(ClaimPool, ParallelForCoversEveryItemWithAHeldWorker) {
  for (auto schedule : {Schedule::kStatic, Schedule::kDynamic}) {
    const CpuPool pool(2, {}, schedule);
    ASSERT_NE(pool.kernel_pool(), nullptr);
    std::vector<std::pair<int64_t, int64_t>> free_ranges, held_ranges;
    std::mutex m;
    auto record = [&](std::vector<std::pair<int64_t, int64_t>>& into) {
      return [&into, &m](int64_t b, int64_t e) {
        const std::lock_guard lock(m);
        into.emplace_back(b, e);
      };
    };
    pool.parallel_for(100003, 16, 1, record(free_ranges));
    {
      const ClaimPool::Hold hold(*pool.kernel_pool());
      finishes_within(std::chrono::seconds(20), [&] { pool.parallel_for(100003, 16, 1, record(held_ranges)); });
    }
    std::sort(free_ranges.begin(), free_ranges.end());
    std::sort(held_ranges.begin(), held_ranges.end());
    EXPECT_EQ(free_ranges, held_ranges);
    int64_t covered = 0;
    for (const auto& [b, e] : held_ranges) {
      EXPECT_EQ(b, covered);
      EXPECT_EQ(b % 16, 0);
      covered = e;
    }
    EXPECT_EQ(covered, 100003);
  }
}

// Entry i of thread_affinities() is the pool's thread i, whichever chunk it happened to claim.
TEST(ClaimPool, EveryWorkerOfBothPoolsRunsOnItsCore) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  const std::vector<int> cores{0, 1};
  const CpuPool pool(3, cores, Schedule::kDynamic);
  for (int attempt = 0; attempt < 20; ++attempt) {
    const auto kernels = pool.thread_affinities();
    ASSERT_EQ(kernels.size(), 3u);
    EXPECT_EQ(kernels[1], std::vector<int>{1}) << "attempt " << attempt;
    EXPECT_EQ(kernels[2], std::vector<int>{0}) << "attempt " << attempt;
  }
  const auto operators = pool.xnnpack_operator_affinities();
  ASSERT_EQ(operators.size(), 3u);
  EXPECT_EQ(operators[1], std::vector<int>{1});
  EXPECT_EQ(operators[2], std::vector<int>{0});
}

TEST(ClaimPool, BadWorkerCountsAndCoresAreRefused) {
  EXPECT_THROW(ClaimPool(-1, {}), std::runtime_error);
  const std::vector<int> no_such_core{0, 1023};
  try {
    const ClaimPool pool(1, no_such_core);
    FAIL() << "pinned a worker to CPU 1023";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot pin a pool worker to CPU 1023"), std::string::npos)
        << e.what();
  }
}

}  // namespace
