// `co_up --workload=...`: several networks at once on shared processor threads
// (core/workload.h for the format, core/workload_runner.h for the run, profiler/workload_report.h
// for what it reports).
#pragma once

#include <cstdint>

#include "cli/options.h"
#include "cli/stop_signal.h"
#include "core/workload.h"
#include "profiler/workload_report.h"

namespace co_up::cli {

struct WorkloadRun {
  profiler::WorkloadProfile profile;  // per network its requests' arrivals and completions
  bool interrupted = false;
  uint64_t completed = 0;  // requests, all networks together
  uint64_t requested = 0;
};

// Runs `workload` (every order given) on the platform and plugins `options` names, every network
// on the shared processor threads: the run `co_up --workload` makes (`co_up plan --verify` makes
// it too). `stop` may be null (no orderly stop on a signal). Throws InputError / RuntimeError.
WorkloadRun run_workload(const Options& options, const Workload& workload, StopSignal* stop);

// Returns the exit code (0, or 128+signal when interrupted); throws InputError / RuntimeError.
int run_workload_command(const Options& options, StopSignal& stop);

}  // namespace co_up::cli
