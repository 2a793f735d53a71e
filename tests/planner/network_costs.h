// Per-layer costs of networks for the workload planner's tests: random ones on `stages` processors
// of different speed (with or without transfer costs between layers), and given ones without
// transfers.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "planner/hetero2pipe.h"

namespace co_up::planner {

inline NetworkCosts random_costs(std::mt19937& rng, const std::string& name, uint32_t layers, size_t stages,
                                 bool transfers) {
  std::uniform_real_distribution<double> t(10.0, 1000.0);
  std::uniform_real_distribution<double> x(0.0, 80.0);
  NetworkCosts c;
  c.name = name;
  c.layer_us.assign(stages, std::vector<double>(layers));
  c.send_us.assign(stages, std::vector<double>(layers - 1, 0.0));
  c.receive_us.assign(stages, std::vector<double>(layers - 1, 0.0));
  c.input_us.assign(stages, 0.0);
  for (size_t k = 0; k < stages; ++k) {
    const double speed = 0.5 + static_cast<double>(k) * 0.7;  // processors of different speed
    for (double& v : c.layer_us[k]) v = t(rng) * speed;
    if (!transfers) continue;
    for (double& v : c.send_us[k]) v = x(rng);
    for (double& v : c.receive_us[k]) v = x(rng);
    c.input_us[k] = x(rng);
  }
  return c;
}

inline NetworkCosts flat_costs(const std::string& name, const std::vector<std::vector<double>>& layer_us) {
  NetworkCosts c;
  c.name = name;
  c.layer_us = layer_us;
  const size_t n = layer_us[0].size();
  c.send_us.assign(layer_us.size(), std::vector<double>(n - 1, 0.0));
  c.receive_us.assign(layer_us.size(), std::vector<double>(n - 1, 0.0));
  c.input_us.assign(layer_us.size(), 0.0);
  return c;
}

}  // namespace co_up::planner
