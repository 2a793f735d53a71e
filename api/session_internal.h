// Internals of the public API (include/co_up/co_up.hpp) shared by its sources: the option values
// and the conversion of internal errors into co_up::Error. Not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "co_up/co_up.hpp"
#include "core/cluster_split.h"

namespace co_up {

struct SessionOptions::Values {
  std::string order;  // empty: every layer on B
  Mode mode = Mode::kPipeline;
  std::string split;
  std::string platform_file;
  std::string plugins_dir;
  std::string sysfs_root = "/sys";
  std::string frequency;
  std::string dvfs = "strict";
  int profile_level = 0;
  uint32_t buffers = 3;
  std::optional<int> threads, cores, threads_little, cores_little;
  int64_t image_size = 0;
  uint64_t seed = 1;
  std::string data_dir;
  std::string units = "layers";
  std::vector<int64_t> input_shape;
  uint32_t queue_capacity = 0;

  // The command line's --mode as given: when set, checked where the command line always checked
  // it (after the order), so a run with two mistakes reports the same one first.
  std::string mode_text;
  // The rest of the command line's run options, by its names (docs/api.md).
  std::optional<char> host_gpu, host_npu;        // --host_gpu, --host_npu
  std::optional<ClusterSplit> split_cluster;     // --split-cluster=B:C
  char npu_fallback = 0;                         // --npu_fallback=B|L|G (0: fail instead)
  int64_t calibration = 4;                       // --calibration: npu-int8's f32 frames
  std::string exit;                              // --exit: early-exit policy (core/exit_policy.h)
  std::string exits;                             // --exits=FILE.json
  std::string stages, stage_plan;                // --stages, --stage-plan
  // Power wiring, owned by the Session (power/): levels above; GPIO tags, sensors, meter here.
  std::string state_dir;                         // --state-dir: the DVFS journal's directory
  std::string gpio_tags;                         // --gpio-tags=all|0,3,5-7 (empty: none)
  bool power = false;                            // --power: per-layer power in the profile
  double power_rate = 1000;                      // --power-rate=HZ
  std::string meter, meter_log;                  // --meter=DEVICE, --meter-log=FILE (imply power)
  double meter_window = 0;                       // --meter-window=MS
};

namespace api {

// Runs `body`, turning co_up's internal exceptions (InputError, RuntimeError, std::bad_alloc,
// anything else) into co_up::Error with the message the command line would print.
template <typename Body>
auto translate_errors(Body&& body) -> decltype(body());

[[noreturn]] void rethrow_as_error(std::exception_ptr error);

template <typename Body>
auto translate_errors(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (...) {
    rethrow_as_error(std::current_exception());
  }
}

}  // namespace api
}  // namespace co_up
