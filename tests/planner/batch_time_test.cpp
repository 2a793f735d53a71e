// The affine batch time (planner/batch_time.h) and where the planner batches: the fit, the choice
// of batch, and workload_problem batching only networks that nothing waits on (a batch the user
// gave is kept), with per-request costs and the profile's batch times surviving the JSON round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/workload.h"
#include "planner/batch_time.h"
#include "planner/workload_profile.h"
#include "tests/planner/two_network_profile.h"

namespace co_up::planner {
namespace {

TEST(BatchTime, FitRecoversAnAffineLineAndAveragesNoise) {
  const AffineBatchTime exact = fit_affine_batch_time({{1, 5000}, {2, 7000}, {4, 11000}});
  EXPECT_NEAR(exact.fixed_us, 3000, 1e-6);
  EXPECT_NEAR(exact.per_request_us, 2000, 1e-6);
  EXPECT_NEAR(exact.frame_us(3), 9000, 1e-6);
  // Least squares: points 100 us above and below the line 1000 + 1000 b.
  const AffineBatchTime noisy = fit_affine_batch_time({{1, 2100}, {2, 2900}, {2, 3100}, {4, 4900}, {4, 5100}});
  EXPECT_NEAR(noisy.per_request_us, 1000, 60);
  EXPECT_NEAR(noisy.fixed_us, 1000, 120);
  EXPECT_THROW(fit_affine_batch_time({{2, 1000}, {2, 1100}}), std::invalid_argument);
  EXPECT_THROW(fit_affine_batch_time({{1, 1000}}), std::invalid_argument);
  EXPECT_THROW(fit_affine_batch_time({{1, 0}, {2, 1000}}), std::invalid_argument);
}

TEST(BatchTime, ChoosesTheBatchWithTheLeastTimePerRequest) {
  const std::vector<uint32_t> candidates = {1, 2, 4};
  // A large fixed part per frame: the largest batch.
  EXPECT_EQ(choose_batch({{3000, 2000}}, candidates, 300), 4u);
  // Time proportional to the batch: nothing to amortise, no batching.
  EXPECT_EQ(choose_batch({{0, 2000}}, candidates, 300), 1u);
  // Batch 2 saves 2 % per request, batch 4 3 %: both under kMinBatchGain of batch 1's time.
  EXPECT_EQ(choose_batch({{80, 1960}}, candidates, 300), 1u);
  // A batch larger than the requests is not a candidate; a last, partial batch is computed whole:
  // 5 requests in batches of 4 are 2 frames of 3000 us, in batches of 2 3 frames of 2000 us: the
  // same 6000 us, so the smaller batch stays.
  EXPECT_EQ(choose_batch({{1000, 500}}, candidates, 3), 2u);
  EXPECT_EQ(choose_batch({{1000, 500}}, candidates, 5), 2u);
  EXPECT_EQ(choose_batch({{1000, 500}}, candidates, 8), 4u);
  // Averaged over the processors the network may run on: one gains a lot, the other nothing.
  EXPECT_EQ(choose_batch({{3000, 2000}, {0, 5000}}, candidates, 300), 4u);
  EXPECT_EQ(choose_batch({{30, 2000}, {0, 5000}}, candidates, 300), 1u);
}

WorkloadProfile batched_profile() {
  WorkloadProfile p = two_network_profile();
  // sq: a large fixed part on both processors; mb: time proportional to the batch.
  for (char letter : {'B', 'L'}) {
    p.networks[0].batch_times[letter] = {{1, 1000}, {2, 1300}, {4, 1900}};
    p.networks[1].batch_times[letter] = {{1, 1000}, {2, 2000}, {4, 4000}};
  }
  return p;
}

double total_us(const NetworkCosts& c, size_t stage) {
  double sum = 0;
  for (double t : c.layer_us[stage]) sum += t;
  return sum;
}

TEST(BatchTime, TheProblemBatchesNetworksAsFastAsPossibleWithCostsPerRequest) {
  const WorkloadProfile profile = batched_profile();
  const std::string networks = R"({"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 40},
    {"name": "mb", "graph": "mobilenet", "image_size": 32, "frames": 40})";
  std::vector<std::string> notes;
  const WorkloadProblem plain =
      workload_problem(two_network_profile(), parse_workload_json("{\"networks\": [" + networks + "]}", "w",
                                                                  Orders::kOptional), notes);
  ASSERT_EQ(plain.batches, (std::vector<uint32_t>{1, 1}));  // no batch times: nothing batched
  notes.clear();
  const WorkloadProblem batched = workload_problem(
      profile, parse_workload_json("{\"networks\": [" + networks + "]}", "w", Orders::kOptional), notes);
  ASSERT_EQ(batched.batches, (std::vector<uint32_t>{4, 1}));
  // t(b) = 700 + 300 b: a request in a frame of 4 costs 475 / 1000 of one alone.
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_NEAR(total_us(batched.networks[0], k), total_us(plain.networks[0], k) * 475.0 / 1000.0, 1e-6);
    EXPECT_NEAR(total_us(batched.networks[1], k), total_us(plain.networks[1], k), 1e-9);
  }
  ASSERT_EQ(notes.empty(), false);
  bool noted = false;
  for (const std::string& n : notes) noted |= n.rfind("batch 4 for sq (as fast as possible; affine batch time B t(b) = 0.70 + 0.30 b ms", 0) == 0;
  EXPECT_TRUE(noted);
  // At a rate a batch waits for its last request, and a batch the user gave is theirs: unchanged.
  notes.clear();
  const WorkloadProblem kept = workload_problem(
      profile,
      parse_workload_json(R"({"networks": [{"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 40, "rate": 50},
        {"name": "mb", "graph": "mobilenet", "image_size": 32, "frames": 40, "batch": 2}]})", "w", Orders::kOptional),
      notes);
  EXPECT_EQ(kept.batches, (std::vector<uint32_t>{1, 2}));
  EXPECT_NEAR(total_us(kept.networks[0], 0), total_us(plain.networks[0], 0), 1e-9);
  // The user's batch is planned per request too: sq at batch 2 as given, (700 + 600) / 2 / 1000.
  notes.clear();
  const WorkloadProblem given = workload_problem(
      profile,
      parse_workload_json(R"({"networks": [{"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 40, "batch": 2},
        {"name": "mb", "graph": "mobilenet", "image_size": 32, "frames": 40}]})", "w", Orders::kOptional),
      notes);
  EXPECT_EQ(given.batches, (std::vector<uint32_t>{2, 1}));
  EXPECT_NEAR(total_us(given.networks[0], 1), total_us(plain.networks[0], 1) * 0.65, 1e-6);
}

TEST(BatchTime, NoBatchIsPlannedPastTheProfiledBatchesOrWhereTheFitIsNotPositive) {
  WorkloadProfile profile = batched_profile();
  // mb's line falls: t(b) = 1000 - 283 b from positive points, t(4) < 0.
  for (char letter : {'B', 'L'}) profile.networks[1].batch_times[letter] = {{1, 1000}, {2, 10}, {4, 10}};
  const std::string sq = R"({"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 40, "batch": 8})";
  const std::string mb = R"({"name": "mb", "graph": "mobilenet", "image_size": 32, "frames": 40})";
  std::vector<std::string> notes;
  const WorkloadProblem plain = workload_problem(
      two_network_profile(),
      parse_workload_json("{\"networks\": [" + sq + ", " + mb + "]}", "w", Orders::kOptional), notes);
  notes.clear();
  const WorkloadProblem p = workload_problem(
      profile, parse_workload_json("{\"networks\": [" + sq + ", " + mb + "]}", "w", Orders::kOptional), notes);
  EXPECT_EQ(p.batches, (std::vector<uint32_t>{8, 1}));
  for (size_t net = 0; net < 2; ++net) {
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_NEAR(total_us(p.networks[net], k), total_us(plain.networks[net], k), 1e-9) << net << k;
      for (double t : p.networks[net].layer_us[k]) EXPECT_GT(t, 0);
    }
  }
  const auto noted = [&](const std::string& start) {
    return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.rfind(start, 0) == 0; });
  };
  EXPECT_TRUE(noted("batch 8 for sq: larger than the largest profiled batch (4)"));
  EXPECT_TRUE(noted("batch 4 for mb: the affine batch time is not positive there"));
}

TEST(BatchTime, BatchTimesSurviveTheProfileJson) {
  const WorkloadProfile p = batched_profile();
  const WorkloadProfile back = parse_workload_profile(workload_profile_json(p), "p");
  ASSERT_EQ(back.networks[0].batch_times.size(), 2u);
  const std::vector<BatchTime>& b = back.networks[0].batch_times.at('L');
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2].batch, 4u);
  EXPECT_DOUBLE_EQ(b[2].frame_us, 1900);
  nlohmann::json bad = nlohmann::json::parse(workload_profile_json(p));
  bad["networks"][0]["batch_times"]["BL"] = nlohmann::json::array();
  try {
    parse_workload_profile(bad.dump(), "p");
    FAIL() << "a key of two letters was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"batch_times\": key 'BL' is not one processor letter"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace co_up::planner
