// Reports over a workload run (several networks sharing the processors): per network throughput,
// request latency counted from arrival (p50/p90/p99), frames; per processor utilisation and
// bubbles; the workload profile JSON and a Chrome/Perfetto trace with one track per processor
// and slices named (so coloured) by network.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/io/output_file.h"
#include "profiler/run_profile.h"

namespace co_up::profiler {

struct NetworkRun {
  std::string name;
  RunProfile profile;  // as a single-network run reports it (level >= 1: sub-graph events)
  // Per completed request: arrival and completion, CLOCK_MONOTONIC ns (latency = end - arrival).
  std::vector<int64_t> arrival_ns;
  std::vector<int64_t> end_ns;
  std::optional<double> rate;  // requests per second; empty: as fast as possible
  int priority = 0;
  uint64_t requests = 0;  // requested; the profile counts executor frames, `batch` requests each
  uint32_t batch = 1;
};

struct WorkloadProfile {
  std::string mode;
  std::string policy;
  bool affinity = false;  // a processor kept to the network it ran last (Workload::affinity)
  std::string platform;
  int64_t start_ns = 0;  // the run's start: the first request's arrival
  std::vector<NetworkRun> networks;
  std::vector<DvfsEvent> dvfs;  // levels set for the whole run (--frequency), at setup
};

struct NetworkSummary {
  std::string name;
  uint64_t frames_requested = 0;
  uint64_t frames_completed = 0;
  double throughput_fps = 0;  // completed requests / (last completion - start)
  double latency_p50_ms = 0, latency_p90_ms = 0, latency_p99_ms = 0;
  double latency_mean_ms = 0, latency_max_ms = 0;
};

// A processor over the run's window (start to the last completion). busy: running sub-graphs
// or moving their tensors; bubble: idle while a request of a network it serves was in flight
// (it waited on another stage); idle: no request of its networks was in flight.
struct ProcessorSummary {
  char letter = 0;
  std::string name;
  double busy_ms = 0, bubble_ms = 0, idle_ms = 0;
  double utilisation = 0;  // busy / window
  uint64_t runs = 0;       // sub-graph runs
  std::vector<std::pair<std::string, double>> busy_ms_by_network;
  // Sub-graph runs with a measured thread CPU time: their wall time and the host thread's CPU time
  // within them. on_cpu = cpu / wall: below 1, the thread waited inside its runs (for a core another
  // process held, on a shared host); 0 runs measured: both 0.
  double run_wall_ms = 0, run_cpu_ms = 0;
  double on_cpu() const { return run_wall_ms > 0 ? run_cpu_ms / run_wall_ms : 0; }
};

struct WorkloadSummary {
  double wall_ms = 0;
  double aggregate_fps = 0;  // every network's completed requests / wall
  std::vector<NetworkSummary> networks;
  std::vector<ProcessorSummary> processors;
};

// The p-th percentile (0..100) by nearest rank; 0 for no values.
double percentile(std::vector<double> values, double p);

WorkloadSummary summarize_workload(const WorkloadProfile& profile);
void print_workload_report(std::ostream& out, const WorkloadProfile& profile);
nlohmann::json workload_to_json(const WorkloadProfile& profile);
void write_workload_json(const io::OutputFile& out, const WorkloadProfile& profile);
// Needs sub-graph events (profile level >= 1).
nlohmann::json workload_trace(const WorkloadProfile& profile);
void write_workload_trace(const io::OutputFile& out, const WorkloadProfile& profile);

}  // namespace co_up::profiler
