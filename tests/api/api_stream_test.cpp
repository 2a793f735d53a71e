// Streaming through the public API: results in submission order, none lost or duplicated, each
// bitwise equal to a synchronous run of the same input; back-pressure (try_submit reports full,
// submit blocks); a session destroyed with frames in flight stops cleanly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "co_up/co_up.hpp"
#include "tests/api/api_test_support.h"
#include "tests/sanitizer_size.h"

namespace co_up::test {
namespace {

using namespace std::chrono_literals;

// How many frames a stream test submits. ThreadSanitizer runs cpu-reference ~40x slower (83 s for
// 1,000 frames); the hand-offs a sanitizer checks are the same for every frame.
uint64_t stream_frames() { return size_for_this_build<uint64_t>("frames streamed", 1000, 250); }
constexpr uint32_t kDistinctInputs = 5;

struct StreamSetup {
  std::string order;
  std::vector<Tensor> inputs;     // kDistinctInputs of them
  std::vector<Tensor> expected;   // run() of each: what every streamed result must equal
};

StreamSetup prepare(const ApiWorld& world) {
  StreamSetup s;
  s.order = three_stage_order(Session::open_zoo(kNetwork, world.options("")).order().size());
  Session session = Session::open_zoo(kNetwork, world.options(s.order, Mode::kSwitch));
  for (uint32_t i = 0; i < kDistinctInputs; ++i) {
    s.inputs.push_back(random_input(session.inputs()[0].shape, 100 + i));
    s.expected.push_back(session.run(s.inputs.back()).at(0));
  }
  return s;
}

void stream_with_callback(const ApiWorld& world) {
  const uint64_t frames = stream_frames();
  const StreamSetup s = prepare(world);
  Session session = Session::open_zoo(kNetwork, world.options(s.order));
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> wrong{0};
  session.set_result_callback([&](Result r) {
    const uint64_t n = delivered.load();
    const auto tag = reinterpret_cast<uintptr_t>(r.user_data);
    if (r.frame != n || tag != n || r.outputs.size() != 1 ||
        !bitwise_equal(r.outputs[0], s.expected[n % kDistinctInputs])) {
      wrong.fetch_add(1);
    }
    delivered.store(n + 1);
  });
  for (uint64_t f = 0; f < frames; ++f) {
    session.submit(Tensor(s.inputs[f % kDistinctInputs]), reinterpret_cast<void*>(static_cast<uintptr_t>(f)));
  }
  session.drain();
  EXPECT_EQ(delivered.load(), frames);
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(session.in_flight(), 0u);
  const Profile p = session.profile();
  EXPECT_EQ(p.frames_completed, frames);
  EXPECT_EQ(p.order, s.order);
  ASSERT_EQ(p.subgraphs.size(), 3u);  // three stages
  EXPECT_EQ(p.subgraphs[1].processor, 'L');
}

TEST(ApiStream, ThousandFramesInOrderThroughCallbackOnCpuReference) {
  const ApiWorld world;
  stream_with_callback(world);
}

#ifdef CO_UP_XNNPACK_PLUGIN
TEST(ApiStream, ThousandFramesInOrderThroughCallbackOnCpuXnnpack) {
  const ApiWorld world("cpu-xnnpack", CO_UP_XNNPACK_PLUGIN);
  stream_with_callback(world);
}
#endif

TEST(ApiStream, ThousandFramesInOrderThroughWaitResultOnAnotherThread) {
  const uint64_t frames = stream_frames();
  const ApiWorld world;
  const StreamSetup s = prepare(world);
  Session session = Session::open_zoo(kNetwork, world.options(s.order));
  uint64_t wrong = 0;
  std::thread consumer([&] {
    for (uint64_t n = 0; n < frames; ++n) {
      // Frames are submitted from the other thread; wait until this one is.
      while (session.in_flight() == 0) std::this_thread::yield();
      const Result r = session.wait_result();
      if (r.frame != n || !bitwise_equal(r.outputs.at(0), s.expected[n % kDistinctInputs])) ++wrong;
    }
  });
  for (uint64_t f = 0; f < frames; ++f) session.submit(Tensor(s.inputs[f % kDistinctInputs]));
  consumer.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(session.in_flight(), 0u);
  session.drain();
  EXPECT_EQ(session.profile().frames_completed, frames);
  // After a drained stream, run() works again and still gives the same bits.
  EXPECT_TRUE(bitwise_equal(session.run(s.inputs[0]).at(0), s.expected[0]));
}

TEST(ApiStream, StreamsAfterDrainContinueTheNumberingAndStayCorrect) {
  const ApiWorld world;
  const StreamSetup s = prepare(world);
  SessionOptions options = world.options(s.order);
  options.set_queue_capacity(3);  // 7 frames per stream: each stream starts at another slot
  Session session = Session::open_zoo(kNetwork, options);
  std::mutex mutex;
  std::vector<uint64_t> frames;
  uint64_t wrong = 0;
  session.set_result_callback([&](Result r) {
    std::lock_guard lock(mutex);
    if (!bitwise_equal(r.outputs.at(0), s.expected[r.frame % kDistinctInputs])) ++wrong;
    frames.push_back(r.frame);
  });
  uint64_t submitted = 0;
  for (int stream = 0; stream < 3; ++stream) {
    for (int f = 0; f < 7; ++f, ++submitted) session.submit(Tensor(s.inputs[submitted % kDistinctInputs]));
    session.drain();
    EXPECT_EQ(session.profile().frames_completed, 7u);
  }
  std::lock_guard lock(mutex);
  ASSERT_EQ(frames.size(), 21u);
  for (uint64_t i = 0; i < frames.size(); ++i) EXPECT_EQ(frames[i], i);
  EXPECT_EQ(wrong, 0u);
}

TEST(ApiStream, TrySubmitReportsFullAndSubmitBlocksUntilAResultIsTaken) {
  const ApiWorld world;
  SessionOptions options = world.options("");
  options.set_queue_capacity(2);
  Session session = Session::open_zoo(kNetwork, options);
  ASSERT_EQ(session.queue_capacity(), 2u);
  const auto shape = session.inputs()[0].shape;
  session.submit(random_input(shape, 1));
  ASSERT_EQ(session.try_submit(random_input(shape, 2)), SubmitStatus::kAccepted);
  EXPECT_EQ(session.in_flight(), 2u);
  // Full: results not taken count as in flight, however long we wait.
  std::this_thread::sleep_for(50ms);
  Tensor kept = random_input(shape, 3);
  EXPECT_EQ(session.try_submit(std::move(kept)), SubmitStatus::kFull);
  EXPECT_EQ(kept.shape(), shape) << "a refused frame stays with the caller";
  EXPECT_TRUE(bitwise_equal(kept, random_input(shape, 3)));

  std::atomic<bool> returned{false};
  auto blocked = std::async(std::launch::async, [&] {
    session.submit(random_input(shape, 4));
    returned = true;
  });
  EXPECT_EQ(blocked.wait_for(300ms), std::future_status::timeout);
  EXPECT_FALSE(returned.load());
  const Result first = session.wait_result();
  EXPECT_EQ(first.frame, 0u);
  EXPECT_EQ(blocked.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(session.wait_result().frame, 1u);
  EXPECT_EQ(session.wait_result().frame, 2u);
  EXPECT_EQ(session.in_flight(), 0u);
  EXPECT_EQ(session.try_result(10ms), std::nullopt);
  try {
    session.wait_result();
    ADD_FAILURE() << "wait_result with nothing in flight must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no frame in flight"));
  }
}

TEST(ApiStream, RunWhileStreamingIsRefused) {
  const ApiWorld world;
  Session session = Session::open_zoo(kNetwork, world.options(""));
  const Tensor input = random_input(session.inputs()[0].shape, 1);
  session.submit(Tensor(input));
  try {
    session.run(input);
    ADD_FAILURE() << "run() with a frame in flight must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("drain()"));
  }
  session.wait_result();
  session.drain();
  EXPECT_EQ(session.run(input).size(), 1u);
}

TEST(ApiStream, DestroyingWithFramesInFlightStopsCleanly) {
  const ApiWorld world;
  const std::string order = three_stage_order(Session::open_zoo(kNetwork, world.options("")).order().size());
  for (int round = 0; round < 3; ++round) {
    std::atomic<uint64_t> delivered{0};
    const auto start = std::chrono::steady_clock::now();
    {
      SessionOptions options = world.options(order);
      options.set_queue_capacity(16);
      Session session = Session::open_zoo(kNetwork, options);
      if (round != 1) {
        session.set_result_callback([&](Result) {
          std::this_thread::sleep_for(1ms);  // a slow consumer: frames pile up
          delivered.fetch_add(1);
        });
      }
      const auto shape = session.inputs()[0].shape;
      for (uint32_t f = 0; f < 16; ++f) session.submit(random_input(shape, f));
      if (round == 2) std::this_thread::sleep_for(5ms);
      // Destroyed here with frames in the pipeline, results queued, a callback running.
    }
    EXPECT_LE(delivered.load(), 16u);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 60s);
  }
}

TEST(ApiStream, CallbackExceptionReachesTheNextCall) {
  const ApiWorld world;
  Session session = Session::open_zoo(kNetwork, world.options(""));
  session.set_result_callback([](Result) { throw std::runtime_error("consumer broke"); });
  session.submit(random_input(session.inputs()[0].shape, 1));
  try {
    session.drain();
    ADD_FAILURE() << "drain must report the callback's exception";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_EQ(std::string(e.what()), "the result callback threw: consumer broke");
  }
}

}  // namespace
}  // namespace co_up::test
