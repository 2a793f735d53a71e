#include "cli/workload_verify.h"

#include "core/error.h"

namespace co_up::cli {

int verify_workload_plans(const Options&, const std::vector<PlannedWorkload>& plans, std::ostream&) {
  std::string where = "run them with co_up --workload=FILE";
  if (!plans.empty() && !plans.front().file.empty()) {
    where = "run the files written to '" + plans.front().file.parent_path().string() + "' with co_up --workload=FILE";
  }
  throw InputError("--verify with --workload needs the multi-network runtime, which this co_up does not have; " + where);
}

}  // namespace co_up::cli
