// The layer units --split makes (graph::split_output_channels), found again by name: per split
// layer, the parts "<layer>#1" .. "#P" and, with --units=branches, the unit "<layer>#concat" right
// after them (the Concat that joins the parts, with the rest of the layer).
//
// How such a layer runs on several processors at once: a sub-graph starts only when all its inputs
// are there and publishes its outputs only when it ends (core/executor.h). Cut only where the
// letter changes, a part on another processor would wait for the whole sub-graph that holds the
// layer's input and the part after it, and a part that shares a sub-graph with the Concat would
// wait for the other parts before it starts: the parts would run one after the other. So when a
// split layer's parts are on several processors, each part and the Concat unit start a sub-graph
// of their own (core/partition.h and the DAG cost model both cut there).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace co_up::graph {

struct SplitUnitGroup {
  std::string layer;         // the split layer's name, without "#k"
  uint32_t first = 0;        // unit of "#1"
  uint32_t parts = 0;        // units first .. first + parts - 1
  bool concat_unit = false;  // unit first + parts is "<layer>#concat"
};

// Runs of units named "<layer>#1", "<layer>#2", ... (two or more, consecutive, one layer name);
// empty when no unit has such a name.
std::vector<SplitUnitGroup> find_split_units(const std::vector<std::string>& unit_names);

// Per unit: whether it starts a sub-graph under `order` although its letter is the one before it
// (as above: the parts and Concat unit of each group whose parts have more than one letter).
// `order` has one letter per unit.
std::vector<bool> split_subgraph_starts(const std::vector<SplitUnitGroup>& groups, const std::string& order);

}  // namespace co_up::graph
