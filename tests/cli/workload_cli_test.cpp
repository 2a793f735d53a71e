// `co_up --workload=...` end to end: a workload file and the command-line groups run every
// network's requests and report them (profile JSON, trace); bad workloads are one-line errors
// naming the network and the field, exit 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using test::Exit;

class WorkloadCliTest : public ::testing::Test {
 protected:
  Exit run(std::vector<std::string> args) {
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_.path()), dir_.path());
  }
  // Exit 2 and exactly `line` on stderr.
  void expect_error(const std::vector<std::string>& args, const std::string& line) {
    const Exit e = run(args);
    EXPECT_EQ(e.code, 2) << e;
    EXPECT_EQ(e.err, "co_up: error: " + line + "\n") << args.back();
  }
  std::string file(const std::string& name, const std::string& text) {
    return dir_.write(name, text).string();
  }
  test::ScratchDir dir_;
};

TEST_F(WorkloadCliTest, UnknownNetworkNamesTheNetworkAndTheGraph) {
  expect_error({"--workload=nosuchnet:BBB"},
               "workload network 'nosuchnet': graph: unknown graph 'nosuchnet' (known: alexnet, "
               "googlenet, mobilenet, resnet50, squeezenet, inception_v3)");
  expect_error({"--workload=" + file("w.json", R"({"networks": [{"name": "det", "graph": "yolo", "order": "B"}]})")},
               "workload network 'det': graph: unknown graph 'yolo' (known: alexnet, googlenet, "
               "mobilenet, resnet50, squeezenet, inception_v3)");
}

TEST_F(WorkloadCliTest, OrderOfTheWrongLengthIsRefused) {
  expect_error({"--workload=" + file("w.json", R"({"networks": [
                  {"name": "detector", "graph": "squeezenet", "image_size": 32, "order": "BBL"}]})")},
               "workload network 'detector': order 'BBL' has 3 letters for 10 layers; give one "
               "letter per layer");
  expect_error({"--workload=squeezenet:BBBBBBBBBBB:image_size=32"},
               "workload network 'squeezenet': order 'BBBBBBBBBBB' has 11 letters for 10 layers; "
               "give one letter per layer");
  expect_error({"--workload=squeezenet:image_size=32"},
               "workload network 'squeezenet': order is missing; give one letter per layer (see "
               "--list-layers)");
}

TEST_F(WorkloadCliTest, DuplicatedNamesAreRefused) {
  expect_error({"--workload=squeezenet:BBBBBBBBBB;squeezenet:LLLLLLLLLL"},
               "workload network 'squeezenet': name is used by networks 1 and 2; give each network "
               "its own name");
  expect_error({"--workload=" + file("w.json", R"({"networks": [
                  {"name": "a", "graph": "squeezenet", "order": "BBBBBBBBBB"},
                  {"name": "b", "graph": "squeezenet", "order": "BBBBBBBBBB"},
                  {"name": "a", "graph": "mobilenet", "order": "BBBBBBBBBBBBBB"}]})")},
               "workload network 'a': name is used by networks 1 and 3; give each network its own "
               "name");
}

TEST_F(WorkloadCliTest, RateMustBePositive) {
  expect_error({"--workload=squeezenet:BBBBBBBBBB:rate=0"},
               "workload network 'squeezenet': rate 0 must be > 0 requests per second (leave it "
               "out to run as fast as possible)");
  expect_error({"--workload=" + file("w.json", R"({"networks": [
                  {"name": "cam", "graph": "squeezenet", "order": "BBBBBBBBBB", "rate": -2.5}]})")},
               "workload network 'cam': rate -2.5 must be > 0 requests per second (leave it out "
               "to run as fast as possible)");
  expect_error({"--workload=squeezenet:BBBBBBBBBB:rate=fast"},
               "workload network 'squeezenet': rate 'fast' must be a number");
}

TEST_F(WorkloadCliTest, LetterWithoutAPluginIsRefused) {
  const std::string empty = (dir_ / "no_plugins").string();
  std::filesystem::create_directories(empty);
  const Exit e = run({"--plugins=" + empty, "--workload=squeezenet:BBBBBLLLLL:name=cam:image_size=32"});
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, StartsWith("co_up: error: workload network 'cam': order letter 'B' ("));
  EXPECT_THAT(e.err, HasSubstr(") has no backend plugin loaded (needs 'cpu-xnnpack' or "
                               "'cpu-reference'; see --list-plugins)\n"));
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;
  expect_error({"--workload=squeezenet:BBBBBQQQQQ:name=cam:image_size=32"},
               "workload network 'cam': order letter 'Q' is not a processor of platform 'host'");
}

TEST_F(WorkloadCliTest, GraphAndModelExactlyOne) {
  expect_error({"--workload=" + file("w.json", R"({"networks": [
                  {"name": "x", "graph": "squeezenet", "model": "m.onnx", "order": "B"}]})")},
               "workload network 'x': both graph and model given; give exactly one of them");
  expect_error({"--workload=" + file("w.json", R"({"networks": [{"name": "x", "order": "B"}]})")},
               "workload network 'x': neither graph nor model given; give exactly one of them");
}

TEST_F(WorkloadCliTest, OtherFieldErrorsNameNetworkAndField) {
  expect_error({"--workload=m.onnx:BBBBBBBBBB:batch=4"},
               "workload network 'm': batch 4 applies to zoo graphs only (an ONNX model's batch is "
               "its input shape); use batch 1");
  expect_error({"--workload=" + file("w.json", R"({"networks": [
                  {"name": "x", "graph": "squeezenet", "order": "B", "colour": "red"}]})")},
               "workload network 'x': unknown field 'colour' (fields: name, graph, model, "
               "image_size, order, split, input, frames, rate, priority, batch, replicas)");
  expect_error({"--workload=" + file("w.json", R"({"networks": [
                  {"name": "x", "graph": "squeezenet", "order": "B", "frames": 0}]})")},
               "workload network 'x': field frames = 0 is outside 1..1099511627776");
  expect_error({"--workload=" + file("w.json", R"({"networks": [
                  {"name": "x y", "graph": "squeezenet", "order": "B"}]})")},
               "workload network 'x y': name may use only letters, digits, '_' and '-'");
  expect_error({"--workload=squeezenet:BBBBBBBBBB;plan=squeezenet,other"},
               "workload plan names network 'other', which the workload does not have");
  expect_error({"--workload=squeezenet:BBBBBBBBBB;policy=fair"},
               "workload policy 'fair' must be 'oldest', 'priority' or 'plan'");
  expect_error({"--workload=squeezenet:BBBBBBBBBB", "--graph=alexnet"},
               "--graph cannot be combined with --workload (give each network's settings in the "
               "workload; see README \"Several networks at once\")");
}

// Three networks with their own orders, one at a rate: every request completes; a processor's
// track in the trace never holds two slices at once; arrivals of the paced network are its
// schedule.
TEST_F(WorkloadCliTest, WorkloadFileRunsEveryNetworkAndReportsIt) {
  const std::string workload = file("w.json", R"({
    "mode": "pipeline", "policy": "oldest",
    "networks": [
      {"name": "squeeze", "graph": "squeezenet", "image_size": 32, "order": "BBBBBLLLLL", "frames": 60},
      {"name": "mobile", "graph": "mobilenet", "image_size": 32, "order": "LLLLBBBBBBBBBB", "frames": 40,
       "priority": 2},
      {"name": "paced", "graph": "squeezenet", "image_size": 32, "order": "LLBBBBBBBB", "frames": 10,
       "rate": 50}
    ]})");
  const std::string profile = (dir_ / "profile.json").string();
  const std::string trace = (dir_ / "trace.json").string();
  const Exit e = run({"--workload=" + workload, "--profile-out=" + profile, "--trace-out=" + trace});
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("workload of 3 networks, mode pipeline, policy oldest"));
  EXPECT_THAT(e.out, ContainsRegex("\n  squeeze +BBBBBLLLLL +60/60 "));
  EXPECT_THAT(e.out, ContainsRegex("\n  paced +LLBBBBBBBB +10/10 "));

  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  ASSERT_EQ(j["networks"].size(), 3u);
  const std::map<std::string, uint64_t> frames = {{"squeeze", 60}, {"mobile", 40}, {"paced", 10}};
  for (const auto& n : j["networks"]) {
    const std::string name = n["name"];
    EXPECT_EQ(n["frames_completed"], frames.at(name)) << name;
    EXPECT_EQ(n["requests"].size(), frames.at(name)) << name;
    EXPECT_EQ(n["profile"]["frames_completed"], frames.at(name)) << name;
    EXPECT_GT(n["latency_from_arrival_ms"]["p99"].get<double>(), 0) << name;
    EXPECT_LE(n["latency_from_arrival_ms"]["p50"].get<double>(), n["latency_from_arrival_ms"]["p90"].get<double>());
    EXPECT_LE(n["latency_from_arrival_ms"]["p90"].get<double>(), n["latency_from_arrival_ms"]["p99"].get<double>());
  }
  const auto& paced = j["networks"][2];
  for (size_t f = 0; f < 10; ++f) {
    EXPECT_NEAR(paced["requests"][f]["arrival_ms"].get<double>(), 20.0 * static_cast<double>(f), 1e-3);
    EXPECT_GT(paced["requests"][f]["end_ms"].get<double>(), paced["requests"][f]["arrival_ms"].get<double>());
  }
  ASSERT_FALSE(j["processors"].empty());
  const double wall_ms = j["wall_ms"].get<double>();
  ASSERT_GT(wall_ms, 0);
  for (const auto& p : j["processors"]) {
    const double busy = p["busy_ms"].get<double>(), bubble = p["bubble_ms"].get<double>(),
                 idle = p["idle_ms"].get<double>();
    EXPECT_GT(p["utilisation"].get<double>(), 0) << p;
    EXPECT_LE(p["utilisation"].get<double>(), 1.0) << p;
    EXPECT_NEAR(p["utilisation"].get<double>(), busy / wall_ms, 1e-9) << p;
    EXPECT_GE(bubble, 0) << p;
    EXPECT_GE(idle, 0) << p;
    // Busy, waiting on another stage and idle split the window: no stretch counted twice or lost.
    EXPECT_NEAR(busy + bubble + idle, wall_ms, 1e-3) << p;
  }

  const nlohmann::json t = nlohmann::json::parse(test::read_file(trace));
  std::map<int, std::vector<std::pair<double, double>>> slices;  // per processor track
  std::map<std::string, size_t> per_network;
  for (const auto& ev : t["traceEvents"]) {
    if (ev["ph"] != "X" || ev["cat"] != "subgraph") continue;
    slices[ev["tid"].get<int>()].push_back({ev["ts"].get<double>(), ev["ts"].get<double>() + ev["dur"].get<double>()});
    ++per_network[ev["name"].get<std::string>()];
  }
  EXPECT_EQ(per_network["squeeze"], 60u * 2);  // two sub-graphs per request
  EXPECT_EQ(per_network["mobile"], 40u * 2);
  EXPECT_EQ(per_network["paced"], 10u * 2);
  for (auto& [tid, list] : slices) {
    std::sort(list.begin(), list.end());
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_LE(list[i - 1].second, list[i].first + 1e-3) << "processor track " << tid << " overlaps";
    }
  }
}

// SIGINT stops every network after the sub-graph runs in progress: the report and the profile
// say how far each got, exit 130.
TEST_F(WorkloadCliTest, InterruptStopsEveryNetworkAndWritesTheProfile) {
  const std::string profile = (dir_ / "profile.json").string();
  const pid_t pid = test::spawn_process(
      CO_UP_BINARY,
      {"--profile-out=" + profile,
       "--workload=squeezenet:BBBBBLLLLL:image_size=32:frames=100000000;"
       "mobilenet:LLLLBBBBBBBBBB:image_size=32:frames=100000000:rate=100"},
      dir_.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(kill(pid, SIGINT), 0);
  const Exit e = test::finish_process(pid, dir_.path());
  EXPECT_EQ(e.code, 130) << e;
  EXPECT_THAT(e.err, ContainsRegex("^co_up: interrupted after [0-9]+ of 200000000 requests; profile written\n$"));
  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  ASSERT_EQ(j["networks"].size(), 2u);
  for (const auto& n : j["networks"]) {
    EXPECT_LT(n["frames_completed"].get<uint64_t>(), 100000000u);
    EXPECT_TRUE(n["interrupted"].get<bool>());
  }
}

TEST_F(WorkloadCliTest, CommandLineGroupsRunToo) {
  const Exit e = run({"--workload=squeezenet:BBBBBLLLLL:image_size=32:frames=7;"
                      "mobilenet:BBBBBBBBBBBBBB:name=m:image_size=32:frames=5;policy=priority"});
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("policy priority"));
  EXPECT_THAT(e.out, ContainsRegex("\n  squeezenet +BBBBBLLLLL +7/7 "));
  EXPECT_THAT(e.out, ContainsRegex("\n  m +BBBBBBBBBBBBBB +5/5 "));
}

}  // namespace
}  // namespace co_up
