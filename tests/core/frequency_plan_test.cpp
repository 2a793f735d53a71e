// --frequency syntax (ARM-CO-UP): per layer, per sub-graph, whole run, min/max.
#include <gtest/gtest.h>

#include "core/error.h"
#include "power/frequency_plan.h"

namespace co_up::power {
namespace {

TEST(FrequencyPlanTest, PaperExampleParses) {
  const FrequencyPlan plan = parse_frequency("7-4-6-[3,2]-[4,4]-1-1-1", "BBLGGNNN", "BLGN");
  ASSERT_EQ(plan.scope, FrequencyPlan::Scope::kPerLayer);
  ASSERT_EQ(plan.tokens.size(), 8u);
  EXPECT_EQ(plan.tokens[0].level, 7);
  EXPECT_EQ(plan.tokens[3].level, 3);
  EXPECT_EQ(plan.tokens[3].host_level, 2);
  EXPECT_FALSE(plan.tokens[5].host_level.has_value());
}

TEST(FrequencyPlanTest, OtherForms) {
  EXPECT_EQ(parse_frequency("", "BBL", "BL").scope, FrequencyPlan::Scope::kNone);
  EXPECT_EQ(parse_frequency("min", "BBL", "BL").scope, FrequencyPlan::Scope::kMin);
  EXPECT_EQ(parse_frequency("max", "BBL", "BL").scope, FrequencyPlan::Scope::kMax);
  const FrequencyPlan per_sg = parse_frequency("{3-[2,1]-0}", "BBGGN", "BGN");
  EXPECT_EQ(per_sg.scope, FrequencyPlan::Scope::kPerSubGraph);
  EXPECT_EQ(per_sg.tokens.size(), 3u);
  const FrequencyPlan whole = parse_frequency("{{4-5-2}}", "BBGGN", "BGN");
  EXPECT_EQ(whole.scope, FrequencyPlan::Scope::kWholeRun);
  EXPECT_EQ(whole.tokens[2].level, 2);
}

TEST(FrequencyPlanTest, MalformedStringsAreInputErrors) {
  for (const char* bad : {"1-2", "1-2-3-4", "1-[2,3]-1", "1-2-x", "1--2", "[1,2", "{1-2-3}",
                          "{{1-2}}", "{1-2", "1-2-3]", "-1-2-3", "1-2-[1]"}) {
    EXPECT_THROW(parse_frequency(bad, "BBL", "BL"), InputError) << bad;
  }
  EXPECT_THROW(parse_frequency("1-2-3", "BBG", "BG"), InputError) << "G needs [g,h]";
}

}  // namespace
}  // namespace co_up::power
