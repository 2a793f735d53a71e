// The stage costs the runtime stage-model tests share: three width-partitioned stages of one
// layer each with an exit; stage 2 and stage 3 read stage 1's layer (I[0][0] = 1).
#pragma once

#include <vector>

#include "planner/stage_overheads.h"

namespace co_up::planner::test {

inline StageCosts three_stages() {
  StageCosts c;
  c.tau = {{0.010, 0.001}, {0.020, 0.002}, {0.040, 0.004}};
  c.reuse = {{1}, {0}, {0}};
  c.transfer.assign(3, std::vector<std::vector<double>>(3, std::vector<double>(1, 0.0)));
  c.transfer[0][1][0] = 0.005;
  c.transfer[0][2][0] = 0.007;
  return c;
}

}  // namespace co_up::planner::test
