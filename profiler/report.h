// Reports over a RunProfile: the stdout table and the --profile-out JSON.
//
// Level 0: throughput and latency. Level 1: + per sub-graph execution and transfer time.
// Level 2: + per layer execution and transfer time. Times per frame are medians over frames,
// because these machines are shared and noisy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

#include "core/io/output_file.h"

#include "profiler/run_profile.h"

namespace co_up::profiler {

struct Summary {
  double throughput_fps = 0;  // steady state: frames after the first / time between completions
  double latency_median_ms = 0;
  double latency_mean_ms = 0;
  double latency_max_ms = 0;
  double wall_ms = 0;  // first start to last completion
};

Summary summarize(const RunProfile& profile);
double median(std::vector<double> values);

// Per-frame latencies from[i] -> to[i] (ns) in ms, over the first min(sizes) frames, with their
// mean and maximum (0 when there are none): what the run and workload summaries both report.
struct Latencies {
  std::vector<double> ms;
  double mean_ms = 0, max_ms = 0;
};
Latencies latencies_ms(const std::vector<int64_t>& from_ns, const std::vector<int64_t>& to_ns);

void print_report(std::ostream& out, const RunProfile& profile);
nlohmann::json to_json(const RunProfile& profile);

// One DVFS event as every profile JSON writes it (single network and workload): level 1-based,
// layer "setup" for a level set before the first frame, error only when setting it failed.
nlohmann::json dvfs_event_to_json(const DvfsEvent& event);
// Writes through `out` (core/io/output_file.h: a regular file is replaced atomically, so an
// interrupted run never leaves half a file). Throws RuntimeError when the write fails.
void write_json(const io::OutputFile& out, const RunProfile& profile);

}  // namespace co_up::profiler
