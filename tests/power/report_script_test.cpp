// scripts/co_up-report on what a real co_up run wrote: a simulated board whose sensor file the
// test fills (tests/power/sim_sysfs.h), --trace-out, --profile-out and --power-csv, then the PNGs.
// Skips, saying so, when python3-matplotlib is not installed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/plugins/spawn_process.h"
#include "tests/power/sim_sysfs.h"

namespace co_up {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using test::Exit;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs args[0] (searched on PATH) with its output in files under `dir`.
Exit run(std::vector<std::string> args, const fs::path& dir) {
  const std::string program = args.front();
  args.erase(args.begin());
  return test::finish_process(test::spawn_process(program, args, dir), dir);
}

const std::string kScript = std::string(CO_UP_SOURCE_DIR) + "/scripts/co_up-report";

bool is_png(const fs::path& p) {
  const std::string bytes = slurp(p);
  return bytes.size() > 1000 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 && bytes.find("IEND") != std::string::npos;
}

class ReportScriptTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path dir = fs::temp_directory_path() / ("co_up_report_deps_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    deps_ = run({kScript, "--check-deps"}, dir);
    fs::remove_all(dir);
  }
  void SetUp() override {
    if (deps_.code == 3) GTEST_SKIP() << "python3-matplotlib is not installed: " << deps_.err;
    ASSERT_EQ(deps_.code, 0) << deps_;
  }
  static inline Exit deps_;
  test::SimSysfs sim_{"report"};
};

TEST_F(ReportScriptTest, PlotsFromARealRunWithASimulatedSensor) {
  sim_.add_standard();
  test::put(sim_ / "class/hwmon/hwmon0/power1_input", "2500000");
  const std::string platform =
      sim_.write_platform(R"(, "sensors": [{"name": "board", "kind": "power", "path": "class/hwmon/hwmon0/power1_input", "scale": 0.001}])")
          .string();
  const fs::path trace = sim_ / "trace.json", profile = sim_ / "profile.json", csv = sim_ / "power.csv";
  const Exit co_up = run({CO_UP_BINARY, "--graph=alexnet", "--image-size=64", "--platform=" + platform,
                          "--sysfs-root=" + sim_.root().string(), "--order=BBBBLLLL", "--n=3",
                          "--trace-out=" + trace.string(), "--profile-out=" + profile.string(),
                          "--power-csv=" + csv.string()},
                         sim_.root());
  ASSERT_EQ(co_up.code, 0) << co_up;

  const fs::path out = sim_ / "plots";
  Exit e = run({kScript, "--trace=" + trace.string(), "--out=" + out.string()}, sim_.root());
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_TRUE(is_png(out / "power_timeline.png"));
  EXPECT_TRUE(is_png(out / "energy_per_layer.png"));
  EXPECT_THAT(e.out, HasSubstr("power_timeline.png"));

  // With co_up's own per-layer numbers and the CSV, into a new directory.
  const fs::path out2 = sim_ / "plots2";
  e = run({kScript, "--trace=" + trace.string(), "--profile=" + profile.string(), "--csv=" + csv.string(),
           "--frames=1-2", "--out=" + out2.string()},
          sim_.root());
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_TRUE(is_png(out2 / "power_timeline.png"));
  EXPECT_TRUE(is_png(out2 / "energy_per_layer.png"));
}

TEST_F(ReportScriptTest, BadInputIsOneLineAndExit2) {
  const fs::path bad = sim_ / "bad.json";
  test::put(bad, "{\"traceEvents\": [");
  Exit e = run({kScript, "--trace=" + bad.string(), "--out=" + (sim_ / "x").string()}, sim_.root());
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("is not JSON"));
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;
  e = run({kScript, "--trace=" + (sim_ / "missing.json").string(), "--out=" + (sim_ / "x").string()}, sim_.root());
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("cannot read trace"));
  e = run({kScript, "--out=" + (sim_ / "x").string()}, sim_.root());
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("give --trace="));
}

}  // namespace
}  // namespace co_up
