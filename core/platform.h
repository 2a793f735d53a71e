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
//
// Power facts, all optional:
//   per processor  "dvfs": {"driver": "cpufreq"|"devfreq", "node": "devices/system/cpu/cpufreq/policy4",
//                           "frequencies_khz": [408000, ...], "voltages_mv": [800, ...],
//                           "default_level": 7}
//                  "power_model": {"alpha": 1.0, "beta": 0.1}   P[W] = alpha V^2 U f[GHz] + beta V
//   top level      "gpio": {"chip": "gpiochip0" | "/dev/gpiochip0", "lines": [17], "mode": "edge"|"code"}
//                  "sensors": [{"name": "big", "kind": "power"|"iv"|"energy", "processors": "B",
//                               "path": "...", "current": "...", "voltage": "...", "scale": 0.001}]
// Sysfs paths are relative to --sysfs-root. Users (--frequency, "default_level") number levels
// from 1 = lowest frequency, as the paper's Table 9; in code a level is the 0-based position in
// frequencies_khz (ascending).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace co_up {

// A processor's DVFS domain: the sysfs node that sets its clock and the levels it offers.
struct DvfsSpec {
  std::string driver;  // "cpufreq" (kHz files) or "devfreq" (Hz files); empty: no DVFS
  std::vector<std::string> nodes;  // directories relative to the sysfs root ("node": one or a list)
  std::vector<int64_t> frequencies_khz;  // ascending; level i = frequencies_khz[i]
  std::vector<int> voltages_mv;          // empty or one per level
  int default_level = -1;                // -1: none declared

  bool present() const { return !frequencies_khz.empty(); }
  int max_level() const { return static_cast<int>(frequencies_khz.size()) - 1; }
};

// P = alpha * V^2 * U * f + beta * V with P in W, V in volts, f in GHz, U in [0, 1]
// (para-pipe eq. 8). Absent: no estimate for this processor.
struct PowerModelSpec {
  bool present = false;
  double alpha = 0;
  double beta = 0;
};

// A power sensor, read as files under the sysfs root.
//   "power":  `path` holds power (hwmon power*_input: microwatts; scale 0.001 gives mW)
//   "iv":     `current` (mA) times `voltage` (mV), e.g. INA3221 rails (curr*_input, in*_input)
//   "energy": `path` is a monotonic energy counter (RAPL energy_uj: microjoules), wraps at
//             `max_path` (max_energy_range_uj) when given
// `scale` multiplies the raw reading into mW ("power"), mW ("iv": applied to mA*mV/1000) or
// mJ ("energy"). `processors` are the letters the rail feeds ("" = the whole board).
struct SensorSpec {
  std::string name;
  std::string kind;
  std::string processors;
  std::string path, current, voltage, max_path;
  double scale = 1.0;
};

struct GpioSpec {
  std::string chip;            // name ("gpiochip0"), number or path ("/dev/gpiochip0")
  std::vector<unsigned> lines;  // offsets on the chip; "code" mode: bit i on lines[i]
  std::string mode = "edge";   // "edge": lines high during a layer; "code": layer index + 1

  bool present() const { return !chip.empty() && !lines.empty(); }
};

struct ProcessorSpec {
  char letter = 0;
  std::string name;
  std::string kind;                   // "cpu", "gpu", "npu" or "dsp"
  std::vector<std::string> backends;  // preference order
  std::vector<int> cores;             // cpu: the cluster's cores
  int threads = 0;                    // cpu: worker threads (default: all cores)
  char host = 0;                      // gpu/npu/dsp: the CPU cluster whose cores host its thread
  std::vector<std::pair<std::string, std::string>> options;  // passed to the plugin's device
  DvfsSpec dvfs;
  PowerModelSpec power_model;

  bool is_cpu() const { return kind == "cpu"; }
};

struct Platform {
  std::string name;
  std::string description;
  std::vector<ProcessorSpec> processors;
  std::vector<SensorSpec> sensors;
  GpioSpec gpio;

  const ProcessorSpec* find(char letter) const;
  ProcessorSpec* find(char letter);
  std::string letters() const;
  // Cores the host thread of `letter` is pinned to: its own cores for a CPU cluster, its host
  // cluster's cores for an accelerator.
  const std::vector<int>& host_cores(char letter) const;
  // The DVFS domain of `letter`: every processor (platform order, `letter` included) whose "dvfs"
  // nodes overlap its own, directly or through another — one clock, so a level set for one is
  // set for all. Empty when `letter` has no DVFS table. Its first letter names the domain.
  std::string dvfs_domain(char letter) const;
};

// Throws InputError naming the file and the problem (missing, not JSON, missing field, ...).
Platform load_platform(const std::filesystem::path& path);
Platform parse_platform(const std::string& json_text, const std::string& origin);

// The machine co_up runs on: CPU clusters from <sysfs_root>/devices/system/cpu/cpufreq/policy*
// (fastest cluster = B, next = L; policies at one maximum frequency are one kind of core); a
// symmetric CPU splits into halves (a 2-core host gets B = core 0, L = core 1). G and N point at
// the OpenCL and NPU plugins, hosted on B / L.
// Each CPU processor gets exactly the policies that cover its own cores (policy0 -> B and
// policy1 -> L on a 2-core host with one policy per core); a policy covering cores of both is one
// DVFS domain of the two (Platform::dvfs_domain). A processor's table is the frequencies its
// policies have in common (scaling_available_frequencies, else cpuinfo_min_freq/cpuinfo_max_freq
// as two levels).
Platform detect_host_platform(const std::filesystem::path& sysfs_root);

// `--split-cluster=B:C`: cluster B's cores split between B and a new processor C
// (core/cluster_split.h).
struct ClusterSplit {
  char letter = 0;      // the cluster to split
  char new_letter = 0;  // the processor that takes the second half of its cores
};

// The paper's Table 2 options, applied on top of a platform; then the cluster split, if any
// (so --threads/--cores shape the cluster before it is split).
struct CpuOverrides {
  std::optional<int> threads_big, cores_big, threads_little, cores_little;
  std::optional<char> host_gpu, host_npu;
  std::optional<ClusterSplit> split_cluster;
};
// Throws InputError for impossible values (more threads than cores, unknown host letter, ...).
void apply_overrides(Platform& platform, const CpuOverrides& overrides);

// Checks that every core of every CPU cluster exists on this machine (sched_getaffinity).
void check_cores_exist(const Platform& platform);

}  // namespace co_up
