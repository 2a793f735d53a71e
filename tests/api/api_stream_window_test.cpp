// The streaming window and the callback's thread: the default queue_capacity() is twice the
// pipeline's depth (sub-graphs plus receive buffers along the deepest path; one frame in switch
// mode), and results reach the callback one call at a time, in order, on a thread of the Session
// (the processor thread that completed them) that may feed the stream back with try_submit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "co_up/co_up.hpp"
#include "tests/api/api_test_support.h"

namespace co_up::test {
namespace {

std::string three_stages(const ApiWorld& world) {
  return three_stage_order(Session::open_zoo(kNetwork, world.options("")).order().size());
}

TEST(ApiStreamWindow, DefaultIsTwiceThePipelineDepth) {
  const ApiWorld world;
  const std::string order = three_stages(world);
  // Three sub-graphs, three receive buffers (the default) between neighbours: 1 + 3 + 1 + 3 + 1.
  EXPECT_EQ(Session::open_zoo(kNetwork, world.options(order)).queue_capacity(), 18u);
  SessionOptions shallower = world.options(order);
  shallower.set_buffers(2);  // 1 + 2 + 1 + 2 + 1 = 7
  EXPECT_EQ(Session::open_zoo(kNetwork, shallower).queue_capacity(), 14u);
  // One sub-graph holds one frame; switch mode holds one frame whatever the stages.
  EXPECT_EQ(Session::open_zoo(kNetwork, world.options("")).queue_capacity(), 2u);
  EXPECT_EQ(Session::open_zoo(kNetwork, world.options(order, Mode::kSwitch)).queue_capacity(), 2u);
  SessionOptions fixed = world.options(order);
  fixed.set_queue_capacity(5);
  EXPECT_EQ(Session::open_zoo(kNetwork, fixed).queue_capacity(), 5u);
}

TEST(ApiStreamWindow, CallbackRunsOneAtATimeInOrderAndMayTrySubmit) {
  const ApiWorld world;
  Session session = Session::open_zoo(kNetwork, world.options(three_stages(world)));
  const auto shape = session.inputs()[0].shape;
  constexpr uint64_t kTotal = 200;
  constexpr uint64_t kFirst = 8;  // submitted by the test; the callback submits the rest
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false}, on_submitter{false};
  std::atomic<uint64_t> fed{kFirst};
  std::mutex mutex;
  std::vector<uint64_t> frames;
  const std::thread::id submitter = std::this_thread::get_id();
  session.set_result_callback([&](Result r) {
    if (inside.fetch_add(1) != 0) overlapped = true;
    if (std::this_thread::get_id() == submitter) on_submitter = true;
    {
      std::lock_guard lock(mutex);
      frames.push_back(r.frame);
    }
    // Feeding the stream from the callback: the window has room (a result is being handed back).
    if (fed.load() < kTotal && session.try_submit(random_input(shape, 7)) == SubmitStatus::kAccepted) ++fed;
    inside.fetch_sub(1);
  });
  for (uint64_t f = 0; f < kFirst; ++f) session.submit(random_input(shape, 7));
  // Every result feeds one more frame until kTotal (in flight stays at kFirst + 1, below the
  // window, so try_submit has room); wait for all of them, or fail after a minute.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (true) {
    {
      std::lock_guard lock(mutex);
      if (frames.size() == kTotal) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "results stopped at " << frames.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  session.drain();
  EXPECT_FALSE(overlapped.load());
  EXPECT_FALSE(on_submitter.load());
  std::lock_guard lock(mutex);
  ASSERT_EQ(frames.size(), kTotal);
  for (uint64_t i = 0; i < kTotal; ++i) ASSERT_EQ(frames[i], i);
}

}  // namespace
}  // namespace co_up::test
