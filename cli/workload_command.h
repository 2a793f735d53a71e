// `co_up --workload=...`: several networks at once on shared processor threads
// (core/workload.h for the format, core/workload_runner.h for the run, profiler/workload_report.h
// for what it reports).
#pragma once

#include "cli/options.h"
#include "cli/stop_signal.h"

namespace co_up::cli {

// Returns the exit code (0, or 128+signal when interrupted); throws InputError / RuntimeError.
int run_workload_command(const Options& options, StopSignal& stop);

}  // namespace co_up::cli
