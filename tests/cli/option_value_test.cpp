// Option values the command line and SessionOptions read with one shared parser
// (core/option_value.h): a value outside the range, NaN included, is one line and exit 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/option_value.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up::test {
namespace {

TEST(OptionValue, MillisecondsRefuseNanInfinityAndOutOfRange) {
  EXPECT_EQ(parse_milliseconds_option("meter-window", "2.5", 10000), 2.5);
  EXPECT_EQ(parse_milliseconds_option("meter-window", "0", 10000), 0.0);
  for (const std::string bad : {"nan", "-nan", "inf", "-1", "10000.5", "", "5ms"}) {
    try {
      parse_milliseconds_option("meter-window", bad, 10000);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "--meter-window='" + bad +
                                           "' must be milliseconds, 0 to 10000 (0: instantaneous samples)");
    }
  }
}

TEST(OptionValue, ClusterAndProcessorLetter) {
  EXPECT_EQ(parse_cluster_option("host_gpu", "L"), 'L');
  EXPECT_THROW(parse_cluster_option("host_gpu", "G"), InputError);
  EXPECT_EQ(parse_processor_letter_option("npu_fallback", "G"), 'G');
  EXPECT_THROW(parse_processor_letter_option("npu_fallback", "BG"), InputError);
  EXPECT_THROW(parse_processor_letter_option("npu_fallback", "g"), InputError);
}

TEST(OptionValue, MeterWindowNanIsOneLineAtTheCommandLine) {
  const ScratchDir scratch;
  const CommandResult r =
      run_command(std::string(CO_UP_BINARY) + " --graph=squeezenet --meter-window=nan", scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "co_up: error: --meter-window='nan' must be milliseconds, 0 to 10000 (0: instantaneous samples)\n")
      << r;
}

}  // namespace
}  // namespace co_up::test
