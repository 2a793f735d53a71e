#include "planner/stage_latency_model.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace co_up::planner {
namespace {

void check_shapes(const StageCosts& c) {
  const size_t m = c.tau.size();
  if (m == 0) throw InputError("stage latency model: no stages");
  const size_t layers = c.tau[0].size();
  if (layers == 0) throw InputError("stage latency model: stage 1 has no sub-layers");
  for (size_t i = 0; i < m; ++i) {
    if (c.tau[i].size() != layers) {
      throw InputError("stage latency model: stage " + std::to_string(i + 1) + " has " +
                       std::to_string(c.tau[i].size()) + " sub-layers, stage 1 has " + std::to_string(layers));
    }
  }
  if (c.reuse.size() != m) throw InputError("stage latency model: I needs one row per stage");
  for (const auto& row : c.reuse) {
    if (row.size() + 1 < layers) throw InputError("stage latency model: I needs an entry per sub-layer but the last");
  }
  if (!c.transfer.empty()) {
    if (c.transfer.size() != m) throw InputError("stage latency model: u needs one row per producing stage");
    for (const auto& to : c.transfer) {
      if (to.size() != m) throw InputError("stage latency model: u needs one entry per receiving stage");
      for (const auto& per_layer : to) {
        if (per_layer.size() + 1 < layers) throw InputError("stage latency model: u needs an entry per sub-layer but the last");
      }
    }
  }
  if (!c.power_w.empty() && c.power_w.size() != m) throw InputError("stage latency model: power needs one entry per stage");
}

}  // namespace

double stage_power_w(double alpha, double beta, double level) { return alpha + beta * level; }

std::vector<std::vector<double>> cumulative_latency(const StageCosts& c) {
  check_shapes(c);
  const size_t m = c.tau.size(), layers = c.tau[0].size();
  std::vector<std::vector<double>> t(m, std::vector<double>(layers, 0.0));
  for (size_t j = 0; j < layers; ++j) {
    for (size_t i = 0; i < m; ++i) {
      double ready = j == 0 ? 0.0 : t[i][j - 1];
      for (size_t k = 0; j > 0 && k < i; ++k) {
        if (c.reuse[k][j - 1] != 1) continue;
        const double u = c.transfer.empty() ? 0.0 : c.transfer[k][i][j - 1];
        ready = std::max(ready, t[k][j - 1] + u);
      }
      t[i][j] = c.tau[i][j] + ready;
    }
  }
  return t;
}

std::vector<double> stage_latency(const StageCosts& c) {
  std::vector<double> out;
  for (const auto& row : cumulative_latency(c)) out.push_back(row.back());
  return out;
}

std::vector<double> stage_energy(const StageCosts& c) {
  check_shapes(c);
  if (c.power_w.empty()) throw InputError("stage latency model: energy needs each stage's power");
  std::vector<double> out;
  for (size_t i = 0; i < c.tau.size(); ++i) {
    double e = 0;
    for (double tau : c.tau[i]) e += tau * c.power_w[i];
    out.push_back(e);
  }
  return out;
}

std::vector<double> whole_stage_latency(const StageCosts& c) {
  check_shapes(c);
  const size_t m = c.tau.size(), layers = c.tau[0].size();
  std::vector<double> t(m, 0.0);
  for (size_t i = 0; i < m; ++i) {
    double own = 0;
    for (double tau : c.tau[i]) own += tau;
    double ready = 0;
    for (size_t k = 0; k < i; ++k) {
      bool reads = false;
      double moved = 0;
      for (size_t j = 0; j + 1 < layers; ++j) {
        if (c.reuse[k][j] != 1) continue;
        reads = true;
        moved += c.transfer.empty() ? 0.0 : c.transfer[k][i][j];
      }
      if (reads) ready = std::max(ready, t[k] + moved);
    }
    t[i] = own + ready;
  }
  return t;
}

std::vector<ExitCost> exit_costs(const StageCosts& c, bool whole_stages) {
  const std::vector<double> t = whole_stages ? whole_stage_latency(c) : stage_latency(c);
  const std::vector<double> e = c.power_w.empty() ? std::vector<double>(t.size(), 0.0) : stage_energy(c);
  std::vector<ExitCost> out;
  ExitCost running;
  for (size_t m = 0; m < t.size(); ++m) {
    running.latency_ms = std::max(running.latency_ms, t[m]);
    running.energy_mj += e[m];
    out.push_back(running);
  }
  return out;
}

}  // namespace co_up::planner
