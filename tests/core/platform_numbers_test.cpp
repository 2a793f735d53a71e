// Numbers in the JSON files co_up reads (platform, layer profile, --preprocess) go through one
// rule (core/json_input.h): integers must be JSON integers within their range, numbers finite
// and within theirs, and a file that is not JSON says where (line, column) — never a wrapped,
// truncated or rounded value, never nlohmann's raw exception text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/json_input.h"
#include "core/platform.h"
#include "graph/onnx/preprocess.h"
#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"
#include "tests/cli/scratch_dir.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string platform_error(const std::string& processor_fields, const std::string& top = "") {
  const std::string json = R"({"name": "x", )" + top + R"("processors": [{"letter": "B", "backend": "cpu-reference", )" +
                           processor_fields + "}]}";
  try {
    parse_platform(json, "platform 'x.json'");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(PlatformNumbers, IntegersOutsideTheirRangeAreRefusedWithTheKeyPath) {
  EXPECT_EQ(platform_error(R"("cores": [4294967296])"),
            "platform 'x.json': \"processors\"[0].\"cores\"[0] = 4294967296 is not a core number (0..1023)");
  EXPECT_EQ(platform_error(R"("cores": [0, -1])"),
            "platform 'x.json': \"processors\"[0].\"cores\"[1] = -1 is not a core number (0..1023)");
  EXPECT_EQ(platform_error(R"("cores": [0], "threads": 4294967297)"),
            "platform 'x.json': \"processors\"[0].\"threads\" = 4294967297 is not a thread count (1..1024)");
  EXPECT_EQ(platform_error(R"("cores": [0], "threads": 0)"),
            "platform 'x.json': \"processors\"[0].\"threads\" = 0 is not a thread count (1..1024)");
  EXPECT_THAT(platform_error(R"("cores": [0], "dvfs": {"node": "n", "frequencies_khz": [408000, 1e30]})"),
              HasSubstr("\"processors\"[0].\"dvfs\".\"frequencies_khz\"[1] = 1e+30 is not an integer"));
  EXPECT_THAT(platform_error(R"("cores": [0], "dvfs": {"node": "n", "frequencies_khz": [1, 2], "default_level": 3})"),
              HasSubstr("\"default_level\" = 3 is not a level of this table (1..2)"));
  EXPECT_THAT(platform_error(R"("cores": [0], "dvfs": {"node": "n", "frequencies_khz": [1, 2], "voltages_mv": [900, 4294967296]})"),
              HasSubstr("\"voltages_mv\"[1] = 4294967296 is not a voltage in mV (1..100000)"));
  EXPECT_THAT(platform_error(R"("cores": [0])", R"("gpio": {"chip": "c", "lines": [4294967313]}, )"),
              HasSubstr("\"gpio\".\"lines\"[0] = 4294967313 is not a line offset (0..65535)"));
}

TEST(PlatformNumbers, FractionsAreNotIntegers) {
  EXPECT_EQ(platform_error(R"("cores": [0], "threads": 1.9)"),
            "platform 'x.json': \"processors\"[0].\"threads\" = 1.9 is not an integer (a thread count, 1..1024)");
  EXPECT_THAT(platform_error(R"("cores": [0.5])"), HasSubstr("\"cores\"[0] = 0.5 is not an integer"));
  EXPECT_THAT(platform_error(R"("cores": ["0"])"), HasSubstr("\"cores\"[0] = \"0\" must be an integer"));
  EXPECT_THAT(platform_error(R"("cores": [0], "threads": 1e30)"),
              HasSubstr("\"threads\" = 1e+30 is not an integer (a thread count, 1..1024)"));
}

TEST(PlatformNumbers, RealNumbersMustBeFiniteAndInRange) {
  EXPECT_THAT(platform_error(R"("cores": [0], "power_model": {"alpha": -1})"),
              HasSubstr("\"power_model\".\"alpha\" = -1 is outside 0..1000000"));
  EXPECT_THAT(platform_error(R"("cores": [0], "power_model": {"alpha": 1, "beta": "x"})"),
              HasSubstr("\"power_model\".\"beta\" = \"x\" must be a number"));
  EXPECT_THAT(platform_error(R"("cores": [0])", R"("sensors": [{"name": "s", "kind": "power", "path": "p", "scale": -2}], )"),
              HasSubstr("\"sensors\"[0].\"scale\" = -2 is not a scale factor"));
  // Valid values are taken as written.
  const Platform p = parse_platform(R"({"name": "x", "processors": [{"letter": "B", "backend": "b",
      "cores": [1023], "threads": 1, "power_model": {"alpha": 0.5, "beta": 0.25},
      "dvfs": {"node": "n", "frequencies_khz": [408000, 1800000], "default_level": 2}}]})", "t");
  EXPECT_EQ(p.processors[0].cores, std::vector<int>{1023});
  EXPECT_EQ(p.processors[0].dvfs.default_level, 1);
  EXPECT_DOUBLE_EQ(p.processors[0].power_model.beta, 0.25);
}

TEST(PlatformNumbers, BrokenJsonIsOneLineWithLineAndColumn) {
  const std::string huge(5000, '9');
  const std::string e1 = platform_error("\n  \"cores\": [" + huge + "]");
  EXPECT_THAT(e1, HasSubstr("platform 'x.json': not valid JSON at line 2, column 13: number 99999"));
  EXPECT_THAT(e1, HasSubstr("... (5000 characters) is too large"));
  EXPECT_LT(e1.size(), 200u);
  EXPECT_THAT(e1, Not(HasSubstr("json.exception")));
  const std::string e2 = platform_error("\"cores\": [0],\n\n \"threads\": tru");
  EXPECT_THAT(e2, HasSubstr("platform 'x.json': not valid JSON at line 3, column "));
  EXPECT_THAT(e2, HasSubstr("invalid literal"));
  EXPECT_THAT(e2, Not(HasSubstr("json.exception")));
  EXPECT_EQ(e2.find('\n'), std::string::npos);
  // A string field holding a number: an InputError naming the file, not nlohmann's own exception.
  try {
    parse_platform(R"({"name": 5, "processors": [{"letter": "B", "backend": "b", "cores": [0]}]})",
                   "platform 'x.json'");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "platform 'x.json': a field has the wrong type (type must be string, but is number)");
  }
}

TEST(PlatformNumbers, LoadPlatformNamesTheFile) {
  test::ScratchDir dir;
  const auto file = dir.write("board.json", R"({"processors": [{"letter": "B", "backend": "b", "cores": [0], "threads": 2.0}]})");
  try {
    load_platform(file);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "platform '" + file.string() +
                                         "': \"processors\"[0].\"threads\" = 2.0 is not an integer (a thread count, 1..1024)");
  }
}

// The layer profile `co_up plan` reads: the same rule.
TEST(PlatformNumbers, LayerProfileNumbersFollowTheSameRule) {
  std::string text = planner::layer_profile_json(planner::make_synthetic_profile({}));
  const auto error_of = [](const std::string& t) -> std::string {
    try {
      planner::parse_layer_profile(t, "p.json");
    } catch (const InputError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  std::string wrapped = text;
  const size_t at = wrapped.find("\"repetitions\": ");
  ASSERT_NE(at, std::string::npos);
  wrapped.replace(at, wrapped.find(',', at) - at, "\"repetitions\": 4294967297");
  EXPECT_THAT(error_of(wrapped), HasSubstr("profile 'p.json': key 'repetitions' = 4294967297 is outside 1..2147483647"));
  std::string fraction = text;
  fraction.replace(at, fraction.find(',', at) - at, "\"repetitions\": 1.9");
  EXPECT_THAT(error_of(fraction), HasSubstr("key 'repetitions' = 1.9 is not an integer"));
  std::string huge = text;
  huge.replace(at, huge.find(',', at) - at, "\"repetitions\": 1" + std::string(400, '0'));
  EXPECT_THAT(error_of(huge), HasSubstr("profile 'p.json': not valid JSON at line "));
  EXPECT_THAT(error_of(huge), HasSubstr("(401 characters) is too large"));
}

TEST(PlatformNumbers, PreprocessNumbersFollowTheSameRule) {
  test::ScratchDir dir;
  graph::ImagePreprocess pre;
  pre.width = pre.height = 224;
  const auto error_of = [&](const std::string& text) -> std::string {
    try {
      graph::read_preprocess_json(dir.write("pre.json", text), pre);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  // 4294967520 would wrap to 224 as an int.
  EXPECT_THAT(error_of(R"({"size": 4294967520})"), HasSubstr("\"size\" = 4294967520 is not an image side in pixels"));
  EXPECT_THAT(error_of(R"({"size": [224, 224.5]})"), HasSubstr("\"size\"[1] = 224.5 is not an integer"));
  EXPECT_THAT(error_of(R"({"mean": [0, 0, 1e300]})"), HasSubstr("\"mean\"[2] = 1e+300 is not a pixel statistic"));
  EXPECT_THAT(error_of("{\"std\": [1, 1,\n 1e999]}"), HasSubstr("not valid JSON at line 2, column 2: number 1e999 is too large"));
  EXPECT_EQ(error_of(R"({"size": 224, "mean": [1, 2, 3]})"), "(accepted)");
}

}  // namespace
}  // namespace co_up
