// The DVFS journal: written before the first sysfs write with the original values, removed after
// a complete restore, kept when a restore fails; the lock-free restore for signal paths; reading
// a dead run's journal back (restore_journal) and telling dead from live writers; the state
// directory rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/platform.h"
#include "power/dvfs_journal.h"
#include "power/sysfs_dvfs.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::power {
namespace {

using ::testing::HasSubstr;
using test::get;
using test::put;
using test::SimSysfs;
namespace fs = std::filesystem;

const std::string kP0 = "devices/system/cpu/cpufreq/policy0/";
const std::string kP1 = "devices/system/cpu/cpufreq/policy1/";
const std::string kGpu = "class/devfreq/gpu/";

nlohmann::json read_json(const fs::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
}

// Every value the standard tree starts with, as the restore must leave it (scaling_setspeed is
// only restored when the governor was userspace: other governors ignore it).
void expect_original(const SimSysfs& sim) {
  EXPECT_EQ(get(sim / (kP0 + "scaling_governor")), "schedutil");
  EXPECT_EQ(get(sim / (kP1 + "scaling_min_freq")), "408000");
  EXPECT_EQ(get(sim / (kP1 + "scaling_max_freq")), "1008000");
  EXPECT_EQ(get(sim / (kGpu + "governor")), "simple_ondemand");
}

class DvfsJournalTest : public ::testing::Test {
 protected:
  DvfsJournalTest() : sim_("journal") {
    sim_.add_standard();
    platform_ = parse_platform(sim_.platform_json(), "sim");
    state_ = sim_.root() / "state";
  }
  SimSysfs sim_;
  Platform platform_;
  fs::path state_;
};

TEST_F(DvfsJournalTest, WrittenBeforeTheFirstWriteAndRemovedAfterTheRestore) {
  SysfsDvfs dvfs(platform_, sim_.root(), state_);
  EXPECT_EQ(dvfs.journal_file().parent_path(), state_);
  EXPECT_FALSE(fs::exists(dvfs.journal_file()));
  ASSERT_EQ(dvfs.set_level('L', 1), "");
  ASSERT_TRUE(fs::exists(dvfs.journal_file()));
  nlohmann::json j = read_json(dvfs.journal_file());
  EXPECT_EQ(j["pid"], ::getpid());
  EXPECT_EQ(j["sysfs_root"], canonical_root(sim_.root()));
  EXPECT_EQ(j["start_time"], process_start_time(::getpid()));
  ASSERT_EQ(j["nodes"].size(), 1u);
  EXPECT_EQ(j["nodes"][0]["dir"], "devices/system/cpu/cpufreq/policy1");
  EXPECT_EQ(j["nodes"][0]["mode"], "clamp");
  EXPECT_EQ(j["nodes"][0]["min"], "408000");
  EXPECT_EQ(j["nodes"][0]["max"], "1008000");
  ASSERT_EQ(dvfs.set_level('B', 3), "");
  ASSERT_EQ(dvfs.set_level('G', 1), "");
  ASSERT_EQ(dvfs.set_level('B', 0), "");  // B again: saved values stay the first ones
  j = read_json(dvfs.journal_file());
  ASSERT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["nodes"][1]["dir"], "devices/system/cpu/cpufreq/policy0");
  EXPECT_EQ(j["nodes"][1]["mode"], "userspace");
  EXPECT_EQ(j["nodes"][1]["governor"], "schedutil");
  EXPECT_EQ(j["nodes"][2]["driver"], "devfreq");
  EXPECT_EQ(j["nodes"][2]["governor"], "simple_ondemand");
  EXPECT_TRUE(dvfs.restore().empty());
  EXPECT_FALSE(fs::exists(dvfs.journal_file()));
  expect_original(sim_);
  // No temporary file left behind either.
  EXPECT_TRUE(fs::is_empty(state_));
}

// The journal comes first: when it cannot be written, no sysfs file is.
TEST_F(DvfsJournalTest, FailedJournalWriteFailsTheLevelBeforeAnySysfsWrite) {
  put(sim_.root() / "not_a_dir", "x");
  SysfsDvfs dvfs(platform_, sim_.root(), sim_.root() / "not_a_dir" / "state");
  EXPECT_THAT(dvfs.set_level('B', 3), HasSubstr("cannot write the DVFS journal"));
  EXPECT_TRUE(dvfs.writes().empty());
  expect_original(sim_);
}

TEST_F(DvfsJournalTest, FailedRestoreKeepsTheJournal) {
  fs::path journal;
  {
    SysfsDvfs dvfs(platform_, sim_.root(), state_);
    ASSERT_EQ(dvfs.set_level('L', 0), "");
    journal = dvfs.journal_file();
    sim_.make_unwritable(kP1 + "scaling_max_freq");
  }
  EXPECT_TRUE(fs::exists(journal));
}

TEST_F(DvfsJournalTest, LockFreeRestorePutsEverythingBackAndRemovesTheJournal) {
  // In a child process: the restore ends this process's level writes, as it is meant for the
  // way out. The child holds SysfsDvfs's mutex in spirit: it never calls restore().
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto* dvfs = new SysfsDvfs(platform_, sim_.root(), state_);  // never destroyed: like a crash
    bool ok = dvfs->set_level('B', 3).empty() && dvfs->set_level('L', 0).empty() &&
              dvfs->set_level('G', 2).empty() && fs::exists(dvfs->journal_file());
    ok = ok && restore_dvfs_async_signal_safe() == 3 && !fs::exists(dvfs->journal_file());
    // Afterwards no level is written any more.
    ok = ok && !dvfs->set_level('B', 1).empty();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  expect_original(sim_);
  EXPECT_TRUE(fs::is_empty(state_));
}

TEST_F(DvfsJournalTest, DeadRunsJournalIsRestoredLiveOneIsNot) {
  // A child applies levels and dies without any cleanup (as after SIGKILL).
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto* dvfs = new SysfsDvfs(platform_, sim_.root(), state_);
    const bool ok = dvfs->set_level('B', 1).empty() && dvfs->set_level('L', 2).empty() &&
                    dvfs->set_level('G', 0).empty();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_EQ(status, 0);
  EXPECT_EQ(get(sim_ / (kP0 + "scaling_governor")), "userspace");

  // A journal of this (live) process for the same root, and one for another root.
  SysfsDvfs live(platform_, sim_.root(), state_);
  ASSERT_EQ(live.set_level('L', 0), "");
  SimSysfs other("journal_other");
  other.add_standard();
  SysfsDvfs elsewhere(platform_, other.root(), state_);
  ASSERT_EQ(elsewhere.set_level('B', 0), "");

  const JournalScan scan = scan_journals(state_, sim_.root());
  ASSERT_EQ(scan.dead.size(), 1u);
  EXPECT_EQ(scan.dead[0].pid, pid);
  ASSERT_EQ(scan.live.size(), 1u);
  EXPECT_EQ(scan.live[0].pid, ::getpid());
  EXPECT_EQ(scan.other_roots, 1u);
  EXPECT_TRUE(scan.unreadable.empty());
  EXPECT_THAT(dead_journal_warning(scan, sim_.root().string(), state_.string()),
              HasSubstr("a co_up run (pid " + std::to_string(pid) + ") ended without restoring"));
  EXPECT_THAT(dead_journal_warning(scan, sim_.root().string(), state_.string()),
              HasSubstr("run 'co_up --restore-dvfs --sysfs-root=" + sim_.root().string() +
                        " --state-dir=" + state_.string() + "'"));

  // The live controller restores L itself (to the dead run's level, which it found); the dead
  // run's journal then puts G, L and B back, L's max before its min (min <= max at every step).
  EXPECT_TRUE(live.restore().empty());
  const std::vector<SysfsWrite> writes = restore_journal(scan.dead[0]);
  std::vector<std::string> files;
  for (const SysfsWrite& w : writes) {
    EXPECT_TRUE(w.ok) << w.error;
    files.push_back(fs::path(w.path).lexically_relative(sim_.root()).string() + "=" + w.value);
  }
  EXPECT_THAT(files, ::testing::ElementsAre(kGpu + "governor=simple_ondemand",
                                            kP1 + "scaling_max_freq=1008000",
                                            kP1 + "scaling_min_freq=408000",
                                            kP0 + "scaling_governor=schedutil"));
  expect_original(sim_);
  EXPECT_FALSE(fs::exists(scan.dead[0].file));
  EXPECT_TRUE(scan_journals(state_, sim_.root()).dead.empty());
}

TEST_F(DvfsJournalTest, UnreadableJournalIsReportedNotTouched) {
  put(state_ / "dvfs-1-1.json", "{not json");
  const JournalScan scan = scan_journals(state_, sim_.root());
  ASSERT_EQ(scan.unreadable.size(), 1u);
  EXPECT_THAT(scan.unreadable[0], HasSubstr("dvfs-1-1.json is not a valid DVFS journal"));
  EXPECT_TRUE(fs::exists(state_ / "dvfs-1-1.json"));
}

TEST(StateDirTest, OptionThenEnvironmentThenSystemOrXdg) {
  const char* saved_env = std::getenv("CO_UP_STATE_DIR");
  const std::string saved = saved_env != nullptr ? saved_env : "";
  EXPECT_EQ(resolve_state_dir("/x/state"), fs::path("/x/state"));
  ::setenv("CO_UP_STATE_DIR", "/y/state", 1);
  EXPECT_EQ(resolve_state_dir(""), fs::path("/y/state"));
  EXPECT_EQ(resolve_state_dir("/x/state"), fs::path("/x/state"));
  ::unsetenv("CO_UP_STATE_DIR");
  const fs::path fallback = resolve_state_dir("");
  if (::access("/var/lib/co_up", W_OK) == 0 ||
      (!fs::exists("/var/lib/co_up") && ::access("/var/lib", W_OK) == 0)) {
    EXPECT_EQ(fallback, fs::path("/var/lib/co_up"));
  } else {
    EXPECT_EQ(fallback.filename(), "co_up");
    EXPECT_TRUE(fallback.parent_path().string().find("state") != std::string::npos) << fallback;
  }
  if (saved_env != nullptr) ::setenv("CO_UP_STATE_DIR", saved.c_str(), 1);
}

}  // namespace
}  // namespace co_up::power
