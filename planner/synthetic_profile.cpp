#include "planner/synthetic_profile.h"

#include <random>

#include "core/error.h"

namespace co_up::planner {

LayerProfile make_synthetic_profile(const SyntheticSpec& spec) {
  if (spec.processors < 1 || spec.processors > 4 || spec.layers < 1) {
    throw InputError("synthetic profile: 1..4 processors and at least one layer");
  }
  std::mt19937_64 rng(spec.seed);
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53;
  };
  LayerProfile p;
  p.network.graph = spec.graph;
  p.network.units = "layers";
  p.network.layer_count = spec.layers;
  for (uint32_t i = 0; i < spec.layers; ++i) {
    p.network.layers.push_back(ProfileLayer{i, "layer" + std::to_string(i), "Conv", 1000000, 4096});
  }
  p.platform_name = "synthetic";
  p.repetitions = 5;

  struct Shape {
    char letter;
    const char* kind;
    char host;
    int core;        // host core when hosts are shared
    double speed;    // relative time factor
    const char* domain;
  };
  const Shape shapes[4] = {{'B', "cpu", 'B', 0, 1.0, "B"},
                           {'L', "cpu", 'L', 1, 2.2, "L"},
                           {'G', "gpu", 'B', 0, 0.8, "G"},
                           {'N', "npu", 'L', 1, 0.6, "L"}};
  for (uint32_t k = 0; k < spec.processors; ++k) {
    const Shape& s = shapes[k];
    ProfileProcessor proc;
    proc.letter = s.letter;
    proc.name = std::string("synthetic ") + s.letter;
    proc.kind = s.kind;
    proc.backend = "synthetic";
    proc.host = s.host;
    proc.host_cores = {spec.shared_hosts ? s.core : static_cast<int>(k)};
    if (spec.levels > 0) {
      proc.dvfs_domain = s.domain;
      for (uint32_t l = 0; l < spec.levels; ++l) proc.levels_khz.push_back(400000 + 200000 * static_cast<int64_t>(l));
    }
    p.processors.push_back(std::move(proc));
  }
  // N follows L's clock: same table (the reader checks a domain's processors agree).
  for (uint32_t k = 0; k < spec.processors; ++k) {
    const ProfileProcessor& proc = p.processors[k];
    // Per-layer affinity: some layers suit some processors much better (as convolutions vs. FC).
    std::vector<double> base(spec.layers);
    for (uint32_t i = 0; i < spec.layers; ++i) base[i] = uniform(50, 1000) * shapes[k].speed * uniform(0.5, 1.5);
    const uint32_t top = spec.levels;
    for (uint32_t level = spec.levels > 0 ? 1 : 0; level <= top; ++level) {
      LayerTimes t;
      t.processor = proc.letter;
      t.level = static_cast<int>(level);
      const double scale = level == 0 ? 1.0
                                      : static_cast<double>(proc.levels_khz.back()) /
                                            static_cast<double>(proc.levels_khz[level - 1]);
      for (uint32_t i = 0; i < spec.layers; ++i) {
        t.median_us.push_back(base[i] * scale);
        t.mad_us.push_back(base[i] * scale * 0.02);
      }
      p.layer_times.push_back(std::move(t));
      if (spec.power) {
        const double ghz = level == 0 ? 1.0 : static_cast<double>(proc.levels_khz[level - 1]) / 1e6;
        p.power_w.push_back(PowerPoint{proc.letter, static_cast<int>(level),
                                       0.3 + 1.5 * ghz * ghz / shapes[k].speed, 0.05 + 0.1 * ghz});
      }
    }
  }
  if (spec.transfers) {
    for (const ProfileProcessor& a : p.processors) {
      for (const ProfileProcessor& b : p.processors) {
        if (a.letter == b.letter) continue;
        TransferTimes t;
        t.from = a.letter;
        t.to = b.letter;
        for (uint32_t i = 0; i + 1 < spec.layers; ++i) {
          t.send_us.push_back(uniform(5, 120));
          t.receive_us.push_back(uniform(5, 120));
        }
        p.transfers.push_back(std::move(t));
      }
      p.input_transfer_us[a.letter] = uniform(1, 20);
    }
  }
  if (spec.handoff_us > 0) {
    for (size_t a = 0; a < p.processors.size(); ++a) {
      for (size_t b = a + 1; b < p.processors.size(); ++b) {
        p.set_handoff(p.processors[a].letter, p.processors[b].letter, spec.handoff_us * uniform(0.5, 1.5));
      }
    }
  }
  for (const LayerTimes& t : p.layer_times) {
    p.completed.push_back("layers:" + std::string(1, t.processor) + ":" + std::to_string(t.level));
  }
  return p;
}

}  // namespace co_up::planner
