// The C API's streaming and ownership contract: results in submission order through the callback
// and through wait_result, try_submit reporting a full queue without taking the frame, errors as
// released objects (never exceptions), releasing a session with frames in flight.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "co_up/co_up.h"
#include "tests/api/api_test_support.h"

namespace co_up::test {
namespace {

using ::testing::HasSubstr;

struct CSession {
  explicit CSession(const ApiWorld& world, const char* queue_capacity = nullptr) {
    co_up_options* options = nullptr;
    EXPECT_EQ(co_up_options_create(&options), nullptr);
    EXPECT_EQ(co_up_options_set(options, "platform", world.platform.c_str()), nullptr);
    EXPECT_EQ(co_up_options_set(options, "plugins", world.plugins.c_str()), nullptr);
    EXPECT_EQ(co_up_options_set(options, "image-size", std::to_string(kImageSize).c_str()), nullptr);
    if (queue_capacity != nullptr) {
      EXPECT_EQ(co_up_options_set(options, "queue-capacity", queue_capacity), nullptr);
    }
    co_up_error* error = co_up_session_open_zoo(kNetwork, options, &session);
    co_up_options_release(options);
    EXPECT_EQ(error, nullptr) << co_up_error_message(error);
    co_up_error_release(error);
    const int64_t* shape = nullptr;
    size_t rank = 0;
    EXPECT_EQ(co_up_session_input_shape(session, 0, &shape, &rank), nullptr);
    input = random_input(std::vector<int64_t>(shape, shape + rank), 3);
    view = co_up_tensor_view{sizeof(co_up_tensor_view), input.data(), input.size(), input.shape().data(),
                             input.shape().size()};
  }
  ~CSession() { co_up_session_release(session); }
  co_up_session* session = nullptr;
  Tensor input;
  co_up_tensor_view view{};
};

TEST(CApi, WaitResultInOrderAndTrySubmitReportsFull) {
  const ApiWorld world;
  // What every streamed frame must return: the same input run synchronously in its own session.
  std::vector<float> expected;
  {
    CSession reference(world);
    co_up_result* result = nullptr;
    ASSERT_EQ(co_up_session_run(reference.session, &reference.view, 1, &result), nullptr);
    co_up_tensor_view out{};
    ASSERT_EQ(co_up_result_output(result, 0, &out), nullptr);
    expected.assign(out.data, out.data + out.element_count);
    co_up_result_release(result);
  }
  ASSERT_FALSE(expected.empty());
  CSession s(world, "2");
  ASSERT_EQ(co_up_session_submit(s.session, &s.view, 1, reinterpret_cast<void*>(10)), nullptr);
  int accepted = -1;
  ASSERT_EQ(co_up_session_try_submit(s.session, &s.view, 1, reinterpret_cast<void*>(11), &accepted), nullptr);
  EXPECT_EQ(accepted, 1);
  ASSERT_EQ(co_up_session_try_submit(s.session, &s.view, 1, reinterpret_cast<void*>(12), &accepted), nullptr);
  EXPECT_EQ(accepted, 0) << "two frames in flight with queue-capacity 2: full";
  for (uint64_t i = 0; i < 2; ++i) {
    co_up_result* result = nullptr;
    ASSERT_EQ(co_up_session_wait_result(s.session, &result), nullptr);
    EXPECT_EQ(co_up_result_frame(result), i);
    EXPECT_EQ(co_up_result_user_data(result), reinterpret_cast<void*>(10 + i));
    ASSERT_EQ(co_up_result_output_count(result), 1u);
    co_up_tensor_view out{};
    ASSERT_EQ(co_up_result_output(result, 0, &out), nullptr);
    EXPECT_EQ(std::vector<float>(out.data, out.data + out.element_count), expected) << "frame " << i;
    co_up_error* error = co_up_result_output(result, 1, &out);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(co_up_error_code_of(error), CO_UP_ERROR_INPUT);
    EXPECT_THAT(co_up_error_message(error), HasSubstr("output 1 does not exist"));
    co_up_error_release(error);
    co_up_result_release(result);
  }
  // Nothing in flight: an error, not a hang.
  co_up_result* none = nullptr;
  co_up_error* error = co_up_session_wait_result(s.session, &none);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(none, nullptr);
  EXPECT_THAT(co_up_error_message(error), HasSubstr("no frame in flight"));
  co_up_error_release(error);
  EXPECT_EQ(co_up_session_drain(s.session), nullptr);
  char* json = nullptr;
  ASSERT_EQ(co_up_session_profile_json(s.session, &json), nullptr);
  EXPECT_THAT(json, HasSubstr("\"frames_completed\": 2"));
  co_up_string_release(json);
}

struct Collected {
  std::vector<uint64_t> frames;
  std::vector<void*> user_data;
};

void collect(void* data, const co_up_result* result) {
  auto* c = static_cast<Collected*>(data);
  c->frames.push_back(co_up_result_frame(result));
  c->user_data.push_back(co_up_result_user_data(result));
}

TEST(CApi, CallbackGetsEveryFrameInOrder) {
  const ApiWorld world;
  CSession s(world);
  Collected collected;
  ASSERT_EQ(co_up_session_set_callback(s.session, collect, &collected), nullptr);
  for (uintptr_t f = 0; f < 50; ++f) {
    ASSERT_EQ(co_up_session_submit(s.session, &s.view, 1, reinterpret_cast<void*>(f)), nullptr);
  }
  ASSERT_EQ(co_up_session_drain(s.session), nullptr);
  ASSERT_EQ(collected.frames.size(), 50u);
  for (uint64_t f = 0; f < 50; ++f) {
    EXPECT_EQ(collected.frames[f], f);
    EXPECT_EQ(collected.user_data[f], reinterpret_cast<void*>(f));
  }
  // With a callback set, wait_result is refused with its reason.
  co_up_result* result = nullptr;
  co_up_error* error = co_up_session_wait_result(s.session, &result);
  ASSERT_NE(error, nullptr);
  EXPECT_THAT(co_up_error_message(error), HasSubstr("callback"));
  co_up_error_release(error);
}

TEST(CApi, ReleasingWithFramesInFlightAndNullArguments) {
  const ApiWorld world;
  {
    CSession s(world, "8");
    for (int f = 0; f < 8; ++f) ASSERT_EQ(co_up_session_submit(s.session, &s.view, 1, nullptr), nullptr);
  }  // released with frames in the pipeline and results not taken
  co_up_session_release(nullptr);
  co_up_options_release(nullptr);
  co_up_result_release(nullptr);
  co_up_error_release(nullptr);
  co_up_error* error = co_up_session_open_zoo(kNetwork, nullptr, nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(co_up_error_code_of(error), CO_UP_ERROR_INPUT);
  EXPECT_STREQ(co_up_error_message(error), "out_session is NULL");
  co_up_error_release(error);
  co_up_options* options = nullptr;
  ASSERT_EQ(co_up_options_create(&options), nullptr);
  error = co_up_options_set(options, "mode", "sideways");
  ASSERT_NE(error, nullptr);
  EXPECT_STREQ(co_up_error_message(error), "unknown mode 'sideways' (use --mode=pipeline, --mode=switch or --mode=overlap)");
  co_up_error_release(error);
  co_up_options_release(options);
}

}  // namespace
}  // namespace co_up::test
