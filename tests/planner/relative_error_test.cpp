// The relative error of a prediction: signed, and NaN (not 0, which would read as a perfect
// prediction) when there is no usable measurement.
#include "planner/relative_error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace co_up::planner {
namespace {

TEST(RelativeError, IsSignedAgainstTheMeasurement) {
  EXPECT_DOUBLE_EQ(relative_error(11.0, 10.0), 0.1);
  EXPECT_DOUBLE_EQ(relative_error(9.0, 10.0), -0.1);
  EXPECT_DOUBLE_EQ(relative_error(10.0, 10.0), 0.0);
}

TEST(RelativeError, IsNaNWithoutAPositiveMeasurement) {
  EXPECT_TRUE(std::isnan(relative_error(5.0, 0.0)));
  EXPECT_TRUE(std::isnan(relative_error(5.0, -1.0)));
  EXPECT_TRUE(std::isnan(relative_error(5.0, std::numeric_limits<double>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(relative_error(5.0, std::numeric_limits<double>::infinity())));
}

}  // namespace
}  // namespace co_up::planner
