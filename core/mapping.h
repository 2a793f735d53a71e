// Mapping: what runs where and how — one type for the planner, which predicts and searches
// mappings, and the runtime, which runs them.
//
// Header-only (the planner library does not link the runtime).
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "include/co_up/co_up.hpp"  // co_up::Mode: the public API's enum is the one Mode

namespace co_up {

// "pipeline" / "switch" / "overlap", as --mode takes.
inline const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kPipeline: return "pipeline";
    case Mode::kSwitch: return "switch";
    case Mode::kOverlap: return "overlap";
  }
  return "?";
}

// Throws InputError for anything but "pipeline", "switch" or "overlap".
inline Mode parse_mode(const std::string& text) {
  if (text == "pipeline") return Mode::kPipeline;
  if (text == "switch") return Mode::kSwitch;
  if (text == "overlap") return Mode::kOverlap;
  throw InputError("unknown mode '" + text + "' (use --mode=pipeline, --mode=switch or --mode=overlap)");
}

struct Mapping {
  std::string order;        // one processor letter per layer unit
  Mode mode = Mode::kPipeline;
  // One DVFS level per domain (the planner's CostModel::domains()); 0 = as found; empty = all 0.
  std::vector<int> levels;

  bool operator==(const Mapping&) const = default;
};

}  // namespace co_up
