// `co_up plan --workload` end to end: the real binary on a synthetic workload profile; the
// written workload files, never replacing one, and one-line errors for bad workloads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "core/workload.h"
#include "planner/contention_model.h"
#include "planner/synthetic_profile.h"
#include "planner/workload_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Three networks on B, L, G; co-runs whose slowdown grows with traffic, G|B heavy.
planner::WorkloadProfile synthetic_workload_profile() {
  planner::WorkloadProfile wp;
  wp.platform_name = "synthetic";
  wp.processors = "BLG";
  const std::vector<std::pair<std::string, std::string>> nets = {{"det", "resnet50"}, {"cls", "mobilenet"}, {"sq", "squeezenet"}};
  for (size_t i = 0; i < nets.size(); ++i) {
    planner::SyntheticSpec s;
    s.layers = static_cast<uint32_t>(6 + 2 * i);
    s.processors = 3;
    s.seed = 10 + i;
    s.graph = nets[i].second;
    planner::WorkloadProfileNetwork n;
    n.name = nets[i].first;
    n.graph = nets[i].second;
    n.weight_bytes = static_cast<int64_t>(1'000'000 * (i + 1));
    n.activation_bytes = 500'000;
    n.macs = static_cast<int64_t>(100'000'000 / (i + 1));
    n.profile = planner::make_synthetic_profile(s);
    wp.networks.push_back(std::move(n));
  }
  int corun = 0;
  for (const auto& [p, q] : std::vector<std::pair<char, char>>{{'B', 'L'}, {'B', 'G'}, {'L', 'G'}}) {
    for (size_t a = 0; a < 3; ++a) {
      const size_t b = (a + 1) % 3;
      planner::CoRunSample s{corun++, wp.networks[a].name, wp.networks[b].name, p, q,
                             planner::features_of(wp.networks[a], p), planner::features_of(wp.networks[b], q), 1000, 0};
      const double base = (p == 'B' && q == 'G') || q == 'G' ? 0.4 : 0.05;
      s.corun_us = 1000 * (1 + base + 0.01 * static_cast<double>(a));
      wp.coruns.push_back(s);
      std::swap(s.victim, s.aggressor);
      std::swap(s.victim_processor, s.aggressor_processor);
      std::swap(s.victim_features, s.aggressor_features);
      s.corun_us = 1000 * (1 + base + 0.02 * static_cast<double>(b));
      wp.coruns.push_back(s);
    }
  }
  auto [fitted, held] = planner::split_held_out(wp.coruns, 3);
  wp.contention = planner::ContentionModel::fit(fitted);
  wp.held_out_error = planner::held_out_error(*wp.contention, held);
  for (const planner::CoRunSample& s : held) {
    if (wp.held_out_coruns.empty() || wp.held_out_coruns.back() != s.corun) wp.held_out_coruns.push_back(s.corun);
  }
  return wp;
}

constexpr const char* kWorkload = R"({"networks": [
  {"name": "det", "graph": "resnet50", "frames": 40, "rate": 5.5, "priority": 2},
  {"name": "cls", "graph": "mobilenet"},
  {"name": "sq", "graph": "squeezenet", "batch": 2}]})";

class WorkloadPlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "p.json") << planner::workload_profile_json(synthetic_workload_profile());
    dir_.write("w.json", kWorkload);
  }
  test::Exit run(std::vector<std::string> args) { return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_.path()), dir_.path()); }
  void expect_input_error(const test::Exit& x, const std::string& message) {
    EXPECT_EQ(x.code, 2) << x.out << x.err;
    EXPECT_EQ(x.err, "co_up: error: " + message + "\n");
  }
  test::ScratchDir dir_;
};

TEST_F(WorkloadPlanCli, PrintsEveryPlannerAndWritesRunnableWorkloads) {
  const fs::path out = dir_ / "plans";
  const test::Exit x = run({"plan", "--workload=" + (dir_ / "w.json").string(), "--profile=" + (dir_ / "p.json").string(),
                            "--out=" + out.string()});
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  for (const char* name : {"alone-best", "band-greedy", "balanced", "hetero2pipe-h", "hetero2pipe"}) {
    EXPECT_THAT(x.out, HasSubstr(std::string("\n") + name)) << x.out;
    const fs::path file = out / (std::string(name) + ".json");
    ASSERT_TRUE(fs::is_regular_file(file)) << file;
    // Runnable: every order present and of the network's length; nothing of the user's lost.
    const Workload w = read_workload(file.string(), Orders::kRequired);
    EXPECT_EQ(w.policy, GroupPolicy::kPlan);
    // Affinity exactly where every network (and replica) runs whole on one processor.
    bool all_whole = true;
    for (const WorkloadNetwork& n : w.networks) {
      all_whole = all_whole && n.order.find_first_not_of(n.order.front()) == std::string::npos;
      for (const std::string& r : n.replicas) all_whole = all_whole && r.find_first_not_of(r.front()) == std::string::npos;
    }
    EXPECT_EQ(w.affinity, all_whole) << name;
    if (std::string(name) == "alone-best") {
      EXPECT_TRUE(w.affinity) << "each network alone on one processor";
    }
    EXPECT_EQ(w.mode, Mode::kPipeline);
    // The planned request order, one request of each network per cycle; the networks as listed.
    EXPECT_EQ(std::set<std::string>(w.plan.begin(), w.plan.end()), (std::set<std::string>{"det", "cls", "sq"}));
    EXPECT_EQ(w.plan.size(), 3u);
    EXPECT_THAT(x.out, HasSubstr("request order: " + w.plan[0] + " " + w.plan[1] + " " + w.plan[2] + "\n"));
    ASSERT_EQ(w.networks.size(), 3u);
    EXPECT_EQ(w.networks[0].name, "det");
    std::set<std::string> names;
    for (const WorkloadNetwork& n : w.networks) {
      names.insert(n.name);
      const size_t layers = n.name == "det" ? 6 : n.name == "cls" ? 8 : 10;
      EXPECT_EQ(n.order.size(), layers) << name << " " << n.name;
      EXPECT_EQ(n.order.find_first_not_of("BLG"), std::string::npos) << n.order;
      if (n.name == "det") {
        EXPECT_EQ(n.frames, 40u);
        EXPECT_EQ(n.rate, 5.5);
        EXPECT_EQ(n.priority, 2);
      }
      if (n.name == "sq") {
        EXPECT_EQ(n.batch, 2u);
      }
    }
    EXPECT_EQ(names, (std::set<std::string>{"det", "cls", "sq"}));
  }
  EXPECT_THAT(x.out, HasSubstr("held-out error over"));
  EXPECT_THAT(x.out, HasSubstr("hetero2pipe / best baseline"));

  // A second run into the same directory refuses before writing anything.
  const auto before = fs::last_write_time(out / "hetero2pipe.json");
  const test::Exit again = run({"plan", "--workload=" + (dir_ / "w.json").string(),
                                "--profile=" + (dir_ / "p.json").string(), "--out=" + out.string()});
  expect_input_error(again, "--out: '" + (out / "alone-best.json").string() +
                                "' exists; co_up plan does not replace workload files (choose another --out or remove it)");
  EXPECT_EQ(fs::last_write_time(out / "hetero2pipe.json"), before);
}

TEST_F(WorkloadPlanCli, BadWorkloadsAreOneLineErrorsNamingNetworkAndField) {
  const std::string w = (dir_ / "bad.json").string();
  const std::string origin = "workload '" + w + "'";
  const auto plan_bad = [&](const std::string& text) {
    dir_.write("bad.json", text);
    return run({"plan", "--workload=" + w, "--profile=" + (dir_ / "p.json").string()});
  };
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50", "rate": 0}]})"),
                     "workload network 'det': rate 0 must be > 0 requests per second (leave it out to run as fast as possible)");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50"}, {"name": "det", "graph": "mobilenet"}]})"),
                     "workload network 'det': name is used by networks 1 and 2; give each network its own name");
  expect_input_error(plan_bad(R"({"networks": [{"name": "face", "graph": "googlenet"}]})"),
                     "workload network 'face': not in the profile; profile this workload with co_up profile --workload=FILE");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "alexnet"}]})"),
                     "workload network 'det': \"graph\" is 'alexnet' but the profile measured 'resnet50'; profile the workload again");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50", "order": "BBL"}]})"),
                     "workload network 'det': order 'BBL' has 3 letters for 6 layers; give one letter per layer");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50", "order": "BBLLNN"}]})"),
                     "workload network 'det': order letter 'N' is not a processor of the profile (BLG)");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50", "ordr": "B"}]})"),
                     "workload network 'det': unknown field 'ordr' (fields: name, graph, model, image_size, order, "
                     "split, input, frames, rate, priority, batch, replicas)");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50", "model": "m.onnx"}]})"),
                     "workload network 'det': both graph and model given; give exactly one of them");
  expect_input_error(plan_bad(R"({"networks": []})"), "workload has no networks; give at least one");
  expect_input_error(plan_bad(R"({"networks": [{"name": "a b", "graph": "resnet50"}]})"),
                     "workload network 'a b': name may use only letters, digits, '_' and '-'");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50"}], "plan": ["det", "x"]})"),
                     "workload plan names network 'x', which the workload does not have");
  expect_input_error(plan_bad(R"({"networks": [{"name": "det", "graph": "resnet50"}], "sched": 1})"),
                     origin + ": unknown field 'sched' (fields: mode, policy, plan, affinity, networks)");
  // No profile; --out naming a file.
  expect_input_error(run({"plan", "--workload=" + (dir_ / "w.json").string()}),
                     "co_up plan --workload needs --profile=FILE (a workload profile written by co_up profile --workload)");
  expect_input_error(run({"plan", "--workload=" + (dir_ / "w.json").string(), "--profile=" + (dir_ / "p.json").string(),
                          "--out=" + (dir_ / "w.json").string()}),
                     "--out='" + (dir_ / "w.json").string() + "' is not a directory");
  // A workload profile that is not one.
  const test::Exit x = run({"plan", "--workload=" + (dir_ / "w.json").string(), "--profile=" + (dir_ / "w.json").string()});
  expect_input_error(x, "workload profile '" + (dir_ / "w.json").string() +
                            "' is not a workload profile (\"format\" must be \"co_up-workload-profile\"; write one with "
                            "co_up profile --workload=FILE)");
}

}  // namespace
}  // namespace co_up
