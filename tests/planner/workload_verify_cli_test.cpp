// `co_up plan --workload --verify` end to end: every plan is run by the multi-network runtime and
// the table gives, per plan, predicted and measured aggregate throughput, their ratio, the
// processor threads' on-CPU share and the requests the run completed (all of them: the measurement comes from a real run).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "planner/contention_model.h"
#include "planner/synthetic_profile.h"
#include "planner/workload_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/planner/two_network_profile.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;

TEST(WorkloadVerifyCli, RunsEveryPlanAndPrintsPredictedAgainstMeasured) {
  test::ScratchDir dir;
  std::ofstream(dir / "p.json") << planner::workload_profile_json(two_network_profile());
  dir.write("w.json", R"({"networks": [
    {"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 12},
    {"name": "mb", "graph": "mobilenet", "image_size": 32, "frames": 8}]})");
  const test::Exit x = test::finish_process(
      test::spawn_process(CO_UP_BINARY,
                          {"plan", "--workload=" + (dir / "w.json").string(), "--profile=" + (dir / "p.json").string(),
                           "--verify"},
                          dir.path()),
      dir.path());
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  EXPECT_EQ(x.err, "");
  EXPECT_THAT(x.out, HasSubstr("\nplan             predicted requests/s  measured requests/s  measured/predicted  "
                               "on CPU %  requests\n"));
  for (const char* name : {"alone-best", "band-greedy", "balanced", "hetero2pipe-h", "hetero2pipe"}) {
    // The prediction printed with the plan above, and the verify row.
    std::smatch planned, row;
    const std::string out = x.out;
    ASSERT_TRUE(std::regex_search(out, planned, std::regex(std::string("\n") + name + " +([0-9.]+) fps aggregate")))
        << name << "\n" << out;
    ASSERT_TRUE(std::regex_search(
        out, row, std::regex(std::string("\n") + name + " +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9]+)/([0-9]+)\n")))
        << name << "\n" << out;
    const double predicted = std::stod(row[1]), measured = std::stod(row[2]), ratio = std::stod(row[3]);
    // The processor threads' CPU time over their runs' wall time, in percent.
    EXPECT_GT(std::stod(row[4]), 0) << name;
    EXPECT_LE(std::stod(row[4]), 102) << name;
    EXPECT_EQ(row[1].str(), planned[1].str()) << name;
    EXPECT_GT(measured, 0) << name;
    EXPECT_NEAR(ratio, measured / predicted, 0.01 * ratio + 0.002) << name;
    // Every request of both networks completed in the run the row measured.
    EXPECT_EQ(row[5].str(), "20") << name;
    EXPECT_EQ(row[6].str(), "20") << name;
  }
}

}  // namespace
}  // namespace co_up
