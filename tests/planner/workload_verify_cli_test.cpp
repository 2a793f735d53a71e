// `co_up plan --workload --verify` end to end: every plan is run by the multi-network runtime and
// the table gives, per plan, predicted and measured aggregate throughput, their ratio and the
// requests the run completed (all of them: the measurement comes from a real run).
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
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;

// Two zoo networks at image size 32 (their real layer counts), measured on B and L: a synthetic
// profile, so the predictions are arbitrary, but the plans are runnable on this host.
planner::WorkloadProfile two_network_profile() {
  planner::WorkloadProfile wp;
  wp.platform_name = "synthetic";
  wp.processors = "BL";
  const std::vector<std::pair<std::string, uint32_t>> nets = {{"squeezenet", 10}, {"mobilenet", 14}};
  for (size_t i = 0; i < nets.size(); ++i) {
    planner::SyntheticSpec s;
    s.layers = nets[i].second;
    s.processors = 2;
    s.seed = 20 + i;
    s.graph = nets[i].first;
    planner::WorkloadProfileNetwork n;
    n.name = i == 0 ? "sq" : "mb";
    n.graph = nets[i].first;
    n.image_size = 32;
    n.weight_bytes = 100'000;
    n.activation_bytes = 50'000;
    n.macs = 1'000'000;
    n.profile = planner::make_synthetic_profile(s);
    wp.networks.push_back(std::move(n));
  }
  for (int c = 0; c < 4; ++c) {
    const planner::WorkloadProfileNetwork& v = wp.networks[static_cast<size_t>(c % 2)];
    const planner::WorkloadProfileNetwork& a = wp.networks[static_cast<size_t>((c + 1) % 2)];
    wp.coruns.push_back({c, v.name, a.name, 'B', 'L', planner::features_of(v, 'B'), planner::features_of(a, 'L'), 100,
                         120.0 + c});
    wp.coruns.push_back({c, a.name, v.name, 'L', 'B', planner::features_of(a, 'L'), planner::features_of(v, 'B'), 100,
                         110.0 + c});
  }
  wp.contention = planner::ContentionModel::fit(wp.coruns);
  return wp;
}

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
  EXPECT_THAT(x.out, HasSubstr("\nplan             predicted fps  measured fps  measured/predicted  requests\n"));
  for (const char* name : {"alone-best", "band-greedy", "hetero2pipe-h", "hetero2pipe"}) {
    // The prediction printed with the plan above, and the verify row.
    std::smatch planned, row;
    const std::string out = x.out;
    ASSERT_TRUE(std::regex_search(out, planned, std::regex(std::string("\n") + name + " +([0-9.]+) fps aggregate")))
        << name << "\n" << out;
    ASSERT_TRUE(std::regex_search(
        out, row, std::regex(std::string("\n") + name + " +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9]+)/([0-9]+)\n")))
        << name << "\n" << out;
    const double predicted = std::stod(row[1]), measured = std::stod(row[2]), ratio = std::stod(row[3]);
    EXPECT_EQ(row[1].str(), planned[1].str()) << name;
    EXPECT_GT(measured, 0) << name;
    EXPECT_NEAR(ratio, measured / predicted, 0.01 * ratio + 0.002) << name;
    // Every request of both networks completed in the run the row measured.
    EXPECT_EQ(row[4].str(), "20") << name;
    EXPECT_EQ(row[5].str(), "20") << name;
  }
}

}  // namespace
}  // namespace co_up
