// The int8 accelerator's accuracy report (the paper's Table 5 compares int8 NPU models
// with f32 ones by top-1 accuracy and time).
//
// When the placement puts layers on a processor served by the npu-int8 plugin (whose devices got
// --calibration=N as option "calibration_frames", core/calibration.h: the plugin runs its first N
// frames in f32 to calibrate its int8 activations), a Session's frame run (api/session_run.h)
//   - gives every frame its own seeded input (--seed + frame; up to kMaxComparedFrames after the
//     calibration ones, then they repeat) unless --input or --image fixes one,
//   - records the first graph output of the frames after calibration,
//   - after the run, runs the same inputs with every layer on B (f32) and prints, over those
//     frames: top-1 agreement, max and mean absolute error (also relative to the f32 output's
//     range), and the median latency of both runs.
//
// Not thread-safe except for the on_output callback it installs, which the Executor may call from
// any processor thread.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "core/executor.h"
#include "core/placement.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"

namespace co_up::api {

class AccuracyReport {
 public:
  static constexpr uint64_t kMaxComparedFrames = 64;

  // Does nothing (active() is false) unless `placement` binds a processor to npu-int8. The
  // placement's graph and `registry` must outlive this object; the placement need not (the f32
  // reference run binds its own, all on B, from the same platform).
  AccuracyReport(const Placement& placement, const PluginRegistry& registry, uint64_t calibration);

  // Before a run of `request.frames` frames: gives every frame its own seeded input (seed + f)
  // unless `inputs_fixed` (an --input or --image), and records outputs. `request` must outlive
  // print().
  void prepare(RunRequest& request, bool inputs_fixed, uint64_t seed);
  ~AccuracyReport();
  AccuracyReport(const AccuracyReport&) = delete;
  AccuracyReport& operator=(const AccuracyReport&) = delete;

  bool active() const { return state_ != nullptr; }

  // After the run: the f32 all-B run of the same inputs, then the report. Throws what the
  // Executor throws (e.g. InputError when the platform has no B).
  void print(std::ostream& out, const RunResult& result) const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace co_up::api
