// --split's errors name the layer and what to do. Builds networks and runs no thread, so it is
// not in the ThreadSanitizer suite (where building the zoo's weights alone takes most of a minute).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/network.h"

namespace co_up {
namespace {

constexpr int64_t kSmallImage = 64;

TEST(SplitErrorsTest, SplitErrorsNameTheLayerAndWhatToDo) {
  auto error_of = [](const std::string& graph, const std::string& units, const std::string& split) {
    NetworkSpec spec{graph, units, kSmallImage, 7, ""};
    spec.split = split;
    try {
      build_network(spec);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  using ::testing::HasSubstr;
  EXPECT_THAT(error_of("alexnet", "layers", "1:2"), HasSubstr("grouped and depthwise"));
  EXPECT_THAT(error_of("alexnet", "layers", "8:2"), HasSubstr("the network has 8 layers"));
  EXPECT_THAT(error_of("alexnet", "layers", "5:1"), HasSubstr("give 2 or more"));
  EXPECT_THAT(error_of("alexnet", "layers", "5"), HasSubstr("is not LAYER:PARTS"));
  EXPECT_THAT(error_of("alexnet", "layers", "5:x"), HasSubstr("is not LAYER:PARTS"));
  EXPECT_THAT(error_of("alexnet", "layers", "5:2,"), HasSubstr("is not LAYER:PARTS"));
  EXPECT_THAT(error_of("alexnet", "layers", "5:2,5:3"), HasSubstr("names layer 5 twice"));
  EXPECT_THAT(error_of("alexnet", "layers", "7:2000"), HasSubstr("it has only 1000 output channels"));
  EXPECT_THAT(error_of("googlenet", "layers", "3:2"), HasSubstr("with --units=ops"));
  EXPECT_EQ(error_of("googlenet", "ops", "3:2"), "no error");
}

}  // namespace
}  // namespace co_up
