// `co_up --workload` with replicas end to end: a network whole on B with a replica on L runs
// every request once, on either processor, and the report, profile JSON and trace count them
// once each; a bad replica is a one-line error naming the network and the field, exit 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::ContainsRegex;
using test::Exit;

class WorkloadReplicasCliTest : public ::testing::Test {
 protected:
  Exit run(std::vector<std::string> args) {
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_.path()), dir_.path());
  }
  test::ScratchDir dir_;
};

TEST_F(WorkloadReplicasCliTest, ReplicatedNetworkRunsEachRequestOnceOnEitherProcessor) {
  const std::string profile = (dir_ / "profile.json").string();
  const std::string trace = (dir_ / "trace.json").string();
  // squeezenet at 32x32 has 10 layers; mobilenet 14.
  const Exit e = run({"--workload=squeezenet:BBBBBBBBBB:image_size=32:frames=80:replicas=LLLLLLLLLL;"
                      "mobilenet:BBBBBBBBBBBBBB:image_size=32:frames=40",
                      "--profile-out=" + profile, "--trace-out=" + trace});
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, ContainsRegex("\n  squeezenet +BBBBBBBBBB\\|LLLLLL\\.\\.\\. +80/80 "));

  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  ASSERT_EQ(j["networks"].size(), 2u);
  const auto& squeeze = j["networks"][0];
  EXPECT_EQ(squeeze["frames_completed"], 80);
  ASSERT_EQ(squeeze["requests"].size(), 80u);
  std::map<char, int> runs;
  std::map<uint64_t, int> per_frame;
  for (const auto& ev : squeeze["profile"]["events"]) {
    if (ev["kind"] != "subgraph") continue;
    const std::string letter = squeeze["profile"]["subgraphs"][ev["subgraph"].get<size_t>()]["processor"];
    ++runs[letter[0]];
    ++per_frame[ev["frame"].get<uint64_t>()];
  }
  EXPECT_EQ(runs['B'] + runs['L'], 80);
  EXPECT_GT(runs['L'], 0) << "L, with nothing else to do, never took a request";
  ASSERT_EQ(per_frame.size(), 80u);
  for (const auto& [frame, count] : per_frame) EXPECT_EQ(count, 1) << "frame " << frame;
  for (size_t f = 1; f < 80; ++f) {  // delivered in request order
    EXPECT_GE(squeeze["requests"][f]["end_ms"].get<double>(), squeeze["requests"][f - 1]["end_ms"].get<double>());
  }
  // Both processors report squeezenet's busy time.
  for (const auto& p : j["processors"]) EXPECT_TRUE(p["busy_ms_by_network"].contains("squeezenet")) << p;

  const nlohmann::json t = nlohmann::json::parse(test::read_file(trace));
  size_t slices = 0;
  for (const auto& ev : t["traceEvents"]) {
    if (ev["ph"] == "X" && ev["cat"] == "subgraph" && ev["name"] == "squeezenet") ++slices;
  }
  EXPECT_EQ(slices, 80u);
}

TEST_F(WorkloadReplicasCliTest, BadReplicaIsOneLineNamingTheNetworkAndTheField) {
  const Exit e = run({"--workload=squeezenet:BBBBBBBBBB:image_size=32:replicas=LLL"});
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_EQ(e.err, "co_up: error: workload network 'squeezenet': replicas: order 'LLL' has 3 letters for 10 "
                   "layers; give one letter per layer\n");
  const Exit same = run({"--workload=squeezenet:BBBBBBBBBB:image_size=32:replicas=BBBBBBBBBB"});
  EXPECT_EQ(same.code, 2) << same;
  EXPECT_EQ(same.err, "co_up: error: workload network 'squeezenet': replicas: order 'BBBBBBBBBB' is the "
                      "network's own order; give other orders\n");
}

}  // namespace
}  // namespace co_up
