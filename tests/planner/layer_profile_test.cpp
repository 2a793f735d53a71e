// Layer-profile reader and writer: round trip, atomic writes, and one clear error per defect.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "planner/cost_model.h"
#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"

namespace co_up::planner {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

Json synthetic_json() {
  SyntheticSpec spec;
  spec.layers = 4;
  spec.processors = 3;
  spec.levels = 2;
  spec.power = true;
  return Json::parse(layer_profile_json(make_synthetic_profile(spec)));
}

// Parses `j` and returns the InputError message ("" when it parsed).
std::string error_of(const Json& j) {
  try {
    parse_layer_profile(j.dump(), "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LayerProfile, RoundTripsThroughJson) {
  SyntheticSpec spec;
  spec.layers = 5;
  spec.processors = 4;
  spec.levels = 3;
  spec.power = true;
  const LayerProfile a = make_synthetic_profile(spec);
  const LayerProfile b = parse_layer_profile(layer_profile_json(a), "mem");
  EXPECT_EQ(layer_profile_json(a), layer_profile_json(b));
  EXPECT_EQ(b.network.layer_count, 5u);
  EXPECT_EQ(b.letters(), "BLGN");
  ASSERT_NE(b.find_layer_times('G', 2), nullptr);
  EXPECT_EQ(b.find_layer_times('G', 2)->median_us, a.find_layer_times('G', 2)->median_us);
  ASSERT_NE(b.find_transfer('B', 'N'), nullptr);
  EXPECT_EQ(b.find_transfer('B', 'N')->send_us.size(), 4u);
  EXPECT_TRUE(b.is_completed("layers:B:1"));
  EXPECT_EQ(b.find_power('L', 3)->busy_w, a.find_power('L', 3)->busy_w);
  EXPECT_EQ(b.network.split, "");
  LayerProfile split = a;
  split.network.split = "2:3";
  EXPECT_EQ(parse_layer_profile(layer_profile_json(split), "mem").network.split, "2:3");
}

TEST(LayerProfile, WritesAtomicallyAndReadsBack) {
  const auto dir = std::filesystem::temp_directory_path() / ("co_up_profile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "p.json";
  const LayerProfile a = make_synthetic_profile({});
  write_layer_profile(file, a);
  write_layer_profile(file, a);  // replacing an existing file
  EXPECT_EQ(layer_profile_json(read_layer_profile(file)), layer_profile_json(a));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u) << "no temporary file left behind";
  // A path that cannot be written is bad input, refused before anything is written.
  EXPECT_THROW(write_layer_profile(dir / "missing" / "p.json", a), InputError);
  std::filesystem::remove_all(dir);
}

TEST(LayerProfile, UnknownKeysAreIgnoredAndOptionalOnesMayBeAbsent) {
  Json j = synthetic_json();
  j["future"] = 1;
  j["network"]["future"] = "x";
  j.erase("transfers");
  j.erase("power_w");
  j.erase("completed");
  j["layer_times"][0].erase("mad_us");
  EXPECT_EQ(error_of(j), "");
}

TEST(LayerProfile, HandoffRoundTripsAndVersionOneProfilesLoadWithoutIt) {
  SyntheticSpec spec;
  spec.layers = 4;
  spec.processors = 3;
  spec.handoff_us = 200;
  const LayerProfile a = make_synthetic_profile(spec);
  ASSERT_EQ(a.handoffs.size(), 3u);  // BL, BG, LG
  const LayerProfile b = parse_layer_profile(layer_profile_json(a), "mem");
  ASSERT_NE(b.find_handoff('L', 'B'), nullptr);  // either order finds the pair
  EXPECT_EQ(b.find_handoff('L', 'B')->us, a.find_handoff('B', 'L')->us);
  EXPECT_EQ(Json::parse(layer_profile_json(a))["version"], 2);

  // A version 1 file (before hand-offs) reads as having none: the cost model counts 0 us per
  // boundary and says so, and a v1 file that has the key anyway is not refused.
  Json v1 = Json::parse(layer_profile_json(a));
  v1["version"] = 1;
  v1.erase("handoff_us");
  const LayerProfile old = parse_layer_profile(v1.dump(), "v1.json");
  EXPECT_TRUE(old.handoffs.empty());
  EXPECT_EQ(old.find_handoff('B', 'L'), nullptr);
  const CostModel model(old);
  EXPECT_EQ(model.handoff_us(0, 1), 0.0);
  EXPECT_THAT(model.warnings(), Contains(HasSubstr("no hand-off measured between B and L: counted as 0 us")));
  const CostModel with(b);
  EXPECT_EQ(with.handoff_us(0, 1), b.find_handoff('B', 'L')->us);
  EXPECT_THAT(with.warnings(), Not(Contains(HasSubstr("hand-off"))));
}

// The DAG model's pipeline costs: optional keys per pair, absent in older profiles.
TEST(LayerProfile, PipelineCostsRoundTripAndAreOptional) {
  SyntheticSpec spec;
  spec.layers = 4;
  spec.processors = 2;
  LayerProfile a = make_synthetic_profile(spec);
  EXPECT_EQ(layer_profile_json(a).find("pipeline_subgraph_us"), std::string::npos);
  a.set_pipeline_costs('B', 'L', 12.5, 3);
  const LayerProfile b = parse_layer_profile(layer_profile_json(a), "mem");
  ASSERT_NE(b.find_pipeline_subgraph('L', 'B'), nullptr);
  EXPECT_EQ(b.find_pipeline_subgraph('L', 'B')->us, 12.5);
  ASSERT_NE(b.find_pipeline_edge('B', 'L'), nullptr);
  EXPECT_EQ(b.find_pipeline_edge('B', 'L')->us, 3);
  EXPECT_EQ(Json::parse(layer_profile_json(a))["version"], 2);
  Json bad = Json::parse(layer_profile_json(a));
  bad["pipeline_subgraph_us"]["BL"] = -1;
  EXPECT_THROW(parse_layer_profile(bad.dump(), "bad.json"), InputError);
  // The work factor: optional too (a profile without it reads as 1), positive.
  EXPECT_EQ(layer_profile_json(a).find("pipeline_work_factor"), std::string::npos);
  EXPECT_EQ(b.find_pipeline_work_factor('B', 'L'), nullptr);
  a.set_pipeline_work_factor('L', 'B', 1.065);
  const LayerProfile c = parse_layer_profile(layer_profile_json(a), "mem");
  ASSERT_NE(c.find_pipeline_work_factor('B', 'L'), nullptr);
  EXPECT_EQ(c.find_pipeline_work_factor('B', 'L')->us, 1.065);
  Json zero = Json::parse(layer_profile_json(a));
  zero["pipeline_work_factor"]["LB"] = 0;
  EXPECT_THAT([&] {
    try {
      parse_layer_profile(zero.dump(), "zero.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  }(), HasSubstr("pipeline_work_factor.LB"));
}

TEST(LayerProfile, MissingFileAndBadJsonAreClear) {
  EXPECT_THAT(
      [] {
        try {
          read_layer_profile("/nonexistent/p.json");
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      AllOf(HasSubstr("/nonexistent/p.json"), HasSubstr("co_up profile")));
  try {
    parse_layer_profile("{\"format\": ", "p.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("p.json"), HasSubstr("not valid JSON")));
  }
}

TEST(LayerProfile, EachDefectNamesItsKey) {
  struct Case {
    const char* what;
    std::function<void(Json&)> edit;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"format", [](Json& j) { j["format"] = "other"; }, {"'format'", "co_up-layer-profile"}},
      {"version", [](Json& j) { j["version"] = 3; }, {"'version'", "is 3", "versions 1 to 2"}},
      {"hand-off pair", [](Json& j) { j["handoff_us"] = {{"BX", 5.0}}; }, {"handoff_us.BX", "'X'"}},
      {"hand-off one processor", [](Json& j) { j["handoff_us"] = {{"BB", 5.0}}; }, {"handoff_us.BB", "twice"}},
      {"hand-off key", [](Json& j) { j["handoff_us"] = {{"BLG", 5.0}}; }, {"handoff_us.BLG", "two processors"}},
      {"hand-off repeated", [](Json& j) { j["handoff_us"] = {{"BL", 5.0}, {"LB", 6.0}}; }, {"handoff_us.LB", "repeats"}},
      {"hand-off negative", [](Json& j) { j["handoff_us"] = {{"BL", -1.0}}; }, {"handoff_us.BL", ">= 0"}},
      {"missing network", [](Json& j) { j.erase("network"); }, {"'network'", "missing"}},
      {"layer count type", [](Json& j) { j["network"]["layer_count"] = "4"; }, {"network.layer_count", "integer"}},
      {"short times", [](Json& j) { j["layer_times"][1]["median_us"].erase(0); },
       {"layer_times[1].median_us", "3 entries", "expected 4"}},
      {"negative time", [](Json& j) { j["layer_times"][0]["median_us"][2] = -1.0; },
       {"layer_times[0].median_us[2]", ">= 0"}},
      {"long transfer", [](Json& j) { j["transfers"][0]["send_us"].push_back(1.0); },
       {"transfers[0].send_us", "4 entries", "expected 3"}},
      {"unknown transfer processor", [](Json& j) { j["transfers"][0]["to"] = "X"; },
       {"transfers[0].to", "'X'", "BLG"}},
      {"unknown timed processor", [](Json& j) { j["layer_times"][0]["processor"] = "N"; },
       {"layer_times[0].processor", "'N'"}},
      {"level beyond table", [](Json& j) { j["layer_times"][0]["level"] = 3; }, {"layer_times[0].level", "0..2"}},
      {"duplicate processor", [](Json& j) { j["platform"]["processors"][1]["letter"] = "B"; },
       {"platform.processors[1].letter", "repeats"}},
      {"wrong type", [](Json& j) { j["platform"]["processors"] = 3; }, {"platform.processors", "array"}},
      {"missing median", [](Json& j) { j["layer_times"][0].erase("median_us"); },
       {"layer_times[0].median_us", "missing"}},
      {"power level", [](Json& j) { j["power_w"][0]["busy_w"] = "hot"; }, {"power_w[0].busy_w", "number"}},
  };
  for (const Case& c : cases) {
    Json j = synthetic_json();
    c.edit(j);
    const std::string message = error_of(j);
    EXPECT_THAT(message, HasSubstr("profile 'p.json'")) << c.what;
    for (const std::string& needle : c.needles) EXPECT_THAT(message, HasSubstr(needle)) << c.what;
  }
}

TEST(LayerProfile, MismatchedNetworkSaysBoth) {
  const LayerProfile p = make_synthetic_profile({});  // graph "synthetic", 8 layers
  EXPECT_NO_THROW(check_profile_matches(p, "synthetic", "", "layers", 8));
  EXPECT_NO_THROW(check_profile_matches(p, "", "", "", 0));
  try {
    check_profile_matches(p, "alexnet", "", "", 0);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("--graph=synthetic"), HasSubstr("--graph=alexnet")));
  }
  try {
    check_profile_matches(p, "synthetic", "", "ops", 0);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("--units=layers"), HasSubstr("--units=ops")));
  }
  try {
    check_profile_matches(p, "synthetic", "", "", 9);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("8 layer units"), HasSubstr("has 9")));
  }
  EXPECT_THROW(check_profile_matches(p, "", "model.onnx", "", 0), InputError);
  LayerProfile m = p;
  m.network.graph.clear();
  m.network.model = "/data/models/net.onnx";
  EXPECT_NO_THROW(check_profile_matches(m, "", "net.onnx", "", 0));  // same file name
  EXPECT_THROW(check_profile_matches(m, "", "other.onnx", "", 0), InputError);
}

TEST(LayerProfile, MissingProcessorIsNamed) {
  const LayerProfile p = make_synthetic_profile({});  // B, L, G
  EXPECT_NO_THROW(check_profile_has_processors(p, "BBLG"));
  try {
    check_profile_has_processors(p, "BBN");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'N'"), HasSubstr("BLG")));
  }
}

}  // namespace
}  // namespace co_up::planner
