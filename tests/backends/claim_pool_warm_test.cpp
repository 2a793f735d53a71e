// ClaimPool::Warm (backends/xnnpack/xnn_claim_pool.h): while one lives, idle workers keep polling
// instead of going to sleep after their short spin, and creating one wakes workers that already
// sleep; once the last one is gone they sleep again. Jobs run exactly once throughout.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "xnn_claim_pool.h"

namespace {

using co_up::xnnpack::ClaimPool;
using Clock = std::chrono::steady_clock;

// Polls `condition` until it holds or `limit` passes (a loaded host may not run a worker for a
// while); returns whether it held.
template <typename F>
bool eventually(F condition, std::chrono::seconds limit = std::chrono::seconds(10)) {
  const auto until = Clock::now() + limit;
  while (Clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

void run_one_job(const ClaimPool& pool) {
  std::vector<std::atomic<int>> hits(16);
  pool.run(16, [&](int64_t i) { hits[static_cast<size_t>(i)].fetch_add(1); });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ClaimPoolWarm, WorkersSleepWhenIdleWithoutWarm) {
  const ClaimPool pool(2, {});
  run_one_job(pool);
  EXPECT_TRUE(eventually([&] { return pool.sleeping_workers() == 2; }))
      << "idle workers should sleep after their spin; " << pool.sleeping_workers() << " asleep";
}

TEST(ClaimPoolWarm, WarmWakesSleepersAndKeepsThemPolling) {
  const ClaimPool pool(2, {});
  ASSERT_TRUE(eventually([&] { return pool.sleeping_workers() == 2; }));
  std::optional<ClaimPool::Warm> warm;
  warm.emplace(pool);
  EXPECT_TRUE(eventually([&] { return pool.sleeping_workers() == 0; }))
      << "a Warm should wake the sleeping workers; " << pool.sleeping_workers() << " still asleep";
  // Far longer than a worker's idle spin, with and without jobs: nobody goes back to sleep.
  for (int i = 0; i < 5; ++i) {
    run_one_job(pool);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(pool.sleeping_workers(), 0) << "a worker slept while a Warm lived (round " << i << ")";
  }
  {
    const ClaimPool::Warm second(pool);  // nested: the count, not a flag
    warm.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(pool.sleeping_workers(), 0) << "a worker slept while the second Warm lived";
  }
  EXPECT_TRUE(eventually([&] { return pool.sleeping_workers() == 2; }))
      << "workers should sleep again once no Warm lives";
  run_one_job(pool);  // sleepers still get woken for a job
  pool.wait_for_workers_to_catch_up();
}

}  // namespace
