// `co_up plan --workload ... --verify`: runs each planned workload and prints predicted against
// measured aggregate throughput. This is the one place that needs the multi-network runtime
// (`co_up --workload=FILE`, one Executor for every network): until that runtime is linked here,
// verify_workload_plans says so as an input error (exit 2) and the plans stay printed and
// written. Wiring it is a body for this function: for each plan, run plan.spec with the runtime
// (the frames each network asks for, after a warm-up) and print predicted_fps next to the
// measured aggregate frames per second.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli/options.h"
#include "planner/workload_spec.h"

namespace co_up::cli {

struct PlannedWorkload {
  std::string planner;
  planner::WorkloadSpec spec;     // runnable: every order filled in, networks in request order
  std::filesystem::path file;     // where --out wrote it; empty without --out
  double predicted_fps = 0;       // all networks together
};

// Returns the exit status (0 when every plan ran).
int verify_workload_plans(const Options& options, const std::vector<PlannedWorkload>& plans, std::ostream& out);

}  // namespace co_up::cli
