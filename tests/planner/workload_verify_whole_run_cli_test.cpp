// `co_up plan --workload --verify` predicts what it measures: with equal frame counts and requests
// as fast as possible, the plans are scored and the verify table's prediction is the simulator over
// that whole run (fill and drain included, the processor that finishes last); otherwise the steady
// state, and the output says which. Each row: predicted and measured requests/s, their ratio, on CPU %.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "core/workload.h"
#include "planner/contention_model.h"
#include "planner/synthetic_profile.h"
#include "planner/workload_planner.h"
#include "planner/workload_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/planner/two_network_profile.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

test::Exit plan_and_verify(const test::ScratchDir& dir) {
  return test::finish_process(
      test::spawn_process(CO_UP_BINARY,
                          {"plan", "--workload=" + (dir / "w.json").string(), "--profile=" + (dir / "p.json").string(),
                           "--verify"},
                          dir.path()),
      dir.path());
}

std::string two_decimals(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f", v);
  return buffer;
}

TEST(WorkloadVerifyWholeRun, EqualFramesArePredictedOverTheWholeRun) {
  test::ScratchDir dir;
  const planner::WorkloadProfile profile = two_network_profile();
  std::ofstream(dir / "p.json") << planner::workload_profile_json(profile);
  const std::string workload = R"({"networks": [
    {"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 9},
    {"name": "mb", "graph": "mobilenet", "image_size": 32, "frames": 9}]})";
  dir.write("w.json", workload);
  const test::Exit x = plan_and_verify(dir);
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  EXPECT_THAT(x.out, HasSubstr("\npredicted: the simulator over this run's frames (all requests at the start, fill "
                               "and drain included)\n"));
  EXPECT_THAT(x.out, HasSubstr("\n  every network 9 requests as fast as possible: plans are scored by the simulated "
                               "whole run (all requests at the start to the last completion) over 9 requests each\n"));
  // The same problem and planners here, scored by the whole run of 9 frames as the command does:
  // each plan's printed prediction and its verify row are that whole run.
  std::vector<std::string> notes;
  planner::WorkloadProblem problem =
      planner::workload_problem(profile, parse_workload_json(workload, "w.json", Orders::kOptional), notes);
  problem.simulation.whole_run = true;
  problem.simulation.cycles = 9;
  for (const planner::WorkloadPlannerRegistration& r : planner::workload_planner_registry()) {
    const planner::WorkloadPlan plan = r.create()->plan(problem);
    // The plan's cuts refer to its own pipeline order of the processors.
    const planner::WorkloadProblem staged = planner::reorder_stages(problem, plan.stage_letters);
    const double whole =
        planner::simulate(staged.networks, plan.cuts, plan.sequence, staged.interference, staged.simulation,
                          plan.replica_stages)
            .throughput_fps;
    std::smatch planned, row;
    const std::string out = x.out;
    ASSERT_TRUE(std::regex_search(out, planned, std::regex("\n" + std::string(r.name) + " +([0-9.]+) fps aggregate")))
        << r.name << "\n" << out;
    ASSERT_TRUE(std::regex_search(out, row, std::regex("\n" + std::string(r.name) + " +([0-9.]+) +([0-9.]+) +"
                                                       "([0-9.]+) +([0-9.]+) +18/18\n")))
        << r.name << "\n" << out;
    EXPECT_EQ(planned[1].str(), two_decimals(whole)) << r.name;
    EXPECT_EQ(row[1].str(), two_decimals(whole)) << r.name;
  }
  // Below the table, once, what the on-CPU column means; no ratio over it (it read as a second
  // measured/predicted).
  EXPECT_THAT(x.out, HasSubstr("\non CPU % = the processor threads' CPU time / the wall time of their sub-graph runs"));
  EXPECT_THAT(x.out, Not(HasSubstr("predicted x on CPU")));
}

TEST(WorkloadVerifyWholeRun, UnequalFramesKeepTheSteadyStateAndSaySo) {
  test::ScratchDir dir;
  std::ofstream(dir / "p.json") << planner::workload_profile_json(two_network_profile());
  dir.write("w.json", R"({"networks": [
    {"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 9},
    {"name": "mb", "graph": "mobilenet", "image_size": 32, "frames": 6}]})");
  const test::Exit x = plan_and_verify(dir);
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  EXPECT_THAT(x.out, HasSubstr("\npredicted: the simulator's steady state (rates, unequal frame counts or batches are "
                               "not modelled over a whole run)\n"));
  EXPECT_THAT(x.out, Not(HasSubstr("over this run's frames")));
  EXPECT_THAT(x.out, Not(HasSubstr("plans are scored by the simulated whole run")));
}

}  // namespace
}  // namespace co_up
