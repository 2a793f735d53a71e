// What the DAG cost-model tests share: a synthetic profile of B and L on separate cores with the
// given times per unit, and a unit DAG from each unit's predecessors.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graph/parallel_regions.h"
#include "planner/synthetic_profile.h"

namespace co_up::planner::test {

// Times `b` and `l` per unit (`l` empty: the same as `b`), transfers `send`/`receive` on every
// boundary (0: none), no input transfer, no hand-off.
inline LayerProfile two_processor_profile(const std::vector<double>& b, std::vector<double> l = {},
                                          double send = 0, double receive = 0) {
  if (l.empty()) l = b;
  SyntheticSpec spec;
  spec.layers = static_cast<uint32_t>(b.size());
  spec.processors = 2;
  spec.shared_hosts = false;
  spec.transfers = true;
  LayerProfile p = make_synthetic_profile(spec);
  for (LayerTimes& t : p.layer_times) t.median_us = t.processor == 'B' ? b : l;
  for (TransferTimes& t : p.transfers) {
    t.send_us.assign(b.size() - 1, send);
    t.receive_us.assign(b.size() - 1, receive);
  }
  for (auto& [letter, us] : p.input_transfer_us) us = 0;
  p.handoffs.clear();
  return p;
}

// Unit 0 reads the network input, the last unit is the output.
inline graph::UnitDag unit_dag_of(std::vector<std::vector<uint32_t>> predecessors) {
  graph::UnitDag d;
  d.outputs.assign(predecessors.size(), false);
  d.outputs.back() = true;
  d.inputs.assign(predecessors.size(), false);
  d.inputs.front() = true;
  d.predecessors = std::move(predecessors);
  return d;
}

}  // namespace co_up::planner::test
