// A simulated pipeline for the planner's tests: the truth that fitted cost-model terms are
// checked against, computed without CostModel. Frames flow through the sub-graphs of an order;
// each processor runs one sub-graph at a time, processors on one core share it, and a stage is
// ready when its frame's previous stage and its own previous frame are done. The core runs the
// ready stage that can start first (ties: the oldest frame), so a processor with stages of
// several frames idles where the cost model's max-of-busy-times does not.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "planner/layer_profile.h"

namespace co_up::planner {

// The simulated machine: the profile's layer and transfer times, a true hand-off per pair (each
// boundary costs it on both sides), stages slowed by `slowdown` when the mapping has more than one
// processor (shared caches and memory), and per-run noise of `noise` (relative, normal).
struct Machine {
  const LayerProfile* profile = nullptr;
  std::map<std::pair<char, char>, double> handoff_us;  // key: (min letter, max letter)
  double slowdown = 1.05;
  double noise = 0.01;
  double handoff(char a, char b) const {
    const auto it = handoff_us.find({std::min(a, b), std::max(a, b)});
    return it == handoff_us.end() ? 0.0 : it->second;
  }
};

// Core of a processor: its first host core (the synthetic profile gives each one a single core).
inline int core_of(const LayerProfile& p, char letter) { return p.find_processor(letter)->host_cores.at(0); }

// Steady-state pipeline period (us) of `order` on `machine`, from simulating `frames` frames.
inline double simulate_period(const Machine& machine, const std::string& order, std::mt19937_64& rng, int frames = 80) {
  const LayerProfile& p = *machine.profile;
  struct Stage {
    char letter;
    int core;
    double us;
  };
  std::vector<Stage> stages;
  const bool several = order.find_first_not_of(order[0]) != std::string::npos;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    double us = 0;
    for (; j < order.size() && order[j] == order[i]; ++j) us += p.find_layer_times(order[i], 0)->median_us.at(j);
    if (i == 0) {
      if (const auto it = p.input_transfer_us.find(order[0]); it != p.input_transfer_us.end()) us += it->second;
    } else {
      us += p.find_transfer(order[i - 1], order[i])->receive_us.at(i - 1) + machine.handoff(order[i - 1], order[i]);
    }
    if (j < order.size()) {
      us += p.find_transfer(order[i], order[j])->send_us.at(j - 1) + machine.handoff(order[i], order[j]);
    }
    stages.push_back({order[i], core_of(p, order[i]), us * (several ? machine.slowdown : 1.0)});
    i = j;
  }
  // done[f][s]: when stage s of frame f finished. A stage is ready when the frame's previous
  // stage and its own previous frame are done; a core runs one stage at a time, always the
  // ready one of the oldest frame (then the earliest stage), from the time it becomes free.
  const size_t n = stages.size();
  std::vector<std::vector<double>> done(frames, std::vector<double>(n, -1));
  std::map<int, double> core_free;
  std::vector<size_t> next_stage(frames, 0);
  for (size_t remaining = static_cast<size_t>(frames) * n; remaining > 0; --remaining) {
    // Among all ready (frame, stage) pairs, start the one that can start first (ties: oldest frame).
    double best_start = INFINITY;
    int best_f = -1;
    for (int f = 0; f < frames; ++f) {
      const size_t s = next_stage[f];
      if (s == n) continue;
      if (f > 0 && done[f - 1][s] < 0) continue;  // its previous frame has not passed this stage
      const double ready = std::max(s > 0 ? done[f][s - 1] : 0.0, f > 0 ? done[f - 1][s] : 0.0);
      const double start = std::max(ready, core_free[stages[s].core]);
      if (start < best_start) best_start = start, best_f = f;
    }
    const size_t s = next_stage[best_f]++;
    done[best_f][s] = best_start + stages[s].us;
    core_free[stages[s].core] = done[best_f][s];
  }
  const int half = frames / 2;
  const double period = (done[frames - 1][n - 1] - done[half][n - 1]) / (frames - 1 - half);
  if (machine.noise <= 0) return period;  // normal_distribution needs a positive deviation
  std::normal_distribution<double> jitter(1.0, machine.noise);
  return period * jitter(rng);
}

}  // namespace co_up::planner
