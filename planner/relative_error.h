// The relative error of a prediction against a measurement, shared by every report that compares
// the two (planner verification, stage plans' held-out summary).
#pragma once

#include <cmath>
#include <limits>

namespace co_up::planner {

// (predicted - measured) / measured. NaN when the measurement is not a positive finite number (a
// failed or empty measurement): such a point has no error, and must not count as a perfect one;
// summaries skip NaN.
inline double relative_error(double predicted, double measured) {
  if (!(measured > 0) || !std::isfinite(measured)) return std::numeric_limits<double>::quiet_NaN();
  return (predicted - measured) / measured;
}

}  // namespace co_up::planner
