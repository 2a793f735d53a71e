// `co_up plan --workload=FILE.json --profile=P.json [--out=DIR] [--verify]`: plans a workload of
// several networks (planner/workload_planner.h: alone-best, band-greedy, hetero2pipe-h,
// hetero2pipe) from a workload profile written by `co_up profile --workload` and prints each
// plan's predicted aggregate throughput, request order and order strings. --out=DIR writes one
// ready-to-run workload file per plan, DIR/<planner>.json (DIR is created; an existing file is
// never replaced: the command refuses before writing any). --verify then runs every plan with the
// multi-network runtime and prints predicted against measured (cli/workload_verify.h).
// Exit status: 0, 2 for bad input, 1 for a failed write.
#pragma once

#include "cli/options.h"

namespace co_up::cli {

int run_workload_plan_command(const Options& options);

}  // namespace co_up::cli
