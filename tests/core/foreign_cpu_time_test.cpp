// ForeignCpuTime: other work's share of a set of cores, on a simulated /proc and on this host.
#include "core/foreign_cpu_time.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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

// A process of the test's own (a child, so not this process's time) spins on the measured core:
// its time is foreign. Only the busy case is asserted: an idle interval on a shared test host has
// whatever the other tests run.
TEST(ForeignCpuTime, AnotherProcessSpinningOnTheCoreIsForeignTime) {
  const int core = current_thread_affinity().front();
  std::optional<ForeignCpuTime::Share> share;
  {
    const test::SpinningProcess neighbour({core});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // pinned and spinning
    const ForeignCpuTime meter({core});
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    share = meter.share();
  }
  ASSERT_TRUE(share.has_value()) << "/proc/stat or /proc/self/stat unreadable on this Linux host";
  // The profile's threshold is 2 %; a spinning process gets far more of a core even beside a
  // few other runnable tasks.
  EXPECT_GT(share->foreign, 0.10) << "core " << core;
}

}  // namespace
}  // namespace co_up
