// The network a layer profile was taken of, built again for the benches that plan from a profile
// (the unit DAG of the DAG cost model, the runs they measure): as profiled, seeded random weights.
#pragma once

#include "core/network.h"
#include "planner/layer_profile.h"

namespace co_up::bench {

inline graph::Graph profiled_network(const planner::ProfileNetwork& net) {
  NetworkSpec spec{net.graph, net.units, net.image_size, 1, ""};
  spec.model = net.model;
  spec.split = net.split;
  return build_network(spec);
}

}  // namespace co_up::bench
