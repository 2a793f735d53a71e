// Session::run over caller-owned views: a view states how many floats it holds, and one that does
// not match its shape is refused before anything reads it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "co_up/co_up.hpp"
#include "tests/api/api_test_support.h"

namespace co_up::test {
namespace {

TEST(ApiTensorView, AViewWhoseCountDoesNotMatchItsShapeIsRefused) {
  const ApiWorld world;
  Session session = Session::open_zoo(kNetwork, world.options(""));
  const TensorInfo in = session.inputs().at(0);
  const Tensor input = random_input(in.shape, 9);
  const std::vector<Tensor> expected = session.run(input);

  const TensorView short_view{input.data(), input.shape(), input.size() - 1};
  try {
    session.run(std::span<const TensorView>(&short_view, 1));
    ADD_FAILURE() << "a short view was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_EQ(std::string(e.what()), "input '" + in.name + "' of shape " + Tensor::shape_text(in.shape) +
                                         " needs " + std::to_string(input.size()) + " values but the view has " +
                                         std::to_string(input.size() - 1));
  }

  const TensorView view{input.data(), input.shape(), input.size()};
  const std::vector<Tensor> outputs = session.run(std::span<const TensorView>(&view, 1));
  ASSERT_EQ(outputs.size(), expected.size());
  EXPECT_TRUE(bitwise_equal(outputs[0], expected[0]));
}

}  // namespace
}  // namespace co_up::test
