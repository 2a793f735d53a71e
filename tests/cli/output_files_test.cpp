// The co_up binary with outputs and inputs that must not lose or destroy anything: device nodes,
// symlinks, FIFOs and endless files given as paths, an earlier profile and a killed run, and
// standard output that cannot be written. Every special file is made under the test's own
// scratch directory; runs are tiny (--image-size=64).
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/npy.h"
#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using test::CommandResult;
using test::join_quoted;
using test::lines_of;
using test::read_file;
using test::ScratchDir;
using test::shell_quote;

const std::string kBinary = CO_UP_BINARY;
const std::vector<std::string> kTinyRun = {"--graph=alexnet", "--image-size=64", "--n=1"};

// co_up with `args`, then `redirect` (shell syntax for stdout) — through the shell, bounded.
CommandResult co_up(const ScratchDir& dir, std::vector<std::string> args,
                    const std::string& redirect = "", int timeout_s = 120) {
  args.insert(args.begin(), kBinary);
  const std::string line = join_quoted(args) + (redirect.empty() ? "" : " " + redirect);
  return test::run_command(line, dir.path(), timeout_s);
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// Exit 2 and exactly one line on stderr, an error containing each of `parts`.
void expect_one_line_error(const CommandResult& r, int code, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.exit_code, code) << r;
  const std::vector<std::string> lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r;
  EXPECT_THAT(lines[0], StartsWith("co_up: error: ")) << r;
  for (const std::string& part : parts) EXPECT_THAT(lines[0], HasSubstr(part)) << r;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFiles, DeviceNodeGivenAsProfileOutStaysADevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating a device node needs root";
  ScratchDir dir;
  const fs::path node = dir / "n";
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  const CommandResult r = co_up(dir, with(kTinyRun, {"--profile-out=" + node.string()}));
  EXPECT_EQ(r.exit_code, 0) << r;
  struct stat st {};
  ASSERT_EQ(::stat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
}

TEST(OutputFiles, SymlinkedProfileOutReplacesTheTargetAndKeepsTheLink) {
  ScratchDir dir;
  dir.write("real.json", "old");
  fs::create_symlink("real.json", dir / "link.json");
  const CommandResult r = co_up(dir, with(kTinyRun, {"--profile-out=" + (dir / "link.json").string()}));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  const nlohmann::json profile = nlohmann::json::parse(read_file(dir / "real.json"));
  EXPECT_EQ(profile.at("frames_completed"), 1);
}

TEST(OutputFiles, EarlierProfileSurvivesAKilledRun) {
  ScratchDir dir;
  fs::create_directories(dir / "out");
  const fs::path profile = dir.write("out/p.json", "earlier profile");
  const pid_t pid = test::spawn_process(
      kBinary, {"--graph=alexnet", "--image-size=64", "--n=100000", "--profile-out=" + profile.string()},
      dir.path());
  // Until setup is done and frames run: the old code had replaced the profile by then.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const test::Exit e = test::finish_process(pid, dir.path());
  EXPECT_EQ(e.code, 1000 + SIGKILL) << e;
  EXPECT_EQ(read_file(profile), "earlier profile");
  EXPECT_EQ(names_in(dir / "out"), std::vector<std::string>{"p.json"}) << "a temporary file was left";
}

TEST(OutputFiles, UnwritableOutputsAreRefusedBeforeAnyFrameRuns) {
  ScratchDir dir;
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = co_up(dir, {"--graph=alexnet", "--image-size=64", "--n=40", "--power",
                                      "--trace-out=/proc/co_up_x.json"});
  expect_one_line_error(r, 2, {"--trace-out", "/proc/co_up_x.json"});
  EXPECT_EQ(r.out, "") << "no report: nothing ran";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));

  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0644), 0);
  expect_one_line_error(co_up(dir, with(kTinyRun, {"--profile-out=" + (dir / "fifo.json").string()}), "", 30),
                        2, {"--profile-out", "it is a FIFO"});
  expect_one_line_error(co_up(dir, with(kTinyRun, {"--output=" + (dir / "none" / "y.npy").string()})), 2,
                        {"--output", "does not exist"});
  const std::string same = (dir / "same").string();
  expect_one_line_error(co_up(dir, with(kTinyRun, {"--profile-out=" + same, "--output=" + same})), 2,
                        {"--output and --profile-out both name"});
  EXPECT_FALSE(fs::exists(dir / "same"));
}

TEST(OutputFiles, ProfileCommandChecksItsOutputFirst) {
  ScratchDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0644), 0);
  expect_one_line_error(co_up(dir, {"profile", "--graph=alexnet", "--image-size=64",
                                    "--profile-out=" + (dir / "fifo.json").string()}, "", 30),
                        2, {"--profile-out", "it is a FIFO"});
}

TEST(StandardOutput, WriteErrorsExitNonZeroWithOneLine) {
  ScratchDir dir;
  const CommandResult run = co_up(dir, kTinyRun, ">/dev/full");
  EXPECT_EQ(run.exit_code, 1) << run;
  ASSERT_EQ(lines_of(run.err).size(), 1u) << run;
  EXPECT_THAT(run.err, HasSubstr("cannot write to standard output: ENOSPC"));

  const CommandResult layers = co_up(dir, {"--graph=alexnet", "--list-layers"}, ">/dev/full");
  EXPECT_EQ(layers.exit_code, 1) << layers;
  EXPECT_THAT(layers.err, HasSubstr("cannot write to standard output: ENOSPC"));

  const fs::path profile = dir / "p.json";
  planner::write_layer_profile(profile, planner::make_synthetic_profile({}));
  const CommandResult plan = co_up(dir, {"plan", "--profile=" + profile.string()}, ">/dev/full");
  EXPECT_EQ(plan.exit_code, 1) << plan;
  EXPECT_THAT(plan.err, HasSubstr("cannot write to standard output: ENOSPC"));

  expect_one_line_error(co_up(dir, {"--graph=alexnet", "--list-layers"}, ">&-"), 2,
                        {"standard output is closed"});
}

TEST(StandardOutput, AReaderThatGoesAwayEndsTheRunQuietly) {
  ScratchDir dir;
  // `head -c1` reads one byte and exits; the rest of the listing meets a closed pipe.
  const CommandResult r = test::run_command(
      join_quoted({kBinary, "--graph=resnet50", "--units=ops", "--list-layers"}) +
          " | head -c1 >/dev/null; echo \"status ${PIPESTATUS:-}\"",
      dir.path(), 60);
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.err, "") << "no error line for a reader that went away";
}

TEST(EndlessInputs, DevZeroIsRefusedForEveryReader) {
  ScratchDir dir;
  const fs::path profile = dir / "p.json";
  planner::write_layer_profile(profile, planner::make_synthetic_profile({}));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--graph=alexnet", "--platform=/dev/zero", "--list-devices"}, "platform file '/dev/zero'"},
      {with(kTinyRun, {"--labels=/dev/zero"}), "labels file '/dev/zero'"},
      {with(kTinyRun, {"--image=/dev/zero"}), "image '/dev/zero'"},
      {with(kTinyRun, {"--input=/dev/zero"}), ".npy file '/dev/zero'"},
      {{"plan", "--profile=/dev/zero"}, "profile '/dev/zero'"},
      {{"--model=/dev/zero", "--list-layers"}, "model file '/dev/zero'"},
  };
  for (const auto& [args, named] : cases) {
    SCOPED_TRACE(join_quoted(args));
    expect_one_line_error(co_up(dir, args, "", 30), 2, {named, "not a regular file"});
  }
}

TEST(EndlessInputs, FifoInputWithoutWriterIsRefusedAtOnce) {
  ScratchDir dir;
  ASSERT_EQ(::mkfifo((dir / "x.npy").c_str(), 0644), 0);
  expect_one_line_error(co_up(dir, with(kTinyRun, {"--input=" + (dir / "x.npy").string()}), "", 30),
                        2, {"x.npy", "it is a FIFO"});
}

TEST(InputChecks, LabelsFewerThanClassesAreRefused) {
  ScratchDir dir;
  const fs::path labels = dir.write("labels.txt", "cat\ndog\n");
  expect_one_line_error(co_up(dir, with(kTinyRun, {"--labels=" + labels.string()})), 2,
                        {"--labels", "has 2 labels but the network scores 1000 classes"});
}

TEST(InputChecks, NpyHeaderWithANewlineGivesOneLine) {
  ScratchDir dir;
  // A version 1.0 header whose key holds a newline: the parser quotes it in its message.
  std::string header = "{'de\nscr': '<f4', 'fortran_order': False, 'shape': (1, 3, 64, 64), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += {'\x01', '\x00', static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  bytes += header;
  const fs::path npy = dir.write("x.npy", bytes);
  const CommandResult r = co_up(dir, with(kTinyRun, {"--input=" + npy.string()}));
  expect_one_line_error(r, 2, {"x.npy", "de\\nscr"});
}

}  // namespace
}  // namespace co_up
