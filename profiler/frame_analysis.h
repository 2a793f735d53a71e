// Inside one frame: which sub-graph runs made its latency (the critical path) and how long each
// processor sat idle while the frame was in flight. From a run profile of level >= 1 (sub-graph
// events); what the DAG cost model (planner/dag_cost_model.h) predicts as FrameSchedule.
//
// Critical path of frame f: from the sub-graph run of f that ended last, back through what each
// run waited for: the latest-ending run, among the runs of f of the sub-graphs that feed it
// (receivers) and the run before it on the same processor thread, that ended before it began.
// It stops where the run waited for nothing of frame f (the frame's first run, or a processor
// busy with another frame: queueing in pipeline mode).
// Idle time of processor X in frame f: the frame's window [start, end] minus the time X spent in
// sub-graph runs (of any frame) inside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/run_profile.h"

namespace co_up::profiler {

struct FrameAnalysis {
  uint64_t frame = 0;
  double latency_ms = 0;
  std::vector<uint32_t> critical_path;  // sub-graph indices, first to last
  std::string processors;               // letters of the profile's processors that have sub-graphs
  std::vector<double> idle_ms;          // per letter of `processors`
};

// One entry per completed frame; empty below profile level 1.
std::vector<FrameAnalysis> analyze_frames(const RunProfile& profile);

// "0 (B) -> 2 (L) -> 3 (L)".
std::string critical_path_text(const RunProfile& profile, const std::vector<uint32_t>& path);

}  // namespace co_up::profiler
