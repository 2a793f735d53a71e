// Plugin loading that can neither crash nor hang co_up, nor take its signals:
// - damaged copies of a real plugin (cut inside the ELF header, inside the program headers, inside
//   a LOAD segment; e_machine of another architecture) are refused with the reason, while the real
//   plugins in the same directory load — in process and through `co_up --list-plugins`, which used
//   to die of SIGBUS inside dlopen;
// - a FIFO, a socket and a directory named *.so are refused, and `co_up --list-plugins` and a run
//   finish (a FIFO used to block every command);
// - a plugin that installs a SIGQUIT handler while loading, in device_create or in compile does
//   not keep it (the handler co_up had is back), --list-plugins says so, and SIGQUIT still ends a
//   running co_up;
// - devices are created only for the processors a run (after --npu_fallback) or the profile
//   command uses: a test plugin mapped to an unused letter writes no device marker.
#include <elf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/elf_check.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Outcome = PluginRecord::Outcome;
namespace fs = std::filesystem;

const fs::path kTestPlugins = CO_UP_TEST_PLUGIN_DIR;
const fs::path kSignalPlugins = CO_UP_SIGNAL_PLUGIN_DIR;
const fs::path kReference = kTestPlugins / CO_UP_REFERENCE_PLUGIN_FILE;
constexpr const char* kBinary = CO_UP_BINARY;

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);

const PluginRecord* find_record(const PluginRegistry& registry, const std::string& file) {
  for (const PluginRecord& r : registry.records()) {
    if (r.path.filename() == file) return &r;
  }
  return nullptr;
}

// The headers of the real reference plugin, to cut it where a partial copy would end.
struct RealPlugin {
  std::string bytes;
  Ehdr eh{};
  std::vector<Phdr> ph;

  RealPlugin() : bytes(test::read_file(kReference)) {
    EXPECT_GT(bytes.size(), sizeof(Ehdr));
    std::memcpy(&eh, bytes.data(), sizeof(eh));
    ph.resize(eh.e_phnum);
    std::memcpy(ph.data(), bytes.data() + eh.e_phoff, ph.size() * sizeof(Phdr));
  }
  // The last LOAD segment with file contents (the one a partial copy loses first).
  size_t last_load() const {
    size_t last = ph.size();
    for (size_t i = 0; i < ph.size(); ++i) {
      if (ph[i].p_type == PT_LOAD && ph[i].p_filesz > 0) last = i;
    }
    EXPECT_LT(last, ph.size());
    return last;
  }
  // The first segment (by index) whose file contents reach past `size`.
  size_t first_segment_past(uint64_t size) const {
    for (size_t i = 0; i < ph.size(); ++i) {
      if (ph[i].p_filesz > 0 && ph[i].p_offset + ph[i].p_filesz > size) return i;
    }
    ADD_FAILURE() << "no segment reaches past byte " << size;
    return 0;
  }
};

std::string truncated(const std::string& what, uint64_t end, uint64_t size) {
  return "truncated: " + what + " ends at byte " + std::to_string(end) + " but the file has " +
         std::to_string(size) + " bytes (a partial copy?)";
}

void copy_reference_into(const test::ScratchDir& dir) {
  fs::copy_file(kReference, dir / CO_UP_REFERENCE_PLUGIN_FILE);
}

void copy_signal_plugin(const test::ScratchDir& dir, const std::string& at) {
  const std::string file = "libsignal_at_" + at + ".so";
  fs::copy_file(kSignalPlugins / file, dir / file);
}

std::string other_machine_name() {
  return elf_machine_name(host_elf_machine() == EM_X86_64 ? EM_AARCH64 : EM_X86_64);
}

// A directory as a user might leave it: the real plugin, three partial copies of it, a copy
// built for another architecture, a FIFO, a socket and a directory named *.so. Returns the reason
// each damaged file must be refused with (by file name).
std::vector<std::pair<std::string, std::string>> make_damaged_directory(
    const test::ScratchDir& dir, std::vector<int>& sockets) {
  copy_reference_into(dir);
  const RealPlugin real;
  std::vector<std::pair<std::string, std::string>> expected;

  dir.write("cut_in_elf_header.so", real.bytes.substr(0, 40));
  expected.emplace_back("cut_in_elf_header.so",
                        truncated("the ELF header", sizeof(Ehdr), 40));

  const uint64_t ph_end = real.eh.e_phoff + uint64_t{real.eh.e_phnum} * sizeof(Phdr);
  const size_t in_phdrs = real.eh.e_phoff + sizeof(Phdr) + sizeof(Phdr) / 2;
  EXPECT_LT(in_phdrs, ph_end);
  dir.write("cut_in_program_headers.so", real.bytes.substr(0, in_phdrs));
  expected.emplace_back("cut_in_program_headers.so",
                        truncated("the program header table", ph_end, in_phdrs));

  const Phdr& load = real.ph[real.last_load()];
  const size_t in_load = load.p_offset + load.p_filesz / 2;
  dir.write("cut_in_load_segment.so", real.bytes.substr(0, in_load));
  const size_t first = real.first_segment_past(in_load);
  EXPECT_EQ(real.ph[first].p_type, static_cast<uint32_t>(PT_LOAD));
  expected.emplace_back("cut_in_load_segment.so",
                        truncated("segment " + std::to_string(first) + " (LOAD)",
                                  real.ph[first].p_offset + real.ph[first].p_filesz, in_load));

  // `head -c 3000` of the issue: inside the first LOAD segment.
  dir.write("head_c_3000.so", real.bytes.substr(0, 3000));
  const size_t first_3000 = real.first_segment_past(3000);
  expected.emplace_back("head_c_3000.so",
                        truncated("segment " + std::to_string(first_3000) + " (LOAD)",
                                  real.ph[first_3000].p_offset + real.ph[first_3000].p_filesz,
                                  3000));

  std::string foreign = real.bytes;
  const uint16_t machine = host_elf_machine() == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
  std::memcpy(&foreign[offsetof(Ehdr, e_machine)], &machine, sizeof(machine));
  dir.write("other_arch.so", foreign);
  expected.emplace_back("other_arch.so", "built for " + other_machine_name() +
                                             ", this co_up runs on " +
                                             elf_machine_name(host_elf_machine()));

  EXPECT_EQ(mkfifo((dir / "fifo.so").c_str(), 0600), 0);
  expected.emplace_back("fifo.so",
                        "a FIFO (named pipe), not a regular file (plugins are loaded from regular "
                        "files only)");
  fs::create_directory(dir / "directory.so");
  expected.emplace_back("directory.so",
                        "a directory, not a regular file (plugins are loaded from regular files "
                        "only)");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = (dir / "socket.so").string();
  EXPECT_LT(socket_path.size(), sizeof(address.sun_path));
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  sockets.push_back(fd);
  expected.emplace_back("socket.so",
                        "a socket, not a regular file (plugins are loaded from regular files only)");
  return expected;
}

class DamagedPluginsTest : public ::testing::Test {
 protected:
  ~DamagedPluginsTest() override {
    for (int fd : sockets_) ::close(fd);
  }
  test::ScratchDir dir_;
  std::vector<int> sockets_;
};

TEST_F(DamagedPluginsTest, AreRefusedWithTheReasonWhileTheRealPluginLoads) {
  const auto expected = make_damaged_directory(dir_, sockets_);
  const auto start = std::chrono::steady_clock::now();
  const PluginRegistry registry = PluginRegistry::load_directory(dir_.path());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(registry.records().size(), expected.size() + 1) << registry.summary();
  for (const auto& [file, reason] : expected) {
    const PluginRecord* r = find_record(registry, file);
    ASSERT_NE(r, nullptr) << file << ": " << registry.summary();
    EXPECT_EQ(r->outcome, Outcome::kRefused) << file;
    EXPECT_EQ(r->reason, reason) << file;
    EXPECT_TRUE(r->backend.empty()) << file;
  }
  const PluginRecord* real = find_record(registry, CO_UP_REFERENCE_PLUGIN_FILE);
  ASSERT_NE(real, nullptr);
  EXPECT_EQ(real->outcome, Outcome::kLoaded) << real->reason;
  EXPECT_NE(registry.find("cpu-reference"), nullptr);
}

TEST_F(DamagedPluginsTest, ListPluginsFinishesAndNamesEveryRefusal) {
  const auto expected = make_damaged_directory(dir_, sockets_);
  // SIGKILL: co_up turns SIGTERM into an orderly stop, which a blocked open() never reaches.
  const test::CommandResult r = test::run_command(
      "timeout -s KILL 60 " +
          test::join_quoted({kBinary, "--plugins=" + dir_.path().string(), "--list-plugins"}),
      dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("loaded   cpu-reference   " CO_UP_REFERENCE_PLUGIN_FILE)) << r;
  for (const auto& [file, reason] : expected) {
    EXPECT_THAT(r.out, HasSubstr("refused  -               " + file + "\n            reason: " +
                                 reason + "\n"))
        << r;
  }
  EXPECT_EQ(r.err, "");
}

// The hang alone (no truncated file to crash first): a FIFO and a directory next to the plugin.
TEST(NonRegularPluginEntries, DoNotHangListPlugins) {
  test::ScratchDir dir;
  copy_reference_into(dir);
  ASSERT_EQ(mkfifo((dir / "x.so").c_str(), 0600), 0);
  fs::create_directory(dir / "y.so");
  const test::CommandResult r = test::run_command(
      "timeout -s KILL 60 " +
          test::join_quoted({kBinary, "--plugins=" + dir.path().string(), "--list-plugins"}),
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(test::lines_of(r.out).size(), 6u) << r;  // header, three records, two reasons
  EXPECT_THAT(r.out, HasSubstr("loaded   cpu-reference   " CO_UP_REFERENCE_PLUGIN_FILE)) << r;
  EXPECT_THAT(r.out, HasSubstr("refused  -               x.so\n            reason: a FIFO")) << r;
  EXPECT_THAT(r.out, HasSubstr("refused  -               y.so\n            reason: a directory"))
      << r;
}

TEST_F(DamagedPluginsTest, ARunNextToThemSucceeds) {
  make_damaged_directory(dir_, sockets_);
  const test::CommandResult r = test::run_command(
      "timeout -s KILL 120 " +
          test::join_quoted({kBinary, "--plugins=" + dir_.path().string(), "--graph=alexnet",
                             "--image-size=64", "--n=1"}),
      dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("frames/s")) << r;
}

// ---------------------------------------------------------------------------------------------
// Signals

void co_up_quit_handler(int) {}

// Installs a SIGQUIT handler standing for co_up's own for the test's lifetime.
class SignalsAfterPluginsTest : public ::testing::Test {
 protected:
  SignalsAfterPluginsTest() {
    struct sigaction a {};
    a.sa_handler = co_up_quit_handler;
    sigemptyset(&a.sa_mask);
    sigaction(SIGQUIT, &a, &before_);
  }
  ~SignalsAfterPluginsTest() override { sigaction(SIGQUIT, &before_, nullptr); }

  static void (*quit_handler())(int) {
    struct sigaction a {};
    sigaction(SIGQUIT, nullptr, &a);
    return a.sa_handler;
  }

  test::ScratchDir dir_;
  struct sigaction before_ {};
};

TEST_F(SignalsAfterPluginsTest, AHandlerInstalledWhileLoadingIsPutBackAndRecorded) {
  copy_reference_into(dir_);
  copy_signal_plugin(dir_, "load");
  copy_signal_plugin(dir_, "factory");
  const PluginRegistry registry = PluginRegistry::load_directory(dir_.path());
  EXPECT_EQ(quit_handler(), co_up_quit_handler);
  for (const std::string at : {"load", "factory"}) {
    const PluginRecord* r = find_record(registry, "libsignal_at_" + at + ".so");
    ASSERT_NE(r, nullptr) << registry.summary();
    EXPECT_EQ(r->outcome, Outcome::kLoaded) << r->reason;
    EXPECT_EQ(r->restored_signals, std::vector<int>{SIGQUIT}) << at;
  }
  const PluginRecord* reference = find_record(registry, CO_UP_REFERENCE_PLUGIN_FILE);
  ASSERT_NE(reference, nullptr);
  EXPECT_TRUE(reference->restored_signals.empty());
}

TEST_F(SignalsAfterPluginsTest, AHandlerInstalledByDeviceCreateIsPutBack) {
  copy_reference_into(dir_);
  copy_signal_plugin(dir_, "device");
  const PluginRegistry registry = PluginRegistry::load_directory(dir_.path());
  const auto plugin = registry.find("signal-at-device");
  ASSERT_NE(plugin, nullptr) << registry.summary();
  ASSERT_EQ(quit_handler(), co_up_quit_handler);
  const auto device = Device::create(plugin, {{"processor", "G"}, {"threads", "1"}}, "test");
  EXPECT_EQ(quit_handler(), co_up_quit_handler);
}

TEST_F(SignalsAfterPluginsTest, AHandlerInstalledByParallelCompilesIsPutBack) {
  copy_reference_into(dir_);
  copy_signal_plugin(dir_, "compile");
  const PluginRegistry registry = PluginRegistry::load_directory(dir_.path());
  ASSERT_NE(registry.find("signal-at-compile"), nullptr) << registry.summary();
  const Platform platform = parse_platform(R"({"name": "t", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "signal-at-compile", "cores": [0]},
      {"letter": "L", "kind": "cpu", "backend": "signal-at-compile", "cores": [1]}]})",
                                           "test platform");
  NetworkSpec spec;
  spec.name = "alexnet";
  spec.image_size = 64;
  const graph::Graph g = build_network(spec);
  Executor executor(g, Partition::create(g, "BLBLBLBL"), platform, registry, ExecutorOptions{});
  EXPECT_EQ(quit_handler(), co_up_quit_handler);
}

TEST_F(SignalsAfterPluginsTest, ListPluginsNotesThePluginThatChangedASignal) {
  copy_reference_into(dir_);
  copy_signal_plugin(dir_, "factory");
  const test::CommandResult r = test::run_command(
      "timeout -s KILL 60 " +
          test::join_quoted({kBinary, "--plugins=" + dir_.path().string(), "--list-plugins"}),
      dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("loaded   signal-at-factory libsignal_at_factory.so"));
  EXPECT_THAT(r.out, HasSubstr("\n            note: loading it changed the handling of SIGQUIT; "
                               "co_up restored its own\n"))
      << r;
  EXPECT_EQ(test::lines_of(r.out).size(), 4u) << r;  // header, two plugins, one note
}

bool catches_sigquit(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigCgt:", 0) == 0) {
      const unsigned long long caught = std::stoull(line.substr(7), nullptr, 16);
      return (caught >> (SIGQUIT - 1) & 1) != 0;
    }
  }
  return false;
}

// The user's view: with plugins that grab SIGQUIT loaded (one at load, one in device_create of
// a processor the run uses), SIGQUIT still ends a running co_up.
TEST(SigquitWithPlugins, StillEndsARun) {
  test::ScratchDir dir;
  copy_reference_into(dir);
  copy_signal_plugin(dir, "factory");
  copy_signal_plugin(dir, "device");
  const fs::path platform = dir.write("board.json", R"({"name": "board", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
      {"letter": "G", "name": "test GPU", "kind": "gpu", "backend": "signal-at-device", "host": "B"}]})");
  const fs::path marker = dir / "devices.txt";
  ASSERT_EQ(setenv("CO_UP_TEST_DEVICE_MARKER", marker.c_str(), 1), 0);
  // The child inherits dispositions: SIGQUIT as the default (a shell may have started the test
  // with it ignored), and no core file when it ends co_up.
  struct sigaction default_quit {}, saved_quit {};
  default_quit.sa_handler = SIG_DFL;
  sigaction(SIGQUIT, &default_quit, &saved_quit);
  rlimit saved_core{}, no_core{0, 0};
  getrlimit(RLIMIT_CORE, &saved_core);
  no_core.rlim_max = saved_core.rlim_max;
  setrlimit(RLIMIT_CORE, &no_core);
  const pid_t pid = test::spawn_process(
      kBinary,
      {"--plugins=" + dir.path().string(), "--platform=" + platform.string(), "--graph=alexnet",
       "--image-size=64", "--order=BBBBBBGG", "--n=100000000"},
      dir.path());
  setrlimit(RLIMIT_CORE, &saved_core);
  sigaction(SIGQUIT, &saved_quit, nullptr);
  unsetenv("CO_UP_TEST_DEVICE_MARKER");
  ASSERT_GT(pid, 0);

  // Set up when G's device exists and no handler for SIGQUIT is left (before the fix, the
  // plugins' handler stayed for good).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool ready = false;
  while (!ready && std::chrono::steady_clock::now() < deadline) {
    ready = fs::exists(marker) && !catches_sigquit(pid);
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(ready) << "co_up still catches SIGQUIT 60 s after start (marker "
                     << (fs::exists(marker) ? "written" : "missing") << ")";
  kill(pid, SIGQUIT);
  const auto quit_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool exited = false;
  int status = 0;
  while (!exited && std::chrono::steady_clock::now() < quit_deadline) {
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "SIGQUIT did not end co_up: " << test::read_file(dir / "err.txt");
  }
  // Killed by SIGQUIT, or (where co_up stops in order on SIGQUIT) exit status 128 + SIGQUIT.
  const bool by_quit = (WIFSIGNALED(status) && WTERMSIG(status) == SIGQUIT) ||
                       (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGQUIT);
  EXPECT_TRUE(by_quit) << "status " << status << ": " << test::read_file(dir / "err.txt");
}

// ---------------------------------------------------------------------------------------------
// Devices only for the processors a command uses

class DevicesForUsedLettersTest : public ::testing::Test {
 protected:
  DevicesForUsedLettersTest() {
    copy_reference_into(dir_);
    copy_signal_plugin(dir_, "device");
    copy_signal_plugin(dir_, "compile");
    platform_ = dir_.write("board.json", R"({"name": "board", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
      {"letter": "G", "name": "test GPU", "kind": "gpu", "backend": "signal-at-device", "host": "B"},
      {"letter": "N", "name": "test NPU", "kind": "npu", "backend": "signal-at-compile", "host": "B"}]})");
  }

  test::CommandResult co_up(const std::vector<std::string>& args) {
    std::vector<std::string> words = {kBinary};
    words.insert(words.end(), args.begin(), args.end());
    return test::run_command("CO_UP_TEST_DEVICE_MARKER=" + test::shell_quote(marker_.string()) +
                                 " timeout -s KILL 300 " + test::join_quoted(words),
                             dir_.path());
  }
  std::vector<std::string> run_args(const std::string& order) const {
    return {"--plugins=" + dir_.path().string(), "--platform=" + platform_.string(),
            "--graph=alexnet", "--image-size=64", "--n=1", "--order=" + order};
  }
  std::string devices() const { return fs::exists(marker_) ? test::read_file(marker_) : ""; }

  test::ScratchDir dir_;
  fs::path platform_;
  fs::path marker_ = dir_ / "devices.txt";
};

TEST_F(DevicesForUsedLettersTest, ARunCreatesDevicesOnlyForItsLetters) {
  test::CommandResult r = co_up(run_args("BBBBBBBB"));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(devices(), "");
  r = co_up(run_args("BBBBBBGG"));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(devices(), "signal-at-device G\n");
  fs::remove(marker_);
  r = co_up(run_args("BBBBNNBB"));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(devices(), "signal-at-compile N\n");
}

TEST_F(DevicesForUsedLettersTest, NpuFallbackOpensOnlyAcceleratorsInTheOrder) {
  std::vector<std::string> args = run_args("BBBBGGBB");
  args.push_back("--npu_fallback=B");
  const test::CommandResult r = co_up(args);
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(devices(), "signal-at-device G\n");  // the executor's; N is never opened
}

TEST_F(DevicesForUsedLettersTest, ProfileCreatesDevicesOnlyForTheProcessorsItProfiles) {
  const test::CommandResult r =
      co_up({"profile", "--plugins=" + dir_.path().string(), "--platform=" + platform_.string(),
             "--graph=alexnet", "--image-size=64", "--processors=B", "--repetitions=1",
             "--profile-out=" + (dir_ / "profile.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(devices(), "");
}

}  // namespace
}  // namespace co_up
