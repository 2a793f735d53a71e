// try_submit of a frame given as one tensor per graph input (the form graphs of several inputs
// need), through the C++ and the C API: never blocks, reports a full queue, leaves the tensors with
// the caller whenever it does not take them, and refuses a wrong input count with its message.
// (The zoo and the ONNX importer make graphs of one input, so the list here holds one tensor.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "co_up/co_up.h"
#include "co_up/co_up.hpp"
#include "tests/api/api_test_support.h"

namespace co_up::test {
namespace {

TEST(ApiTrySubmit, ATensorListIsRefusedWhenFullAndKeptByTheCaller) {
  const ApiWorld world;
  SessionOptions options = world.options("");
  options.set_queue_capacity(2);
  Session session = Session::open_zoo(kNetwork, options);
  const std::vector<int64_t> shape = session.inputs().at(0).shape;

  for (uint32_t i = 0; i < 2; ++i) {
    std::vector<Tensor> frame;
    frame.push_back(random_input(shape, i));
    EXPECT_EQ(session.try_submit(std::move(frame)), SubmitStatus::kAccepted);
  }
  // Two frames in flight and none taken: full, at once, and the frame stays where it was.
  std::vector<Tensor> third;
  third.push_back(random_input(shape, 2));
  const float* values = third[0].data();
  EXPECT_EQ(session.try_submit(std::move(third)), SubmitStatus::kFull);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].data(), values);
  EXPECT_TRUE(bitwise_equal(third[0], random_input(shape, 2)));

  // A wrong number of inputs: Error(kInput), the tensors kept.
  std::vector<Tensor> two;
  two.push_back(random_input(shape, 3));
  two.push_back(random_input(shape, 4));
  try {
    session.try_submit(std::move(two));
    ADD_FAILURE() << "two inputs were taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_EQ(std::string(e.what()), "graph 'squeezenet' has 1 inputs but 2 were given");
  }
  EXPECT_EQ(two.size(), 2u);

  EXPECT_EQ(session.wait_result().frame, 0u);
  EXPECT_EQ(session.try_submit(std::move(third)), SubmitStatus::kAccepted);
  EXPECT_EQ(session.wait_result().frame, 1u);
  EXPECT_EQ(session.wait_result().frame, 2u);
  session.drain();
}

TEST(ApiTrySubmit, CApiNeverBlocksForAnyInputCount) {
  const ApiWorld world;
  co_up_options* options = nullptr;
  ASSERT_EQ(co_up_options_create(&options), nullptr);
  const std::pair<const char*, std::string> settings[] = {
      {"platform", world.platform.string()}, {"plugins", world.plugins.string()},
      {"image-size", std::to_string(kImageSize)}, {"queue-capacity", "1"}};
  for (const auto& [key, value] : settings) EXPECT_EQ(co_up_options_set(options, key, value.c_str()), nullptr);
  co_up_session* session = nullptr;
  ASSERT_EQ(co_up_session_open_zoo(kNetwork, options, &session), nullptr);
  co_up_options_release(options);

  const Tensor input = random_input(Session::open_zoo(kNetwork, world.options("")).inputs().at(0).shape, 5);
  co_up_tensor_view views[2] = {};
  for (co_up_tensor_view& v : views) {
    v.struct_size = sizeof(v);
    v.data = input.data();
    v.element_count = input.size();
    v.shape = input.shape().data();
    v.rank = input.shape().size();
  }
  int accepted = -1;
  EXPECT_EQ(co_up_session_try_submit(session, views, 1, nullptr, &accepted), nullptr);
  EXPECT_EQ(accepted, 1);
  EXPECT_EQ(co_up_session_try_submit(session, views, 1, nullptr, &accepted), nullptr);
  EXPECT_EQ(accepted, 0) << "the one slot is taken: full, not blocked";
  co_up_error* error = co_up_session_try_submit(session, views, 2, nullptr, &accepted);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(co_up_error_code_of(error), CO_UP_ERROR_INPUT);
  EXPECT_EQ(std::string(co_up_error_message(error)), "graph 'squeezenet' has 1 inputs but 2 were given");
  co_up_error_release(error);
  EXPECT_EQ(accepted, 0);
  co_up_result* result = nullptr;
  ASSERT_EQ(co_up_session_wait_result(session, &result), nullptr);
  co_up_result_release(result);
  EXPECT_EQ(co_up_session_drain(session), nullptr);
  co_up_session_release(session);
}

}  // namespace
}  // namespace co_up::test
