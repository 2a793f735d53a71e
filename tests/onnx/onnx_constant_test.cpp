// Constant folding over ONNX constants follows numpy broadcasting, empty dimensions included.
#include <gtest/gtest.h>

#include <stdexcept>

#include "graph/onnx/onnx_constant.h"

namespace co_up::graph {
namespace {

TEST(OnnxConstantFold, BroadcastsSizeOneAgainstEveryDimension) {
  const OnnxConstant a = OnnxConstant::from_ints({2, 1}, {10, 20});
  const OnnxConstant b = OnnxConstant::from_ints({3}, {1, 2, 3});
  const OnnxConstant sum = fold_binary("Add", a, b);
  EXPECT_EQ(sum.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sum.i, (std::vector<int64_t>{11, 12, 13, 21, 22, 23}));
}

// A size-one dimension broadcast against an empty one yields an empty result (numpy: (1,) + (0,)
// is (0,)); taking the larger size read one element of an empty operand.
TEST(OnnxConstantFold, SizeOneAgainstEmptyDimensionIsEmpty) {
  const OnnxConstant one = OnnxConstant::from_ints({1}, {7});
  const OnnxConstant empty = OnnxConstant::from_ints({0}, {});
  for (const auto& [x, y] : {std::pair{&one, &empty}, std::pair{&empty, &one}}) {
    const OnnxConstant ints = fold_binary("Mul", *x, *y);
    EXPECT_EQ(ints.shape, (std::vector<int64_t>{0}));
    EXPECT_TRUE(ints.i.empty());
  }
  const OnnxConstant floats = fold_binary("Add", OnnxConstant::from_floats({1, 1}, {1.0f}),
                                          OnnxConstant::from_floats({2, 0}, {}));
  EXPECT_EQ(floats.shape, (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE(floats.f.empty());
}

TEST(OnnxConstantFold, RefusesShapesThatDoNotBroadcast) {
  EXPECT_THROW(fold_binary("Add", OnnxConstant::from_ints({2}, {1, 2}), OnnxConstant::from_ints({0}, {})),
               std::invalid_argument);
  EXPECT_THROW(fold_binary("Add", OnnxConstant::from_ints({2}, {1, 2}), OnnxConstant::from_ints({3}, {1, 2, 3})),
               std::invalid_argument);
}

}  // namespace
}  // namespace co_up::graph
