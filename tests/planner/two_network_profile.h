// A synthetic two-network workload profile whose plans run on this host, shared by the
// `plan --workload --verify` tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "planner/contention_model.h"
#include "planner/synthetic_profile.h"
#include "planner/workload_profile.h"

namespace co_up {

// Two zoo networks at image size 32 (their real layer counts), measured on B and L: a synthetic
// profile, so the predictions are arbitrary, but the plans are runnable on this host.
inline planner::WorkloadProfile two_network_profile() {
  planner::WorkloadProfile wp;
  wp.platform_name = "synthetic";
  wp.processors = "BL";
  const std::vector<std::pair<std::string, uint32_t>> nets = {{"squeezenet", 10}, {"mobilenet", 14}};
  for (size_t i = 0; i < nets.size(); ++i) {
    planner::SyntheticSpec s;
    s.layers = nets[i].second;
    s.processors = 2;
    s.seed = 20 + i;
    s.graph = nets[i].first;
    planner::WorkloadProfileNetwork n;
    n.name = i == 0 ? "sq" : "mb";
    n.graph = nets[i].first;
    n.image_size = 32;
    n.weight_bytes = 100'000;
    n.activation_bytes = 50'000;
    n.macs = 1'000'000;
    n.profile = planner::make_synthetic_profile(s);
    wp.networks.push_back(std::move(n));
  }
  for (int c = 0; c < 4; ++c) {
    const planner::WorkloadProfileNetwork& v = wp.networks[static_cast<size_t>(c % 2)];
    const planner::WorkloadProfileNetwork& a = wp.networks[static_cast<size_t>((c + 1) % 2)];
    wp.coruns.push_back({c, v.name, a.name, 'B', 'L', planner::features_of(v, 'B'), planner::features_of(a, 'L'), 100,
                         120.0 + c});
    wp.coruns.push_back({c, a.name, v.name, 'L', 'B', planner::features_of(a, 'L'), planner::features_of(v, 'B'), 100,
                         110.0 + c});
  }
  wp.contention = planner::ContentionModel::fit(wp.coruns);
  return wp;
}

}  // namespace co_up
