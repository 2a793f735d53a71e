// The workload profile: its JSON round trip, solo-run features, and the planning problem built
// from it (costs per stage, the contention table from the regression, what is missing).
#include "planner/workload_profile.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "planner/synthetic_profile.h"

namespace co_up::planner {
namespace {

WorkloadProfile two_networks() {
  WorkloadProfile wp;
  wp.platform_name = "synthetic";
  wp.processors = "BL";
  for (int i = 0; i < 2; ++i) {
    SyntheticSpec s;
    s.layers = 5;
    s.processors = 2;
    s.seed = static_cast<uint64_t>(3 + i);
    s.graph = i == 0 ? "alexnet" : "squeezenet";
    WorkloadProfileNetwork n;
    n.name = i == 0 ? "a" : "s";
    n.graph = s.graph;
    n.weight_bytes = 4000 * (i + 1);
    n.activation_bytes = 1000;
    n.macs = 90000;
    n.profile = make_synthetic_profile(s);
    wp.networks.push_back(n);
  }
  // B|L co-runs only: L|B is predicted too (the samples go both ways), nothing else.
  std::vector<CoRunSample> samples;
  for (int c = 0; c < 4; ++c) {
    const WorkloadProfileNetwork& v = wp.networks[static_cast<size_t>(c % 2)];
    const WorkloadProfileNetwork& a = wp.networks[static_cast<size_t>((c + 1) % 2)];
    samples.push_back({c, v.name, a.name, 'B', 'L', features_of(v, 'B'), features_of(a, 'L'), 100, 120.0 + c});
    samples.push_back({c, a.name, v.name, 'L', 'B', features_of(a, 'L'), features_of(v, 'B'), 100, 110.0 + c});
  }
  wp.coruns = samples;
  wp.contention = ContentionModel::fit(samples);
  return wp;
}

Workload spec_of(const WorkloadProfile& wp) {
  Workload spec;
  for (const WorkloadProfileNetwork& n : wp.networks) {
    WorkloadNetwork s;
    s.name = n.name;
    s.graph = n.graph;
    spec.networks.push_back(s);
  }
  return spec;
}

TEST(WorkloadProfile, JsonRoundTrip) {
  const WorkloadProfile wp = two_networks();
  const WorkloadProfile back = parse_workload_profile(workload_profile_json(wp), "p.json");
  EXPECT_EQ(workload_profile_json(back), workload_profile_json(wp));
  EXPECT_EQ(back.networks[1].profile.network.layer_count, 5u);
  EXPECT_EQ(back.coruns.size(), 8u);
}

TEST(WorkloadProfile, FeaturesAreBytesAndMacsPerSoloMicrosecond) {
  const WorkloadProfile wp = two_networks();
  const WorkloadProfileNetwork& n = wp.networks[0];
  double us = 0;
  for (double v : n.profile.find_layer_times('B', 0)->median_us) us += v;
  const ContentionFeatures f = features_of(n, 'B');
  EXPECT_DOUBLE_EQ(f.traffic, (4000 + 2 * 1000) / us);
  EXPECT_DOUBLE_EQ(f.compute, 90000 / us);
  EXPECT_EQ(features_of(n, 'G').traffic, 0.0);  // not measured there
}

TEST(WorkloadProfile, ProblemCarriesCostsAndTheRegressionsSlowdowns) {
  const WorkloadProfile wp = two_networks();
  std::vector<std::string> notes;
  const WorkloadProblem p = workload_problem(wp, spec_of(wp), notes);
  EXPECT_EQ(p.letters, "BL");
  ASSERT_EQ(p.networks.size(), 2u);
  // Layer times scaled so that a whole run (layers + input) takes the co-runs' solo time, 100 us.
  const std::vector<double>& l = wp.networks[0].profile.find_layer_times('L', 0)->median_us;
  double sum = 0;
  for (double v : l) sum += v;
  const double input = p.networks[0].input_us[1];
  EXPECT_NEAR(p.networks[0].layer_us[1][2], l[2] * (100 - input) / sum, 1e-9);
  double whole = input;
  for (double v : p.networks[0].layer_us[1]) whole += v;
  EXPECT_NEAR(whole, 100, 1e-9);
  const double expected = wp.contention->predict('B', 'L', features_of(wp.networks[0], 'B'), features_of(wp.networks[1], 'L'));
  EXPECT_NEAR(p.interference.at(0, 0, 1, 1), std::max(0.0, expected), 1e-12);
  EXPECT_TRUE(notes.empty());
  // Without a regression: no table, and a note saying so.
  WorkloadProfile bare = wp;
  bare.contention.reset();
  const WorkloadProblem q = workload_problem(bare, spec_of(bare), notes);
  EXPECT_EQ(q.interference.networks(), 0u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("no contention model"), std::string::npos);
}

TEST(WorkloadProfile, LayerTimesScaleToTheMedianWholeRun) {
  std::vector<double> t = {1, 2, 3};  // 6 us timed layer by layer
  scale_to_whole_runs(t, 1, {11, 13, 100});  // median whole run 13 us, 1 of it the input
  EXPECT_NEAR(t[0], 2, 1e-12);
  EXPECT_NEAR(t[1], 4, 1e-12);
  EXPECT_NEAR(t[2], 6, 1e-12);
  std::vector<double> u = {1, 2, 3};
  scale_to_whole_runs(u, 1, {});  // no whole runs measured: unchanged
  EXPECT_EQ(u, (std::vector<double>{1, 2, 3}));
  scale_to_whole_runs(u, 5, {4});  // a whole run shorter than its input: unchanged
  EXPECT_EQ(u, (std::vector<double>{1, 2, 3}));
}

TEST(WorkloadProfile, MismatchesNameTheNetworkAndTheField) {
  const WorkloadProfile wp = two_networks();
  Workload spec = spec_of(wp);
  spec.networks[1].image_size = 64;
  std::vector<std::string> notes;
  try {
    workload_problem(wp, spec, notes);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "workload network 's': \"image_size\" is '64' but the profile measured '0'; profile the workload again");
  }
  EXPECT_THROW(parse_workload_profile(R"({"format": "co_up-workload-profile", "version": 2})", "p.json"), InputError);
}

}  // namespace
}  // namespace co_up::planner
