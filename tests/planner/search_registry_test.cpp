// The search registry: every algorithm reachable by its name through one interface, each giving
// what its own function gives; an unknown name is an input error listing the known ones.
#include "planner/search_algorithm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.h"
#include "planner/synthetic_profile.h"

namespace co_up::planner {
namespace {

using ::testing::HasSubstr;

CostModel small_model() {
  SyntheticSpec spec;
  spec.layers = 6;
  spec.processors = 3;
  spec.levels = 3;
  spec.power = true;
  return CostModel(make_synthetic_profile(spec));
}

TEST(SearchRegistry, NamesAreUniqueAndEachRunsToMappingsOfEveryLayer) {
  const CostModel model = small_model();
  const Candidate start = best_single_processor(model, Mode::kPipeline);
  std::set<std::string> names;
  for (const SearchRegistration& r : search_registry()) {
    EXPECT_TRUE(names.insert(std::string(r.name)).second) << r.name;
    EXPECT_FALSE(r.summary.empty()) << r.name;
    SearchInput input{&model, Mode::kPipeline};
    input.starts.push_back(start);
    input.generations = 5;
    const std::vector<Candidate> found = r.create()->search(input);
    ASSERT_FALSE(found.empty()) << r.name;
    for (const Candidate& c : found) {
      EXPECT_EQ(c.mapping.order.size(), model.layer_count()) << r.name;
      EXPECT_GT(c.prediction.throughput_fps, 0) << r.name;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"dp", "dp-per-subset", "shortest-path", "refine", "nsga2",
                                          "single-processor", "heft", "hybrid", "split"}));
}

TEST(SearchRegistry, ARegisteredSearchGivesWhatItsFunctionGives) {
  const CostModel model = small_model();
  const SearchInput pipeline{&model, Mode::kPipeline};
  EXPECT_EQ(run_search("dp", pipeline).front().mapping, pipeline_dp(model).mapping);
  EXPECT_EQ(run_search("shortest-path", pipeline).front().mapping,
            shortest_path_latency(model).mapping);
  const SearchInput in_switch{&model, Mode::kSwitch};
  EXPECT_EQ(run_search("heft", in_switch).front().mapping, heft(model, Mode::kSwitch).mapping);
  EXPECT_EQ(run_search("single-processor", in_switch).front().mapping,
            best_single_processor(model, Mode::kSwitch).mapping);
  SearchInput evolve = pipeline;
  evolve.seed = 3;
  evolve.generations = 10;
  evolve.starts.push_back(pipeline_dp(model));
  Nsga2Options options;
  options.seed = 3;
  options.generations = 10;
  const std::vector<Candidate> direct = nsga2(model, {pipeline_dp(model).mapping}, options);
  const std::vector<Candidate> registered = run_search("nsga2", evolve);
  ASSERT_EQ(registered.size(), direct.size());
  for (size_t i = 0; i < direct.size(); ++i) EXPECT_EQ(registered[i].mapping, direct[i].mapping);
}

TEST(SearchRegistry, AnUnknownNameOrAMissingStartIsAnInputError) {
  try {
    create_search("simulated-annealing");
    FAIL() << "no such search";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no search algorithm 'simulated-annealing'"));
    EXPECT_THAT(e.what(), HasSubstr("known: dp, dp-per-subset, shortest-path"));
  }
  const CostModel model = small_model();
  EXPECT_THROW(run_search("refine", SearchInput{&model, Mode::kPipeline}), InputError);
  EXPECT_THROW(run_search("dp", SearchInput{}), InputError);
}

}  // namespace
}  // namespace co_up::planner
