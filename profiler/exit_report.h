// The early-exit part of a run's report (multi-exit networks, core/exit_policy.h): per exit, the
// frames that stopped there, their latency (first sub-graph start to completion) and, with labels,
// their accuracy; the overall accuracy. Accuracy per exit is over the frames that took that exit
// (the frames the exit answered), so it reads as "how often exit k was right when it answered".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "profiler/run_profile.h"

namespace co_up::profiler {

struct ExitSummary {
  std::string name;
  uint32_t subgraph = 0;
  uint64_t frames = 0;
  double latency_mean_ms = 0;    // 0 when no frame took it
  double latency_median_ms = 0;
  uint64_t labelled = 0;         // frames with a label (0 without labels)
  uint64_t correct = 0;
};

// One entry per exit; empty for a static network.
std::vector<ExitSummary> summarize_exits(const RunProfile& profile);

// Prints the exit histogram table (and accuracy, with labels); only the accuracy line for a static
// network with labels; nothing otherwise.
void print_exit_report(std::ostream& out, const RunProfile& profile);

// The profile JSON's "exits" object (null when there is nothing to say, as above).
nlohmann::json exit_report_json(const RunProfile& profile);

}  // namespace co_up::profiler
