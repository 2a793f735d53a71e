// The co_up binary leaves the machine's clocks as it found them on every way out: SIGHUP and
// SIGQUIT stop in order like SIGINT (exit 128+signal, profile written, DVFS restored); a second
// signal exits at once but restores; a plugin crashing in device_create gets one line naming it,
// DVFS restored, and the process dies by the signal; after SIGKILL the journal lets
// `co_up --restore-dvfs` put the values back, every start warns until then, and a live run's
// journal is never touched. Also the host's cpufreq policies per processor at the CLI.
// Everything runs against simulated sysfs trees (tests/power/sim_sysfs.h) with the journal in
// the tree's own directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "tests/plugins/spawn_process.h"
#include "tests/power/sim_sysfs.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using test::Exit;
using test::get;
using test::SimSysfs;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kDied = 1000;  // test::Exit: 1000 + the signal that ended the process

const std::string kP0 = "devices/system/cpu/cpufreq/policy0/";
const std::string kP1 = "devices/system/cpu/cpufreq/policy1/";
const std::string kGpu = "class/devfreq/gpu/";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t line_count(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// A co_up process with a deadline: a hang fails the test instead of stalling ctest.
class Child {
 public:
  Child(const std::vector<std::string>& args, fs::path dir) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    pid_ = test::spawn_process(CO_UP_BINARY, args, dir_);
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void send(int sig) const { ASSERT_EQ(::kill(pid_, sig), 0); }
  // Not reaped: wait() collects the exit.
  bool running() const {
    siginfo_t info{};
    return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid != pid_;
  }
  Exit wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    const auto deadline = Clock::now() + timeout;
    while (running()) {
      if (Clock::now() > deadline) {
        ADD_FAILURE() << "co_up did not end within " << timeout.count() << " s; killing it";
        ::kill(pid_, SIGKILL);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const Exit e = test::finish_process(pid_, dir_);
    pid_ = -1;
    return e;
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
};

class DvfsSignalTest : public ::testing::Test {
 protected:
  DvfsSignalTest() : sim_("signal") {
    sim_.add_standard();
    state_ = sim_.root() / "state";
  }

  // B on `b_backend` (with `b_options`), L on cpu-reference, G a devfreq GPU: the standard tree.
  fs::path write_platform(const std::string& b_backend, const std::string& b_options = "{}") {
    const fs::path file = sim_.root() / "platform.json";
    std::ofstream(file) << R"({"name": "sim", "processors": [
      {"letter": "B", "kind": "cpu", "backend": ")" << b_backend << R"(", "cores": [0],
       "options": )" << b_options << R"(,
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy0",
                "frequencies_khz": [408000, 816000, 1200000, 1800000]}},
      {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1],
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy1",
                "frequencies_khz": [408000, 600000, 1008000]}},
      {"letter": "G", "kind": "gpu", "backend": "opencl", "host": "B",
       "dvfs": {"driver": "devfreq", "node": "class/devfreq/gpu",
                "frequencies_khz": [200000, 400000, 800000]}}]})";
    return file;
  }
  std::vector<std::string> common() const {
    return {"--sysfs-root=" + sim_.root().string(), "--state-dir=" + state_.string(),
            std::string("--plugins=") + CO_UP_TEST_PLUGIN_DIR};
  }
  // A long alexnet run at --frequency=max on `platform`.
  std::vector<std::string> long_run(const fs::path& platform, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"--graph=alexnet", "--image-size=64", "--order=BBBBLLLL",
                                     "--frequency=max", "--n=100000000", "--platform=" + platform.string()};
    for (const std::string& a : common()) args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  Exit run(std::vector<std::string> args, const std::string& tag) {
    for (const std::string& a : common()) args.push_back(a);
    Child child(args, sim_.root() / tag);
    return child.wait();
  }
  // Waits until every level of --frequency=max is written (G is set last at setup).
  void wait_for_levels() {
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (get(sim_ / (kGpu + "userspace/set_freq")) != "800000000" && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(get(sim_ / (kGpu + "userspace/set_freq")), "800000000");
    expect_levels_applied();
  }
  void expect_levels_applied() {
    EXPECT_EQ(get(sim_ / (kP0 + "scaling_governor")), "userspace");
    EXPECT_EQ(get(sim_ / (kP0 + "scaling_setspeed")), "1800000");
    EXPECT_EQ(get(sim_ / (kP1 + "scaling_min_freq")), "1008000");
    EXPECT_EQ(get(sim_ / (kP1 + "scaling_max_freq")), "1008000");
    EXPECT_EQ(get(sim_ / (kGpu + "governor")), "userspace");
  }
  void expect_restored() {
    EXPECT_EQ(get(sim_ / (kP0 + "scaling_governor")), "schedutil");
    EXPECT_EQ(get(sim_ / (kP1 + "scaling_min_freq")), "408000");
    EXPECT_EQ(get(sim_ / (kP1 + "scaling_max_freq")), "1008000");
    EXPECT_EQ(get(sim_ / (kGpu + "governor")), "simple_ondemand");
  }
  std::vector<fs::path> journals() const {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(state_, ec)) files.push_back(e.path());
    return files;
  }

  // An orderly stop by `sig` mid-run: 128+sig, the profile written, DVFS restored, no journal.
  void stop_in_order_with(int sig) {
    const fs::path platform = write_platform("cpu-reference");
    const fs::path profile = sim_.root() / "profile.json";
    Child child(long_run(platform, {"--profile-out=" + profile.string()}), sim_.root() / "run");
    wait_for_levels();
    EXPECT_EQ(journals().size(), 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // frames running
    child.send(sig);
    const Exit e = child.wait();
    EXPECT_EQ(e.code, 128 + sig) << e;
    EXPECT_THAT(e.err, HasSubstr("co_up: interrupted after ")) << e;
    EXPECT_THAT(e.err, HasSubstr("; profile written")) << e;
    EXPECT_EQ(line_count(e.err), 1u) << e;
    const nlohmann::json j = nlohmann::json::parse(slurp(profile));
    EXPECT_EQ(j.at("interrupted"), true);
    expect_restored();
    EXPECT_TRUE(journals().empty());
  }

  SimSysfs sim_;
  fs::path state_;
};

TEST_F(DvfsSignalTest, SighupStopsInOrderWritesTheProfileAndRestores) { stop_in_order_with(SIGHUP); }

TEST_F(DvfsSignalTest, SigquitStopsInOrderWritesTheProfileAndRestores) { stop_in_order_with(SIGQUIT); }

TEST_F(DvfsSignalTest, SecondSigintExitsAtOnceButRestores) {
  // B's device_create never returns: the orderly stop the first SIGINT asks for cannot happen.
  const fs::path platform = write_platform("crashing", R"({"fault": "hang"})");
  Child child(long_run(platform), sim_.root() / "run");
  wait_for_levels();
  child.send(SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(child.running()) << "co_up ended on the first SIGINT while stuck in device_create";
  expect_levels_applied();
  child.send(SIGINT);
  const Exit e = child.wait();
  EXPECT_EQ(e.code, 130) << e;
  EXPECT_EQ(e.err, "co_up: second signal: DVFS restored, exiting without writing the profile or traces\n");
  expect_restored();
  EXPECT_TRUE(journals().empty());
}

class DvfsCrashTest : public DvfsSignalTest {
 protected:
  DvfsCrashTest() {
    // Sanitizers have handlers of their own for these signals; the chain to them is by design,
    // but what they print and how they exit is theirs. Here the handler hands on to the default
    // action, so the test sees the process die by the signal in every build.
    for (const char* name : {"ASAN_OPTIONS", "TSAN_OPTIONS"}) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
      const std::string value = (old != nullptr ? std::string(old) + ":" : std::string()) +
                                "handle_segv=0:handle_sigbus=0:handle_abort=0";
      ::setenv(name, value.c_str(), 1);
    }
  }
  ~DvfsCrashTest() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  void crash_with(const std::string& fault, int sig, const std::string& name) {
    const fs::path platform = write_platform("crashing", R"({"fault": ")" + fault + R"("})");
    Child child(long_run(platform), sim_.root() / "run");
    const Exit e = child.wait();
    EXPECT_EQ(e.code, kDied + sig) << e;
    EXPECT_EQ(e.err, "co_up: crashed with " + name +
                         " inside plugin 'crashing' (device_create); plugins run as trusted code in "
                         "co_up's process \xE2\x80\x94 report this to the plugin's author\n")
        << e;
    expect_restored();
    EXPECT_TRUE(journals().empty());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(DvfsCrashTest, SegfaultInAPluginNamesItRestoresAndDiesBySigsegv) {
  crash_with("segv", SIGSEGV, "SIGSEGV");
}

TEST_F(DvfsCrashTest, AbortInAPluginNamesItRestoresAndDiesBySigabrt) {
  crash_with("abort", SIGABRT, "SIGABRT");
}

TEST_F(DvfsSignalTest, OtherFatalSignalsRestoreAndEndByTheSignal) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer defers an asynchronous signal to its own delivery points; once in two runs
  // here SIGUSR1 never reached the handler within 120 s. Release and ASan check this.
  GTEST_SKIP() << "ThreadSanitizer defers SIGUSR1 delivery (seen never delivered in 120 s)";
#endif
  const fs::path platform = write_platform("cpu-reference");
  Child child(long_run(platform), sim_.root() / "run");
  wait_for_levels();
  child.send(SIGUSR1);
  const Exit e = child.wait();
  EXPECT_EQ(e.code, kDied + SIGUSR1) << e;
  EXPECT_EQ(e.err,
            "co_up: ended by SIGUSR1 without an orderly stop (SIGINT, SIGTERM, SIGHUP or SIGQUIT "
            "write the profile); DVFS is restored\n");
  expect_restored();
  EXPECT_TRUE(journals().empty());
}

TEST_F(DvfsSignalTest, ClosedOutputDoesNotEndTheRunWithClocksChanged) {
  // L cannot be set: --dvfs=best-effort warns on stderr while B's level is applied, and the
  // reader of that pipe is gone. The write fails (no death by SIGPIPE); the run ends as usual.
  sim_.make_unwritable(kP1 + "scaling_max_freq");
  const fs::path platform = write_platform("cpu-reference");
  std::string command = "'" + std::string(CO_UP_BINARY) + "'";
  for (const std::string& a : long_run(platform, {"--dvfs=best-effort"})) {
    command += " '" + (a == "--n=100000000" ? std::string("--n=3") : a) + "'";
  }
  const fs::path out = sim_.root() / "pipe.out";
  const std::string full = "sh -c \"" + command + " 2>&1 | true; echo done\" > '" + out.string() + "'";
  ASSERT_EQ(std::system(full.c_str()), 0);
  EXPECT_EQ(slurp(out), "done\n");
  EXPECT_EQ(get(sim_ / (kP0 + "scaling_governor")), "schedutil");
  EXPECT_EQ(get(sim_ / (kGpu + "governor")), "simple_ondemand");
  EXPECT_TRUE(journals().empty());
}

TEST_F(DvfsCrashTest, CrashOnAThreadOutsideAnyPluginSaysInsideCoUp) {
  // The main thread is stuck in the plugin's device_create; the signal goes to co_up's
  // stop-signal watcher thread ("co_up-signals"), which is in no plugin call.
  const fs::path platform = write_platform("crashing", R"({"fault": "hang"})");
  Child child(long_run(platform), sim_.root() / "run");
  wait_for_levels();
  pid_t watcher = 0;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(child.pid()) + "/task")) {
    if (get(task.path() / "comm") == "co_up-signals") {
      watcher = static_cast<pid_t>(std::stol(task.path().filename().string()));
    }
  }
  ASSERT_NE(watcher, 0);
  ASSERT_EQ(::syscall(SYS_tgkill, child.pid(), watcher, SIGSEGV), 0);
  const Exit e = child.wait();
  EXPECT_EQ(e.code, kDied + SIGSEGV) << e;
  EXPECT_EQ(e.err, "co_up: crashed with SIGSEGV inside co_up; please report this as a co_up bug\n");
  expect_restored();
  EXPECT_TRUE(journals().empty());
}

TEST_F(DvfsSignalTest, AfterSigkillStartsWarnAndRestoreDvfsPutsTheValuesBack) {
  const fs::path platform = write_platform("crashing", R"({"fault": "hang"})");
  pid_t dead_pid = 0;
  {
    Child child(long_run(platform), sim_.root() / "run");
    wait_for_levels();
    dead_pid = child.pid();
    child.send(SIGKILL);
    EXPECT_EQ(child.wait().code, kDied + SIGKILL);
  }
  expect_levels_applied();  // nothing could restore them
  const std::vector<fs::path> left = journals();
  ASSERT_EQ(left.size(), 1u);
  const nlohmann::json j = nlohmann::json::parse(slurp(left[0]));
  EXPECT_EQ(j.at("pid"), dead_pid);
  EXPECT_EQ(j.at("nodes").size(), 3u);

  // Any start warns, once, with the command to run.
  Exit e = run({"--list-frequencies", "--platform=" + platform.string()}, "list");
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_EQ(line_count(e.err), 1u) << e;
  EXPECT_THAT(e.err, StartsWith("co_up: warning: a co_up run (pid " + std::to_string(dead_pid) +
                                ") ended without restoring the DVFS governors and frequencies"));
  EXPECT_THAT(e.err, HasSubstr("run 'co_up --restore-dvfs --sysfs-root=" + sim_.root().string() +
                               " --state-dir=" + state_.string() + "' to put them back"));

  e = run({"--restore-dvfs"}, "restore");
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_EQ(e.err, "");
  EXPECT_THAT(e.out, HasSubstr("restoring DVFS left by co_up pid " + std::to_string(dead_pid)));
  EXPECT_THAT(e.out, HasSubstr((sim_ / (kGpu + "governor")).string() + " <- simple_ondemand\n"));
  EXPECT_THAT(e.out, HasSubstr((sim_ / (kP1 + "scaling_min_freq")).string() + " <- 408000\n"));
  EXPECT_THAT(e.out, HasSubstr((sim_ / (kP0 + "scaling_governor")).string() + " <- schedutil\n"));
  EXPECT_THAT(e.out, HasSubstr("done; journal removed"));
  expect_restored();
  EXPECT_TRUE(journals().empty());

  e = run({"--restore-dvfs"}, "again");
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("nothing to restore"));
  e = run({"--list-frequencies", "--platform=" + platform.string()}, "list2");
  EXPECT_EQ(e.err, "") << e;
}

TEST_F(DvfsSignalTest, RestoreDvfsRefusesTheJournalOfARunningCoUp) {
  const fs::path platform = write_platform("crashing", R"({"fault": "hang"})");
  Child child(long_run(platform), sim_.root() / "run");
  wait_for_levels();
  const Exit e = run({"--restore-dvfs"}, "restore");
  EXPECT_EQ(e.code, 1) << e;
  EXPECT_EQ(line_count(e.err), 1u) << e;
  EXPECT_THAT(e.err, HasSubstr("belongs to co_up pid " + std::to_string(child.pid()) +
                               ", which is still running"));
  expect_levels_applied();  // untouched
  EXPECT_EQ(journals().size(), 1u);
  // The running co_up restores its own levels (here on the second SIGTERM: it is stuck).
  child.send(SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  child.send(SIGTERM);
  EXPECT_EQ(child.wait().code, 128 + SIGTERM);
  expect_restored();
  EXPECT_TRUE(journals().empty());
}

TEST_F(DvfsSignalTest, HostPoliciesGoToTheProcessorsOfTheirCores) {
  SimSysfs host("percore");
  host.add_policy(0, "0", true, "800000 1600000 2400000", "800000", "2400000");
  host.add_policy(1, "1", true, "800000 1600000 2400000", "800000", "2400000");
  Child child({"--list-frequencies", "--sysfs-root=" + host.root().string(),
               "--state-dir=" + state_.string()},
              sim_.root() / "percore");
  const Exit e = child.wait();
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("  B  CPU half B (cores 0) (cpufreq devices/system/cpu/cpufreq/policy0)\n"));
  EXPECT_THAT(e.out, HasSubstr("  L  CPU half L (cores 1) (cpufreq devices/system/cpu/cpufreq/policy1)\n"));
  EXPECT_THAT(e.out, Not(HasSubstr("one DVFS domain")));
}

TEST_F(DvfsSignalTest, SharedPolicyIsReportedAndConflictingLevelsAreOneError) {
  SimSysfs host("sharedpolicy");
  host.add_policy(0, "0-1", true, "800000 1600000 2400000", "800000", "2400000");
  Child list({"--list-frequencies", "--sysfs-root=" + host.root().string(),
              "--state-dir=" + state_.string()},
             sim_.root() / "list");
  Exit e = list.wait();
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("  B  CPU half B (cores 0) (cpufreq devices/system/cpu/cpufreq/policy0), "
                               "one DVFS domain with L (shared cpufreq node: a level set for one is set "
                               "for all)\n"));
  EXPECT_THAT(e.out, HasSubstr("  L  CPU half L (cores 1) (cpufreq devices/system/cpu/cpufreq/policy0), "
                               "one DVFS domain with B"));
  Child run({"--graph=alexnet", "--image-size=64", "--order=BBBBLLLL", "--frequency={3-2}", "--n=1",
             "--sysfs-root=" + host.root().string(), "--state-dir=" + state_.string(),
             std::string("--plugins=") + CO_UP_TEST_PLUGIN_DIR},
            sim_.root() / "conflict");
  e = run.wait();
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_EQ(e.err,
            "co_up: error: --frequency: 'B' and 'L' share one DVFS domain (cpufreq "
            "devices/system/cpu/cpufreq/policy0) but get different levels at once: 'B' level 3 "
            "(2400 MHz) from token 1 (sub-graph 0, 'B'), 'L' level 2 (1600 MHz) from token 2 "
            "(sub-graph 1, 'L'); give both the same level (use --mode=switch for per-layer DVFS)\n");
  EXPECT_EQ(get(host / "devices/system/cpu/cpufreq/policy0/scaling_governor"), "schedutil");
}

}  // namespace
}  // namespace co_up
