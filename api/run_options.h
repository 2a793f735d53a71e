// The run options of a network run, in one table: the command line's parser (cli/options.cpp),
// SessionOptions (api/session_options.cpp) and the Python package's keywords (python/co_up, via
// SessionOptions::known()) all read it, so a new run option is one row of run_options() plus its
// field in RunValues. Internal: not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster_split.h"

namespace co_up {

// Every run option's value, under the command line's names (cli::Options and
// SessionOptions::Values are these plus what only they have). Defaults are the command line's.
struct RunValues {
  std::string order;  // empty: every layer on B
  // --mode as given, checked when the Session opens (after the order, so a run with two mistakes
  // reports the same one first); SessionOptions::set and set_mode check it at once.
  std::string mode = "pipeline";
  std::string split;
  std::string platform;  // empty: the host, detected under sysfs_root
  std::string plugins;
  std::string sysfs_root = "/sys";
  std::string frequency;
  std::string dvfs = "strict";
  int profile = 0;  // profiling level 0|1|2
  uint32_t buffers = 3;
  bool share_boundaries = true;  // ExecutorOptions::share_boundaries
  std::optional<int> threads, cores, threads_little, cores_little;
  int64_t image_size = 0;
  uint64_t seed = 1;
  std::string data;
  std::string units = "layers";
  std::vector<int64_t> input_shape;
  std::optional<char> host_gpu, host_npu;
  std::optional<ClusterSplit> split_cluster;  // --split-cluster=B:C
  char npu_fallback = 0;                      // --npu_fallback=B|L|G (0: fail instead)
  int64_t calibration = 4;                    // npu-int8's f32 frames
  std::string exit;                           // early-exit policy (core/exit_policy.h)
  std::string exits;                          // --exits=FILE.json
  std::string stages, stage_plan;
  std::string state_dir;                      // the DVFS journal's directory
  std::string gpio_tags;                      // all|0,3,5-7 (empty: none)
  bool power = false;                         // per-layer power in the profile
  double power_rate = 1000;                   // Hz
  std::string meter, meter_log;               // imply power
  double meter_window = 0;                    // ms
  uint32_t queue_capacity = 0;                // the API's streaming window (0: the default)
};

enum class RunOptionKind {
  kText,   // a non-empty string, kept as given (a path, an order, a spec checked later)
  kValue,  // a value parsed and checked at once
  kFlag,   // a switch: the command line's --name without a value; "1"/"0" through the API
};

enum class RunOptionScope {
  kBoth,         // the command line and the API
  kCommandLine,  // the command line only: the API refuses it with one line saying so
  kApi,          // the API only (streaming)
};

struct RunOption {
  std::string_view name;     // the command line's, without "--" ("image-size")
  std::string_view keyword;  // SessionOptions' setter without "set_", the Python keyword
  RunOptionKind kind;
  RunOptionScope scope;
  std::string_view help;  // one line
  // Checks `value` and stores it; throws InputError with the command line's message.
  void (*parse)(RunValues& values, const std::string& value);
};

// In the order the command line's --help groups them.
std::span<const RunOption> run_options();
// nullptr when `name` is no run option.
const RunOption* find_run_option(std::string_view name);

}  // namespace co_up
