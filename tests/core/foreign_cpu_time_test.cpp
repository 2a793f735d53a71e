// ForeignCpuTime: other work's share of a set of cores, on a simulated /proc and on this host.
#include "core/foreign_cpu_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "core/affinity.h"
#include "tests/core/spinning_process.h"

namespace co_up {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// /proc/stat with cpu0 and cpu1 (user nice system idle iowait irq softirq steal guest guest_nice)
// and /proc/self/stat whose process name holds a space and a parenthesis.
void write_proc(const fs::path& root, const std::string& cpu0, const std::string& cpu1, int own_utime,
                int own_stime) {
  write(root / "stat", "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 " + cpu0 + " 0 0\ncpu1 " + cpu1 +
                           " 0 0\nintr 12345\nctxt 678\n");
  write(root / "self" / "stat", "4242 (co up) x) R 1 4242 4242 0 -1 4194304 100 0 0 0 " +
                                    std::to_string(own_utime) + " " + std::to_string(own_stime) +
                                    " 0 0 20 0 3 0 100 1000 10\n");
}

TEST(ForeignCpuTime, BusyTimeLessThisProcesssOwnOverTheCoresElapsedTime) {
  const fs::path root = fs::temp_directory_path() / "co_up_proc_foreign";
  fs::remove_all(root);
  write_proc(root, "100 0 50 800 50 0 0 0", "500 0 0 500 0 0 0 0", 70, 30);
  const ForeignCpuTime cpu0({0}, root), both({1, 0}, root);
  // cpu0: user +40, system +10, steal +10 (another guest), irq +5, idle +30, iowait +5:
  // 65 busy of 100; this process +25 (15 user, 10 system): 40 foreign.
  // cpu1: 100 idle.
  write_proc(root, "140 0 60 830 55 5 0 10", "500 0 0 600 0 0 0 0", 85, 40);
  ASSERT_TRUE(cpu0.share().has_value());
  EXPECT_DOUBLE_EQ(cpu0.share()->foreign, 0.40);
  EXPECT_DOUBLE_EQ(cpu0.share()->resolution, 1.0 / 100);
  ASSERT_TRUE(both.share().has_value());
  EXPECT_DOUBLE_EQ(both.share()->foreign, 40.0 / 200.0);
  EXPECT_DOUBLE_EQ(both.share()->resolution, 1.0 / 200);
  EXPECT_EQ(both.cores(), (std::vector<int>{0, 1}));
  fs::remove_all(root);
}

TEST(ForeignCpuTime, OwnTimeAboveTheCoresBusyTimeIsNoForeignTime) {
  // This process also ran on a core outside the set: its time there is not foreign, and not
  // negative either.
  const fs::path root = fs::temp_directory_path() / "co_up_proc_own";
  fs::remove_all(root);
  write_proc(root, "100 0 0 100 0 0 0 0", "0 0 0 0 0 0 0 0", 0, 0);
  const ForeignCpuTime meter({0}, root);
  write_proc(root, "150 0 0 150 0 0 0 0", "0 0 0 0 0 0 0 0", 90, 0);
  ASSERT_TRUE(meter.share().has_value());
  EXPECT_DOUBLE_EQ(meter.share()->foreign, 0.0);
  fs::remove_all(root);
}

TEST(ForeignCpuTime, UnreadableCountersAreUnknownNotZero) {
  const fs::path root = fs::temp_directory_path() / "co_up_proc_unknown";
  fs::remove_all(root);
  EXPECT_FALSE(ForeignCpuTime({0}, root).share().has_value());  // no /proc at all
  write_proc(root, "100 0 0 100 0 0 0 0", "100 0 0 100 0 0 0 0", 0, 0);
  EXPECT_FALSE(ForeignCpuTime({7}, root).share().has_value());  // a core the kernel does not list
  EXPECT_FALSE(ForeignCpuTime({}, root).share().has_value());   // no cores
  const ForeignCpuTime no_tick({0}, root);
  EXPECT_FALSE(no_tick.share().has_value());  // no tick elapsed yet
  write_proc(root, "100 0 0 200 0 0 0 0", "100 0 0 100 0 0 0 0", 0, 0);
  fs::remove(root / "self" / "stat");
  EXPECT_FALSE(no_tick.share().has_value());  // this process's own time unreadable
  write(root / "self" / "stat", "4242 (co_up) R 1 2 3\n");
  EXPECT_FALSE(no_tick.share().has_value());  // truncated
  fs::remove_all(root);
}

// The share of one core a process of this cgroup can get at most: cgroup v2's cpu.max quota
// over its period, the least along the cgroup's path (1 where none is set or it cannot be read).
// A CI container limited to half a core gives a spinning child half a core, however idle.
double cgroup_core_limit() {
  std::ifstream self("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(self, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  double limit = 1.0;
  if (path.empty()) return limit;
  for (fs::path dir = fs::path("/sys/fs/cgroup") / fs::path(path).relative_path();; dir = dir.parent_path()) {
    std::ifstream max(dir / "cpu.max");
    std::string quota;
    double period = 0;
    if (max >> quota >> period && quota != "max" && period > 0) limit = std::min(limit, std::stod(quota) / period);
    if (dir == "/sys/fs/cgroup" || !dir.has_relative_path()) break;
  }
  return limit;
}

// The core the neighbour spins on: core 0, as `taskset -c 0` puts one beside a profile, where
// this process may run there; else (a CI job confined to other cores) the first it may use.
int neighbour_core() {
  const std::vector<int> allowed = current_thread_affinity();
  return std::find(allowed.begin(), allowed.end(), 0) != allowed.end() ? 0 : allowed.front();
}

// A thread of this process kept busy on `core` until destroyed: the core as busy as beside a
// neighbour, but with this process's own time. The constructor returns once it is pinned and
// spinning; pinned() says whether pinning worked.
class SpinningThread {
 public:
  explicit SpinningThread(int core) {
    std::promise<bool> pinned;
    std::future<bool> started = pinned.get_future();
    thread_ = std::thread([this, core, pinned = std::move(pinned)]() mutable {
      try {
        pin_current_thread({core});
        pinned.set_value(true);
      } catch (const std::exception&) {
        pinned.set_value(false);
        return;
      }
      while (!stop_.load(std::memory_order_relaxed)) {
      }
    });
    pinned_ = started.get();
  }
  SpinningThread(const SpinningThread&) = delete;
  SpinningThread& operator=(const SpinningThread&) = delete;
  ~SpinningThread() {
    stop_ = true;
    thread_.join();
  }
  bool pinned() const { return pinned_; }

 private:
  std::atomic<bool> stop_{false};
  bool pinned_ = false;
  std::thread thread_;
};

// Other processes' share of `core` over `span`, this thread asleep meanwhile.
std::optional<ForeignCpuTime::Share> share_over(int core, std::chrono::milliseconds span) {
  const ForeignCpuTime meter({core});
  std::this_thread::sleep_for(span);
  return meter.share();
}

// A real neighbour: a child process (not this process's time) spinning on the core. Against it,
// the same core kept as busy by a thread of this process: whatever else runs on the core (other
// tests, other users) counts in both, so only who owns the spinning differs. On a loaded or
// single-core machine, or under a sanitizer, the spinner is always runnable and the core stays
// busy, so the neighbour's interval is nearly all foreign (this process sleeps through it), and
// the own-thread one less by whatever the thread got. Half a second is 50 ticks of one core:
// a 2 % resolution.
TEST(ForeignCpuTime, AnotherProcessSpinningOnTheCoreIsForeignTimeAndOwnWorkIsNot) {
  const int core = neighbour_core();
  constexpr auto kSpan = std::chrono::milliseconds(500);
  std::optional<ForeignCpuTime::Share> own, beside;
  {
    const SpinningThread mine(core);
    ASSERT_TRUE(mine.pinned()) << "could not pin a thread to core " << core;
    own = share_over(core, kSpan);
  }
  {
    const test::SpinningProcess neighbour({core});  // returns once pinned and spinning
    beside = share_over(core, kSpan);
  }
  ASSERT_TRUE(own.has_value() && beside.has_value()) << "/proc/stat or /proc/self/stat unreadable on this Linux host";
  // A busy loop owns the core it is pinned to; a cgroup quota caps it (and the quota's idle
  // time is idle on the core). Far above the profile's 2 % either way.
  const double expected = 0.5 * cgroup_core_limit();
  EXPECT_GT(beside->foreign, expected) << "core " << core << " (cgroup limit " << cgroup_core_limit() << " of a core)";
  EXPECT_LT(own->foreign, beside->foreign) << "core " << core << ": this process's own spinning counted as foreign";
}

}  // namespace
}  // namespace co_up
