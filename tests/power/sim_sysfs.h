// A simulated sysfs tree for power tests: cpufreq policies, a devfreq GPU, hwmon sensors, all as
// plain files under a scratch directory that --sysfs-root (or the classes' root argument) points
// at. Root ignores file permissions, so "unwritable" is simulated with a directory in place of
// the file (open(O_WRONLY) fails with EISDIR) and a stalled write with a FIFO.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace co_up::test {

namespace fs = std::filesystem;

inline void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

inline std::string get(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

class SimSysfs {
 public:
  explicit SimSysfs(const std::string& tag) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("co_up_power_" + tag + "_" + (info ? std::string(info->name()) : "x") + "_" +
             std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~SimSysfs() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  const fs::path& root() const { return root_; }
  fs::path operator/(const std::string& rel) const { return root_ / rel; }

  // A cpufreq policy; `userspace` offers the userspace governor and scaling_setspeed.
  void add_policy(int n, const std::string& cpus, bool userspace, const std::string& freqs,
                  const std::string& min, const std::string& max) {
    const fs::path p = root_ / ("devices/system/cpu/cpufreq/policy" + std::to_string(n));
    put(p / "related_cpus", cpus);
    put(p / "affected_cpus", cpus);
    put(p / "scaling_available_frequencies", freqs);
    put(p / "cpuinfo_min_freq", min);
    put(p / "cpuinfo_max_freq", max);
    put(p / "scaling_min_freq", min);
    put(p / "scaling_max_freq", max);
    put(p / "scaling_governor", "schedutil");
    put(p / "scaling_available_governors",
        userspace ? "performance powersave schedutil userspace" : "performance powersave schedutil");
    if (userspace) put(p / "scaling_setspeed", "<unsupported>");
  }
  void add_devfreq(const std::string& name, bool userspace) {
    const fs::path d = root_ / ("class/devfreq/" + name);
    put(d / "governor", "simple_ondemand");
    put(d / "available_governors", userspace ? "simple_ondemand userspace performance" : "simple_ondemand performance");
    put(d / "min_freq", "200000000");
    put(d / "max_freq", "800000000");
    if (userspace) put(d / "userspace/set_freq", "0");
  }
  // Replaces a file with a directory: writes fail with EISDIR even as root.
  void make_unwritable(const std::string& rel) {
    fs::remove(root_ / rel);
    fs::create_directories(root_ / rel);
  }
  // Replaces a file with a FIFO: a write blocks until someone opens it for reading.
  void make_fifo(const std::string& rel) {
    fs::remove(root_ / rel);
    ASSERT_EQ(::mkfifo((root_ / rel).c_str(), 0644), 0);
  }

  // A platform with B = core 0 (policy0, userspace), L = core 1 (policy1, clamp only), G devfreq.
  std::string platform_json(const std::string& extra = "") const {
    return R"({"name": "sim", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0],
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy0",
                "frequencies_khz": [408000, 816000, 1200000, 1800000], "voltages_mv": [800, 850, 950, 1200]},
       "power_model": {"alpha": 1.0, "beta": 0.1}},
      {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1],
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy1",
                "frequencies_khz": [408000, 600000, 1008000], "voltages_mv": [800, 800, 925]},
       "power_model": {"alpha": 0.25, "beta": 0.05}},
      {"letter": "G", "kind": "gpu", "backend": "opencl", "host": "B",
       "dvfs": {"driver": "devfreq", "node": "class/devfreq/gpu",
                "frequencies_khz": [200000, 400000, 800000]}},
      {"letter": "N", "kind": "npu", "backend": "npu-int8", "host": "L"}])" +
           extra + "}";
  }
  // The standard tree for platform_json().
  void add_standard() {
    add_policy(0, "0", true, "408000 816000 1200000 1800000", "408000", "1800000");
    add_policy(1, "1", false, "408000 600000 1008000", "408000", "1008000");
    add_devfreq("gpu", true);
  }
  fs::path write_platform(const std::string& extra = "") const {
    const fs::path file = root_ / "platform.json";
    std::ofstream(file) << platform_json(extra);
    return file;
  }

 private:
  fs::path root_;
};

}  // namespace co_up::test
