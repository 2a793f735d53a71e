// cpu-xnnpack wakes its pool's workers when a frame's input is mapped (so that layer 0 does not
// pay their wake-up), but only for a bounded time: a caller that maps an input and never runs
// (a failed frame, a C API caller that stops) must not keep the workers polling until the next
// run or teardown. Checked through the ABI as the runtime drives the plugin, on a two-thread
// device: after the map, every thread the device started ends up asleep in the kernel (state S in
// /proc) with no further call. A polling worker yields but stays runnable (state R), so without
// the bound this never holds. No wall-clock assertion: the test waits up to 20 s for the state.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"
#include "tests/backends/plugin_harness.h"

namespace {

using Clock = std::chrono::steady_clock;

std::set<int> thread_ids() {
  std::set<int> ids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    ids.insert(std::stoi(entry.path().filename().string()));
  }
  return ids;
}

// The scheduler state of thread `tid` of this process ('R' running or runnable, 'S' asleep, ...),
// or '?' when it is gone.
char thread_state(int tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

// Whether every thread in `tids` is asleep in ten looks 2 ms apart (one look could catch a
// polling worker in a page fault or between polls).
bool all_asleep(const std::set<int>& tids) {
  for (int look = 0; look < 10; ++look) {
    for (int tid : tids) {
      if (thread_state(tid) != 'S') return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

bool eventually_all_asleep(const std::set<int>& tids) {
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < until) {
    if (all_asleep(tids)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return all_asleep(tids);
}

std::string states(const std::set<int>& tids) {
  std::string out;
  for (int tid : tids) out += std::to_string(tid) + ":" + thread_state(tid) + " ";
  return out;
}

// cpu-xnnpack's device on cores 0 and 1 through the shared ABI harness, and the threads its
// device_create started (the pools' workers).
class XnnDevice {
 public:
  explicit XnnDevice(const char* threads) : plugin_("libco_up_cpu_xnnpack.so") {
    const std::set<int> before = thread_ids();
    const auto [code, message] =
        plugin_.make_device({{"processor", "B"}, {"cores", "0,1"}, {"threads", threads}}, &device_);
    if (code != CO_UP_STATUS_OK) throw std::runtime_error(message);
    for (int tid : thread_ids()) {
      if (!before.count(tid)) started_.insert(tid);
    }
  }
  ~XnnDevice() {
    if (device_) plugin_.api()->device_release(device_);
  }
  XnnDevice(const XnnDevice&) = delete;
  XnnDevice& operator=(const XnnDevice&) = delete;

  void check(co_up_status* s) const { plugin_.check(s); }
  const co_up_plugin_api* api() const { return plugin_.api(); }
  co_up_device* device() const { return device_; }
  const std::set<int>& started() const { return started_; }

 private:
  co_up::testing::AbiPlugin plugin_;
  co_up_device* device_ = nullptr;
  std::set<int> started_;
};

TEST(XnnpackInputWarm, WorkersSleepAgainWhenAMappedInputIsNeverRun) {
  ASSERT_GE(std::thread::hardware_concurrency(), 2u) << "needs cores 0 and 1 for a two-thread device";
  XnnDevice d("2");
  ASSERT_FALSE(d.started().empty()) << "a two-thread device should start pool workers";
  // A Relu over a 4-D NCHW input: the map goes to a staging buffer (the path that warms).
  co_up::testing::GraphBuilder b;
  const uint32_t x = b.tensor("x", {1, 8, 16, 16});
  const uint32_t y = b.tensor("y", {1, 8, 16, 16});
  b.node("relu", "Relu", 0, {x}, y, {});
  const co_up_subgraph_desc g = b.desc({x}, {y}, "relu");
  co_up_compiled* c = nullptr;
  d.check(d.api()->compiled_create(d.device(), &g, &c));
  ASSERT_TRUE(eventually_all_asleep(d.started()))
      << "idle workers should sleep before any input is mapped: " << states(d.started());

  void* in = nullptr;
  d.check(d.api()->compiled_map(c, CO_UP_IO_INPUT, 0, &in));
  std::vector<float> values(8 * 16 * 16);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 7) - 3.0f;
  std::memcpy(in, values.data(), values.size() * sizeof(float));
  // No unmap, no run: the workers must go back to sleep on their own.
  EXPECT_TRUE(eventually_all_asleep(d.started()))
      << "a mapped input that no run follows kept the pool's workers polling: " << states(d.started());

  // The frame can still be finished later, with the right result.
  d.check(d.api()->compiled_unmap(c, CO_UP_IO_INPUT, 0));
  d.check(d.api()->compiled_run(c, nullptr));
  void* out = nullptr;
  d.check(d.api()->compiled_map(c, CO_UP_IO_OUTPUT, 0, &out));
  const auto* result = static_cast<const float*>(out);
  for (size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(result[i], values[i] > 0.0f ? values[i] : 0.0f) << "element " << i;
  }
  d.check(d.api()->compiled_unmap(c, CO_UP_IO_OUTPUT, 0));
  // And after the run the workers sleep again too.
  EXPECT_TRUE(eventually_all_asleep(d.started())) << states(d.started());
  d.api()->compiled_release(c);
}

}  // namespace
