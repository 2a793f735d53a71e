// `co_up --workload=...;affinity=1` end to end: B runs each whole network's requests back to back
// and the workload profile JSON says the run had affinity; without it, B alternates and the
// profile says false.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using test::Exit;

class WorkloadAffinityCliTest : public ::testing::Test {
 protected:
  // Runs two squeezenets whole on B, 4 requests each; returns the profile JSON.
  nlohmann::json run(const std::string& settings) {
    const std::string profile = (dir_ / ("profile" + settings + ".json")).string();
    const Exit e = test::finish_process(
        test::spawn_process(CO_UP_BINARY,
                            {"--workload=squeezenet:BBBBBBBBBB:image_size=32:frames=4:name=a;"
                             "squeezenet:BBBBBBBBBB:image_size=32:frames=4:name=b" + settings,
                             "--profile-out=" + profile},
                            dir_.path()),
        dir_.path());
    EXPECT_EQ(e.code, 0) << e;
    return nlohmann::json::parse(test::read_file(profile));
  }
  // The networks of B's sub-graph runs in the order they began.
  static std::string sequence_on_b(const nlohmann::json& j) {
    std::vector<std::pair<int64_t, std::string>> runs;
    for (const auto& n : j["networks"]) {
      for (const auto& ev : n["profile"]["events"]) {
        if (ev["kind"] == "subgraph") runs.push_back({ev["begin_ns"].get<int64_t>(), n["name"].get<std::string>()});
      }
    }
    std::sort(runs.begin(), runs.end());
    std::string out;
    for (const auto& [begin, name] : runs) out += name;
    return out;
  }
  test::ScratchDir dir_;
};

TEST_F(WorkloadAffinityCliTest, AffinityRunsEachNetworksRequestsBackToBack) {
  const nlohmann::json kept = run(";affinity=1");
  ASSERT_TRUE(kept.contains("affinity")) << "the workload profile does not say";
  EXPECT_EQ(kept["affinity"], true);
  EXPECT_EQ(sequence_on_b(kept), "aaaabbbb");
  const nlohmann::json interleaved = run("");
  ASSERT_TRUE(interleaved.contains("affinity"));
  EXPECT_EQ(interleaved["affinity"], false);
  EXPECT_EQ(sequence_on_b(interleaved), "abababab");
}

}  // namespace
}  // namespace co_up
