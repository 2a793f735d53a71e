// What the co_up command line needs of a Session beyond the public API (include/co_up/co_up.hpp):
// open one from the command line's NetworkSpec and options, run N frames of fixed input sets
// (the --n loop) with the Session's power wiring around them, stop on a signal, and the reports
// only the command line prints (int8 agreement, per-layer power, the external meter), over the
// internal RunProfile. Internal: not installed, not exported from libco_up; the command line
// links the Session statically.
//
// Everything that opens, wires and runs is the Session's (api/session.cpp): the command line adds
// inputs, output files and printing, nothing else.
#pragma once

#include <exception>
#include <ostream>
#include <vector>

#include "api/session_internal.h"
#include "co_up/co_up.hpp"
#include "core/executor.h"
#include "core/network.h"
#include "graph/graph.h"
#include "profiler/power_trace.h"
#include "profiler/run_profile.h"

namespace co_up {

struct SessionAccess {
  // Session::open_zoo/open_model for `network.name` or `network.model` (build_network says
  // which is missing or both given); every other field comes from `options`.
  static Session open(const NetworkSpec& network, const SessionOptions& options);
  static SessionOptions::Values& values(SessionOptions& options);
  static Session::Impl& impl(Session& session);
  static const Session::Impl& impl(const Session& session);
};

namespace api {

const graph::Graph& session_graph(const Session& session);

struct FramesRun {
  RunResult result;  // profile with the DVFS events (setup levels, then per-layer changes)
  // A DVFS write that failed during the run under --dvfs=strict: the caller writes its profile,
  // then throws this.
  std::exception_ptr late_error;
};

// Runs request.frames frames (frame f reads request.input_sets[f % size]) through the Session's
// executor with its power wiring: sensors sampled during the run, DVFS worker stopped after it.
// Layers on npu-int8: request is prepared for the int8 report first (distinct seeded inputs
// unless `inputs_fixed`); `request` must outlive print_int8_report. Once per Session (the DVFS
// worker ends with it). Throws co_up::Error.
FramesRun run_frames(Session& session, RunRequest& request, bool inputs_fixed);

// From any thread (a signal's handler thread): a running frame run, or the next one, stops after
// the sub-graph runs in progress; the profile says interrupted.
void request_stop(Session& session);

// The int8-vs-f32 agreement after run_frames (nothing unless the order uses npu-int8).
void print_int8_report(const Session& session, std::ostream& out, const RunResult& result);

// With --power (or what implies it): the per-layer power table on `out` (and the meter's, its
// warnings on `err`), the summaries appended to `profile.power`. Empty without --power.
struct PowerReport {
  std::vector<profiler::LayerSpan> spans;
  const profiler::PowerSamples* samples = nullptr;  // the Session's; valid while it lives
  std::vector<profiler::LayerPower> layer_power;
  profiler::PowerSamples meter_samples;
};
PowerReport report_power(Session& session, std::ostream& out, std::ostream& err,
                         profiler::RunProfile& profile);

}  // namespace api
}  // namespace co_up
