// ExitPolicy: the --exit specs it accepts, the one-line errors for the others, and its scores.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/exit_policy.h"

namespace co_up {
namespace {

std::string parse_error(const std::string& spec) {
  try {
    ExitPolicy::parse(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(ExitPolicyTest, ParsesEachFormIntoItsCanonicalSpelling) {
  EXPECT_EQ(ExitPolicy::parse("softmax-max>=0.9").describe(), "softmax-max>=0.9");
  EXPECT_EQ(ExitPolicy::parse("entropy<=0.3").describe(), "entropy<=0.3");
  EXPECT_EQ(ExitPolicy::parse("softmax-max>=0.8,0.90").describe(), "softmax-max>=0.8,0.9");
  EXPECT_EQ(ExitPolicy::parse("softmax-max>=0,1").thresholds(), (std::vector<double>{0, 1}));
  EXPECT_TRUE(ExitPolicy::parse("none").never_stops());
  EXPECT_TRUE(ExitPolicy().never_stops());
  EXPECT_EQ(ExitPolicy::parse("entropy<=0.25").criterion(), ExitPolicy::Criterion::kEntropy);
}

TEST(ExitPolicyTest, BadSpecsAreOneLineErrorsNamingTheSpec) {
  EXPECT_EQ(parse_error("softmax-max>=1.5"), "--exit='softmax-max>=1.5': threshold 1.5 is outside [0,1]");
  EXPECT_EQ(parse_error("entropy<=-0.1"), "--exit='entropy<=-0.1': threshold -0.1 is outside [0,1]");
  EXPECT_EQ(parse_error("softmax-max>=0.8,2"), "--exit='softmax-max>=0.8,2': threshold 2 is outside [0,1]");
  EXPECT_EQ(parse_error("softmax-max>=nan"), "--exit='softmax-max>=nan': threshold nan is outside [0,1]");
  EXPECT_EQ(parse_error("softmax-max>=high"),
            "--exit='softmax-max>=high': 'high' is not a number (each threshold is in [0,1], or off)");
  EXPECT_EQ(parse_error("softmax-max>=0.8,"),
            "--exit='softmax-max>=0.8,': '' is not a number (each threshold is in [0,1], or off)");
  EXPECT_EQ(parse_error("softmax-max<=0.9"),
            "--exit='softmax-max<=0.9': softmax-max takes >= (softmax-max>=T, T in [0,1])");
  EXPECT_EQ(parse_error("entropy>=0.3"), "--exit='entropy>=0.3': entropy takes <= (entropy<=T, T in [0,1])");
  EXPECT_EQ(parse_error("confidence>0.9"),
            "--exit='confidence>0.9' is not an exit policy (use softmax-max>=T, entropy<=T, a "
            "threshold per exit such as softmax-max>=0.8,0.9, or none; T in [0,1] or off)");
}

TEST(ExitPolicyTest, SoftmaxMaxReadsLogitsOrProbabilities) {
  const ExitPolicy policy = ExitPolicy::parse("softmax-max>=0.6");
  const std::vector<float> probabilities = {0.7f, 0.2f, 0.1f};
  EXPECT_NEAR(policy.score(probabilities), 0.7, 1e-6);
  EXPECT_TRUE(policy.stops(0, probabilities));
  const std::vector<float> logits = {2.0f, 0.0f, -1.0f};  // softmax max = e^2 / (e^2 + 1 + e^-1)
  EXPECT_NEAR(policy.score(logits), std::exp(2.0) / (std::exp(2.0) + 1 + std::exp(-1.0)), 1e-6);
  EXPECT_TRUE(policy.stops(0, logits));
  EXPECT_FALSE(policy.stops(0, std::vector<float>{0.5f, 0.5f}));
}

TEST(ExitPolicyTest, EntropyIsNormalisedAndThresholdsApplyPerExit) {
  const ExitPolicy policy = ExitPolicy::parse("entropy<=0.1,0.9");
  const std::vector<float> uniform = {0.25f, 0.25f, 0.25f, 0.25f};
  const std::vector<float> certain = {1.0f, 0.0f, 0.0f, 0.0f};
  EXPECT_NEAR(policy.score(uniform), 1.0, 1e-6);
  EXPECT_NEAR(policy.score(certain), 0.0, 1e-6);
  const std::vector<float> mostly = {0.85f, 0.05f, 0.05f, 0.05f};  // H / ln 4 = 0.4197...
  EXPECT_FALSE(policy.stops(0, mostly));
  EXPECT_TRUE(policy.stops(1, mostly));
  EXPECT_TRUE(policy.stops(0, certain));
}

// "off" keeps an exit from ever stopping a frame (a plan that uses only later exits), even for a
// one-hot output that any threshold in [0,1] would stop.
TEST(ExitPolicyTest, AnExitSwitchedOffNeverStopsAFrame) {
  const ExitPolicy policy = ExitPolicy::parse("softmax-max>=off,0.5");
  EXPECT_EQ(policy.describe(), "softmax-max>=off,0.5");
  const std::vector<float> certain = {1.0f, 0.0f, 0.0f};
  EXPECT_FALSE(policy.stops(0, certain));
  EXPECT_TRUE(policy.stops(1, certain));
  EXPECT_NO_THROW(policy.check_exit_count(3, "n"));
}

TEST(ExitPolicyTest, ThresholdCountMustFitTheExits) {
  EXPECT_NO_THROW(ExitPolicy::parse("softmax-max>=0.9").check_exit_count(4, "n"));
  EXPECT_NO_THROW(ExitPolicy::parse("softmax-max>=0.7,0.8,0.9").check_exit_count(4, "n"));
  EXPECT_NO_THROW(ExitPolicy::parse("none").check_exit_count(0, "n"));
  EXPECT_THROW(ExitPolicy::parse("softmax-max>=0.7,0.8").check_exit_count(4, "n"), InputError);
  EXPECT_THROW(ExitPolicy::parse("softmax-max>=0.7").check_exit_count(0, "n"), InputError);
}

}  // namespace
}  // namespace co_up
