// The co_up command (cli/main.cpp; one network's run is cli/run_command.h, a Session client): what
// `co_up --model=... --order=...` does with parsed options, its report on std::cout, --profile-out
// and the other outputs written. For commands that measure through the very same path (co_up plan
// --verify with a stage plan).
// Returns the exit status (0, or 128+signal when `stop` interrupted the run); throws InputError
// and RuntimeError as the command line reports them.
#pragma once

#include "cli/options.h"
#include "cli/stop_signal.h"

namespace co_up::cli {

int run_inference(const Options& options, StopSignal& stop);

}  // namespace co_up::cli
