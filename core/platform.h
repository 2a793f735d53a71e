// Platform description: the only place hardware facts live (ARCHITECTURE.md).
//
// A platform binds processor letters to backends and CPU cores. It comes from a JSON file
// (--platform, see platforms/*.json) or is detected for the machine co_up runs on, from cpufreq
// policies under a sysfs root (--sysfs-root stands in for /sys in tests):
//
//   { "name": "rk3399pro", "description": "...",
//     "processors": [
//       {"letter": "B", "name": "big CPU", "kind": "cpu", "backend": ["cpu-reference"],
//        "cores": [4, 5], "threads": 2},
//       {"letter": "G", "name": "Mali-T860 MP4", "kind": "gpu", "backend": "opencl", "host": "B",
//        "options": {"device": "Mali"}} ] }
//
// "backend" is a name or a list in order of preference (the first one whose plugin loaded wins).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace co_up {

struct ProcessorSpec {
  char letter = 0;
  std::string name;
  std::string kind;                   // "cpu", "gpu", "npu" or "dsp"
  std::vector<std::string> backends;  // preference order
  std::vector<int> cores;             // cpu: the cluster's cores
  int threads = 0;                    // cpu: worker threads (default: all cores)
  char host = 0;                      // gpu/npu/dsp: the CPU cluster whose cores host its thread
  std::vector<std::pair<std::string, std::string>> options;  // passed to the plugin's device

  bool is_cpu() const { return kind == "cpu"; }
};

struct Platform {
  std::string name;
  std::string description;
  std::vector<ProcessorSpec> processors;

  const ProcessorSpec* find(char letter) const;
  ProcessorSpec* find(char letter);
  std::string letters() const;
  // Cores the host thread of `letter` is pinned to: its own cores for a CPU cluster, its host
  // cluster's cores for an accelerator.
  const std::vector<int>& host_cores(char letter) const;
};

// Throws InputError naming the file and the problem (missing, not JSON, missing field, ...).
Platform load_platform(const std::filesystem::path& path);
Platform parse_platform(const std::string& json_text, const std::string& origin);

// The machine co_up runs on: CPU clusters from <sysfs_root>/devices/system/cpu/cpufreq/policy*
// (fastest cluster = B, next = L); without cpufreq, the online cores split into halves (a 2-core
// host gets B = core 0, L = core 1). G and N point at the OpenCL and NPU plugins, hosted on B / L.
Platform detect_host_platform(const std::filesystem::path& sysfs_root);

// The paper's Table 2 options, applied on top of a platform.
struct CpuOverrides {
  std::optional<int> threads_big, cores_big, threads_little, cores_little;
  std::optional<char> host_gpu, host_npu;
};
// Throws InputError for impossible values (more threads than cores, unknown host letter, ...).
void apply_overrides(Platform& platform, const CpuOverrides& overrides);

// Checks that every core of every CPU cluster exists on this machine (sched_getaffinity).
void check_cores_exist(const Platform& platform);

}  // namespace co_up
