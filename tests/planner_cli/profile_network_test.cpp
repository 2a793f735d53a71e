// profile_network and verify_mappings with the real Executor: SqueezeNet at 32x32 on cpu-reference
// (B = core 0, L = core 1), a fraction of a second per profile. DVFS against a simulated sysfs
// tree (tests/power/sim_sysfs.h): the level loop writes each table frequency and restores.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/profile_command.h"
#include "cli/verify_mappings.h"
#include "core/error.h"
#include "core/network.h"
#include "planner/cost_model.h"
#include "planner/pipeline_cost_fit.h"
#include "tests/cli/scratch_dir.h"
#include "tests/core/spinning_process.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr const char* kTwoCpus = R"({"name": "ref2", "processors": [
  {"letter": "B", "name": "core 0", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
  {"letter": "L", "name": "core 1", "kind": "cpu", "backend": "cpu-reference", "cores": [1]}]})";

class ProfileNetworkTest : public ::testing::Test {
 protected:
  ProfileNetworkTest()
      : graph_(build_network({"squeezenet", "layers", 32, 1, ""})),
        platform_(parse_platform(kTwoCpus, "test platform")),
        plugins_(PluginRegistry::load_directory(PluginRegistry::default_directory())) {}

  ProfileJob job(const fs::path& out) {
    ProfileJob j;
    j.graph = &graph_;
    j.platform = &platform_;
    j.plugins = &plugins_;
    j.input = seeded_inputs(graph_, 1);
    j.graph_name = "squeezenet";
    j.image_size = 32;
    j.repetitions = 2;
    j.warmup_frames = 1;
    j.out = out;
    j.log = &log_;
    return j;
  }

  test::ScratchDir dir_;
  graph::Graph graph_;
  Platform platform_;
  PluginRegistry plugins_;
  std::ostringstream log_;
};

void expect_all_positive(const std::vector<double>& values, const std::string& what) {
  for (size_t i = 0; i < values.size(); ++i) EXPECT_GT(values[i], 0) << what << "[" << i << "]";
}

TEST_F(ProfileNetworkTest, WritesAProfileTheReaderAccepts) {
  const fs::path out = dir_ / "squeezenet.json";
  const ProfileOutcome o = profile_network(job(out));
  EXPECT_EQ(o.steps_total, 3u);
  EXPECT_EQ(o.steps_run, 3u);
  EXPECT_FALSE(o.interrupted);
  const planner::LayerProfile p = planner::read_layer_profile(out);
  EXPECT_EQ(p.network.graph, "squeezenet");
  EXPECT_EQ(p.network.layer_count, 10u);
  ASSERT_EQ(p.network.layers.size(), 10u);
  EXPECT_EQ(p.network.layers[1].name, graph_.layers()[1].name);
  EXPECT_GT(p.network.layers[0].output_bytes, 0);
  EXPECT_EQ(p.platform_name, "ref2");
  EXPECT_EQ(p.letters(), "BL");
  EXPECT_EQ(p.processors[0].backend, "cpu-reference");
  EXPECT_THAT(p.processors[1].host_cores, ElementsAre(1));
  EXPECT_EQ(p.repetitions, 2);
  EXPECT_THAT(p.completed, ElementsAre("layers:BL:0", "transfers:B:L", "handoff:B:L"));
  ASSERT_EQ(p.layer_times.size(), 2u);
  for (const planner::LayerTimes& t : p.layer_times) {
    EXPECT_EQ(t.level, 0);
    ASSERT_EQ(t.median_us.size(), 10u);
    ASSERT_EQ(t.mad_us.size(), 10u);
    expect_all_positive(t.median_us, std::string("median_us of ") + t.processor);
  }
  ASSERT_EQ(p.transfers.size(), 2u);
  for (const planner::TransferTimes& t : p.transfers) {
    ASSERT_EQ(t.send_us.size(), 9u);
    ASSERT_EQ(t.receive_us.size(), 9u);
    expect_all_positive(t.send_us, std::string("send_us ") + t.from + "->" + t.to);
    expect_all_positive(t.receive_us, std::string("receive_us ") + t.from + "->" + t.to);
  }
  EXPECT_EQ(p.input_transfer_us.size(), 2u);
  ASSERT_EQ(p.handoffs.size(), 1u);
  EXPECT_GE(p.handoffs[0].us, 0);
  EXPECT_TRUE(std::isfinite(p.handoffs[0].us));
  // The DAG model's pipeline costs, fitted on the same step's runs: a cost per sub-graph run, no
  // delay per edge.
  ASSERT_NE(p.find_pipeline_subgraph('B', 'L'), nullptr);
  EXPECT_GE(p.find_pipeline_subgraph('B', 'L')->us, 0);
  EXPECT_LE(p.find_pipeline_subgraph('B', 'L')->us, planner::kPipelineSubgraphFitLimitUs);
  ASSERT_NE(p.find_pipeline_edge('B', 'L'), nullptr);
  EXPECT_EQ(p.find_pipeline_edge('B', 'L')->us, 0);
  // Beside it the factor on layer times, fitted with it on the hand-off orders (3 here), the
  // alternating ones (2) and seeded random orders of the network's units (one per 8 units).
  ASSERT_NE(p.find_pipeline_work_factor('B', 'L'), nullptr);
  EXPECT_GE(p.find_pipeline_work_factor('B', 'L')->us, planner::kPipelineWorkFactorMin);
  EXPECT_LE(p.find_pipeline_work_factor('B', 'L')->us, planner::kPipelineWorkFactorMax);
  EXPECT_THAT(log_.str(), HasSubstr("pipeline B<->L: layers x"));
  EXPECT_THAT(log_.str(), HasSubstr("periods of 6 runs within"));
  // The factor is fitted against each processor's speed while the pipelines ran, measured alone
  // in the same rounds; the note says how far that was from the layer step's.
  EXPECT_THAT(log_.str(), ContainsRegex("pipeline B<->L: layers ran [0-9.]+ % (slower|faster) on B, [0-9.]+ % "
                                        "(slower|faster) on L than in the layer step while the pipelines ran"));
  // The planner's cost model takes it as it is.
  EXPECT_GT(planner::predict(p, {"BBBBBLLLLL", planner::Mode::kPipeline, {}}).throughput_fps, 0);
  EXPECT_THAT(log_.str(), HasSubstr("[1/3] layers on B, L at level 0 (as found)"));
  EXPECT_THAT(log_.str(), HasSubstr("[2/3] transfers B<->L"));
  EXPECT_THAT(log_.str(), HasSubstr("[3/3] hand-off B<->L"));
}

// Two frames in one round, measured up to `attempts` times while not quiet.
MeasureSettings few_frames(int attempts) {
  MeasureSettings settings;
  settings.frames = 2;
  settings.warmup_frames = 1;
  settings.rounds = 1;
  settings.layer_attempts = attempts;
  return settings;
}

// A processor whose layer times spread more than the quiet limit is measured again, up to the
// attempts allowed, and keeps the attempt it reports; one within the limit is measured once.
TEST_F(ProfileNetworkTest, LayersThatSpreadTooMuchAreMeasuredAgain) {
  MeasureSettings settings = few_frames(3);
  settings.quiet_spread = -1;  // no measurement is quiet enough
  const std::vector<LayerMeasurement> busy =
      LayerProfiler(graph_, platform_, plugins_, seeded_inputs(graph_, 1), settings).measure_layers("BL", 0);
  ASSERT_EQ(busy.size(), 2u);
  for (const LayerMeasurement& m : busy) {
    EXPECT_EQ(m.attempts, 3) << m.times.processor;
    EXPECT_EQ(m.spread, layer_spread(m.times)) << m.times.processor;
    expect_all_positive(m.times.median_us, std::string(1, m.times.processor));
  }
  settings.quiet_spread = 1e9;  // every measurement is
  settings.quiet_foreign = 2;   // whatever else runs on the cores
  for (const LayerMeasurement& m :
       LayerProfiler(graph_, platform_, plugins_, seeded_inputs(graph_, 1), settings).measure_layers("BL", 0)) {
    EXPECT_EQ(m.attempts, 1) << m.times.processor;
  }
}

// Foreign time decides quietness above 2 % and above one tick of the counters (a short
// measurement's resolution); unknown foreign time leaves it to the spread.
TEST(QuietMeasurement, ForeignTimeCountsAboveTheLimitAndAboveOneTick) {
  const MeasureSettings limits;
  const auto share = [](double foreign, double resolution) {
    return ForeignShare{{0, 1}, ForeignCpuTime::Share{foreign, resolution}};
  };
  EXPECT_TRUE(quiet(0.01, share(0.015, 0.001), limits));
  EXPECT_FALSE(quiet(0.01, share(0.03, 0.001), limits));
  EXPECT_TRUE(quiet(0.01, share(0.05, 0.05), limits));  // one tick of 20
  EXPECT_FALSE(quiet(0.01, share(0.10, 0.05), limits));
  EXPECT_TRUE(quiet(0.01, ForeignShare{{0, 1}, std::nullopt}, limits));
  EXPECT_FALSE(quiet(0.03, ForeignShare{{0, 1}, std::nullopt}, limits));  // the spread alone
  EXPECT_LT(disturbance(0.01, share(0.03, 0.001), limits), disturbance(0.01, share(0.06, 0.001), limits));
}

// Another process spinning on the measured cores makes a measurement not quiet however little
// the frames spread: measured again, each attempt's share of foreign time reported, the least
// disturbed kept. The spread is left out (any is quiet), so only the foreign time can decide.
TEST_F(ProfileNetworkTest, LayersMeasuredBesideAnotherProcessAreMeasuredAgain) {
  MeasureSettings settings = few_frames(2);
  settings.quiet_spread = 1e9;
  const test::SpinningProcess neighbour({0, 1});
  for (const LayerMeasurement& m :
       LayerProfiler(graph_, platform_, plugins_, seeded_inputs(graph_, 1), settings).measure_layers("BL", 0)) {
    EXPECT_EQ(m.attempts, 2) << m.times.processor;
    EXPECT_THAT(m.foreign.cores, ElementsAre(0, 1));
    ASSERT_TRUE(m.foreign.share.has_value()) << "/proc/stat unreadable on this Linux host";
    EXPECT_GT(m.foreign.share->foreign, settings.quiet_foreign) << m.times.processor;
    expect_all_positive(m.times.median_us, std::string(1, m.times.processor));
  }
}

TEST_F(ProfileNetworkTest, ResumeSkipsCompletedStepsAndKeepsTheirEntriesByteForByte) {
  const fs::path out = dir_ / "resume.json";
  // A file as an interrupted run leaves it: the layers done (with numbers no run would give).
  planner::LayerProfile partial = profile_skeleton(job(out));
  partial.layer_times.push_back(
      {'B', 0, std::vector<double>(10, 1234.5), std::vector<double>(10, 0.25)});
  partial.layer_times.push_back(
      {'L', 0, std::vector<double>(10, 2345.5), std::vector<double>(10, 0.5)});
  partial.completed = {"layers:BL:0"};
  planner::write_layer_profile(out, partial);
  const std::string before_text = test::read_file(out);
  const auto before = nlohmann::ordered_json::parse(before_text);
  // B's entry as the file spells it: from the start of layer_times to the end of its first entry.
  const size_t entry_begin = before_text.find("\"layer_times\": [");
  const size_t entry_end = before_text.find("\n  }", entry_begin);
  ASSERT_NE(entry_end, std::string::npos);
  const std::string b_entry = before_text.substr(entry_begin, entry_end + 4 - entry_begin);

  const ProfileOutcome o = profile_network(job(out));
  EXPECT_THAT(log_.str(), HasSubstr("resuming: 1 of 3 steps done"));
  EXPECT_EQ(o.steps_done_before, 1u);
  EXPECT_EQ(o.steps_run, 2u);
  const std::string text = test::read_file(out);
  const auto after = nlohmann::ordered_json::parse(text);
  EXPECT_THAT(text, HasSubstr(b_entry));  // byte for byte
  EXPECT_EQ(after["layer_times"][0].dump(), before["layer_times"][0].dump());
  EXPECT_EQ(after["layer_times"][0]["median_us"][3], 1234.5);
  EXPECT_EQ(after["layer_times"][1]["median_us"][9], 2345.5);
  EXPECT_EQ(after["layer_times"].size(), 2u);
  EXPECT_FALSE(after.contains("input_transfer_us"));  // the layers step was not rerun
  EXPECT_EQ(after["transfers"].size(), 2u);
  EXPECT_THAT(after["completed"], ElementsAre("layers:BL:0", "transfers:B:L", "handoff:B:L"));

  // Everything done: nothing is measured, the file stays as it is.
  log_.str("");
  const ProfileOutcome again = profile_network(job(out));
  EXPECT_EQ(again.steps_run, 0u);
  EXPECT_THAT(log_.str(), HasSubstr("resuming: 3 of 3 steps done"));
  EXPECT_EQ(test::read_file(out), text);
}

TEST_F(ProfileNetworkTest, AVersionOneProfileResumesWithOnlyTheHandoffStep) {
  const fs::path out = dir_ / "v1.json";
  ProfileJob j = job(out);
  profile_network(j);
  // The same file as the previous format wrote it: no hand-off, no such step done.
  auto v1 = nlohmann::ordered_json::parse(test::read_file(out));
  v1["version"] = 1;
  v1.erase("handoff_us");
  v1["completed"] = {"layers:BL:0", "transfers:B:L"};
  dir_.write("v1.json", v1.dump(1));
  EXPECT_TRUE(planner::read_layer_profile(out).handoffs.empty());  // readable as it is

  log_.str("");
  const ProfileOutcome o = profile_network(job(out));
  EXPECT_THAT(log_.str(), HasSubstr("resuming: 2 of 3 steps done"));
  EXPECT_EQ(o.steps_run, 1u);
  const planner::LayerProfile p = planner::read_layer_profile(out);
  ASSERT_NE(p.find_handoff('B', 'L'), nullptr);
  const auto after = nlohmann::ordered_json::parse(test::read_file(out));
  EXPECT_EQ(after["version"], 2);
  EXPECT_EQ(after["layer_times"].dump(), v1["layer_times"].dump());  // kept as measured
}

TEST_F(ProfileNetworkTest, ADifferentOrBrokenFileIsAnInputErrorUnlessRestart) {
  const fs::path out = dir_ / "other.json";
  planner::LayerProfile other = profile_skeleton(job(out));
  other.platform_name = "rk3399";
  other.completed = {"layers:BL:0"};
  planner::write_layer_profile(out, other);
  try {
    profile_network(job(out));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("on platform 'rk3399'"));
    EXPECT_THAT(e.what(), HasSubstr("on platform 'ref2'"));
    EXPECT_THAT(e.what(), HasSubstr("--restart"));
  }
  ProfileJob j = job(out);
  j.repetitions = 3;  // a different --repetitions is a mismatch too
  other.platform_name = "ref2";
  planner::write_layer_profile(out, other);
  EXPECT_THROW(profile_network(j), InputError);

  dir_.write("other.json", "{not json");
  EXPECT_THROW(profile_network(job(out)), InputError);
  j = job(out);
  j.restart = true;
  EXPECT_EQ(profile_network(j).steps_run, 3u);
  EXPECT_EQ(planner::read_layer_profile(out).platform_name, "ref2");
}

TEST_F(ProfileNetworkTest, StopRequestEndsAfterTheCurrentStepAndKeepsTheFile) {
  const fs::path out = dir_ / "stopped.json";
  ProfileJob j = job(out);
  int polls = 0;
  j.stop_requested = [&polls] { return ++polls > 1; };  // the signal arrives during step 1
  const ProfileOutcome o = profile_network(j);
  EXPECT_TRUE(o.interrupted);
  EXPECT_EQ(o.steps_run, 1u);
  EXPECT_THAT(planner::read_layer_profile(out).completed, ElementsAre("layers:BL:0"));
}

TEST_F(ProfileNetworkTest, StopBeforeTheFirstStepWritesNothing) {
  const fs::path out = dir_ / "never.json";
  ProfileJob j = job(out);
  j.stop_requested = [] { return true; };
  const ProfileOutcome o = profile_network(j);
  EXPECT_TRUE(o.interrupted);
  EXPECT_EQ(o.steps_run, 0u);
  EXPECT_FALSE(fs::exists(out));  // its existence would claim a step under way

  // A file an earlier run left is kept as it was, byte for byte.
  ProfileJob first = job(out);
  int polls = 0;
  first.stop_requested = [&polls] { return ++polls > 1; };
  ASSERT_TRUE(profile_network(first).interrupted);
  const std::string before = test::read_file(out);
  EXPECT_TRUE(profile_network(j).interrupted);
  EXPECT_EQ(test::read_file(out), before);
}

TEST_F(ProfileNetworkTest, DvfsLevelsWriteEachTableFrequencyAndRestoreTheGovernors) {
  test::SimSysfs sim("profile");
  sim.add_standard();
  const Platform platform = parse_platform(sim.platform_json(), "sim platform");
  power::SysfsDvfs dvfs(platform, sim.root());
  ProfileJob j = job(dir_ / "dvfs.json");
  j.platform = &platform;
  j.processors = "BL";  // G and N of the simulated board have no plugin here
  j.dvfs = &dvfs;
  j.repetitions = 1;
  const ProfileOutcome o = profile_network(j);
  EXPECT_EQ(o.dvfs_letters, "BL");
  EXPECT_EQ(o.steps_total, 3u + 4u + 3u);
  EXPECT_EQ(o.steps_run, o.steps_total);

  std::map<std::string, std::vector<std::string>> written;  // file name -> values, in order
  for (const power::SysfsWrite& w : dvfs.writes()) {
    EXPECT_TRUE(w.ok) << w.path;
    const fs::path p(w.path);
    written[p.parent_path().filename().string() + "/" + p.filename().string()].push_back(w.value);
  }
  // B (userspace governor): the probe sets the lowest level and restores, then levels 1..4.
  EXPECT_THAT(written["policy0/scaling_setspeed"],
              ElementsAre("408000", "408000", "816000", "1200000", "1800000"));
  EXPECT_THAT(written["policy0/scaling_governor"],
              ElementsAre("userspace", "schedutil", "userspace", "schedutil"));
  // L (no userspace governor): min/max clamped to each level, raising max first.
  EXPECT_THAT(written["policy1/scaling_max_freq"],
              ElementsAre("408000", "1008000", "408000", "600000", "1008000", "1008000"));
  EXPECT_THAT(written["policy1/scaling_min_freq"],
              ElementsAre("408000", "408000", "408000", "600000", "1008000", "408000"));
  EXPECT_EQ(test::get(sim / "devices/system/cpu/cpufreq/policy0/scaling_governor"), "schedutil");
  EXPECT_EQ(test::get(sim / "devices/system/cpu/cpufreq/policy1/scaling_min_freq"), "408000");
  EXPECT_EQ(test::get(sim / "devices/system/cpu/cpufreq/policy1/scaling_max_freq"), "1008000");

  const planner::LayerProfile p = planner::read_layer_profile(j.out);
  for (int level = 0; level <= 4; ++level) EXPECT_NE(p.find_layer_times('B', level), nullptr) << level;
  for (int level = 0; level <= 3; ++level) EXPECT_NE(p.find_layer_times('L', level), nullptr) << level;
  EXPECT_EQ(p.find_layer_times('L', 4), nullptr);
  EXPECT_THAT(p.processors[0].levels_khz, ElementsAre(408000, 816000, 1200000, 1800000));
  EXPECT_EQ(p.processors[0].dvfs_domain, "B");
}

TEST_F(ProfileNetworkTest, UnwritableDvfsIsNotedAndOnlyLevelZeroIsProfiled) {
  test::SimSysfs sim("profile_ro");
  sim.add_standard();
  sim.make_unwritable("devices/system/cpu/cpufreq/policy0/scaling_setspeed");
  const Platform platform = parse_platform(sim.platform_json(), "sim platform");
  power::SysfsDvfs dvfs(platform, sim.root());
  ProfileJob j = job(dir_ / "ro.json");
  j.platform = &platform;
  j.processors = "B";
  j.dvfs = &dvfs;
  const ProfileOutcome o = profile_network(j);
  EXPECT_EQ(o.dvfs_letters, "");
  EXPECT_EQ(o.steps_total, 1u);
  EXPECT_THAT(log_.str(), HasSubstr("DVFS not profiled for B: failed to write 408000"));
  EXPECT_EQ(test::get(sim / "devices/system/cpu/cpufreq/policy0/scaling_governor"), "schedutil");
}

TEST_F(ProfileNetworkTest, VerifyPrintsPredictedAgainstMeasured) {
  const fs::path out = dir_ / "verify.json";
  profile_network(job(out));
  const planner::CostModel model(planner::read_layer_profile(out));
  std::vector<planner::Candidate> candidates;
  for (const planner::Mapping& m :
       {planner::Mapping{"BBBBBLLLLL", planner::Mode::kPipeline, {}},
        planner::Mapping{"LLLLLLLLLL", planner::Mode::kSwitch, {}}}) {
    candidates.push_back({m, model.predict(m), "test"});
  }
  std::ostringstream printed;
  const std::vector<VerifiedMapping> v =
      verify_mappings(graph_, platform_, plugins_, nullptr, model, candidates, {3, 1}, printed);
  ASSERT_EQ(v.size(), 2u);
  for (const VerifiedMapping& m : v) {
    EXPECT_EQ(m.failure, "");
    EXPECT_GT(m.measured.throughput_fps, 0);
    EXPECT_GT(m.measured.latency_ms, 0);
  }
  EXPECT_THAT(printed.str(), HasSubstr("verify: 2 mappings"));
  EXPECT_THAT(printed.str(), HasSubstr("BBBBBLLLLL  pipeline"));
  EXPECT_THAT(printed.str(), HasSubstr("median |error|"));

  // A mapping that cannot run is reported; the others still run.
  candidates.push_back({{"BBBBBLLLLX", planner::Mode::kSwitch, {}}, candidates[0].prediction, "bad"});
  printed.str("");
  const auto with_bad =
      verify_mappings(graph_, platform_, plugins_, nullptr, model, candidates, {2, 0}, printed);
  EXPECT_THAT(with_bad[2].failure, HasSubstr("'X'"));
  EXPECT_THAT(printed.str(), HasSubstr("failed: "));
}

}  // namespace
}  // namespace co_up::cli
