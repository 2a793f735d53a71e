// The co_up run command for one network (`co_up --graph=NAME|--model=FILE ...`): listings, or
// a Session (include/co_up/co_up.hpp, api/session_run.h) opened from the options and run for --n
// frames; then the report on std::cout and the output files. The Session opens, binds, wires
// power (DVFS levels, GPIO tags, meter, sensors), applies --npu_fallback and records the int8
// report; this file reads inputs, prints and writes files.
#pragma once

#include "cli/options.h"
#include "cli/stop_signal.h"

namespace co_up::cli {

// Returns the exit status (0, or 128+signal when `stop` interrupted the run); throws
// co_up::Error, InputError and RuntimeError as the command line reports them.
int run_network(const Options& o, StopSignal& stop);

}  // namespace co_up::cli
