// `co_up plan --workload ... --verify`: runs each planned workload through the multi-network
// runtime (run_workload, cli/workload_command.h: the run `co_up --workload=FILE` makes), one plan
// after another, and prints a table: per plan its predicted and measured aggregate throughput
// (every network's completed requests / wall time), their ratio and the requests completed.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli/options.h"
#include "core/workload.h"

namespace co_up::cli {

struct PlannedWorkload {
  std::string planner;
  Workload spec;                  // runnable: every order filled in, the request order in "plan"
  std::filesystem::path file;     // where --out wrote it; empty without --out
  double predicted_fps = 0;       // all networks together
  bool whole_run = false;         // predicted_fps is the simulated whole run, not the steady state
};

// Returns the exit status (0 when every plan ran). Throws RuntimeError when a run completes fewer
// requests than its workload asks for, InputError when a plan cannot run on this machine (e.g. an
// order letter without a plugin).
int verify_workload_plans(const Options& options, const std::vector<PlannedWorkload>& plans, std::ostream& out);

}  // namespace co_up::cli
