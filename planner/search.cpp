#include "planner/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "core/error.h"

namespace co_up::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int> resolve_levels(const CostModel& model, std::vector<int> levels) {
  if (levels.empty()) return model.fastest_levels();
  if (levels.size() != model.domains().size()) {
    throw InputError("search levels: " + std::to_string(levels.size()) + " given for " +
                     std::to_string(model.domains().size()) + " DVFS domains");
  }
  return levels;
}

Candidate make_candidate(const CostModel& model, Mapping mapping, std::string source) {
  Candidate c;
  c.mapping = model.normalized(std::move(mapping));
  c.prediction = model.predict(c.mapping);
  c.source = std::move(source);
  return c;
}

// Strictly better in the mode's primary objective, ties broken by the other one.
bool better(const Prediction& a, const Prediction& b, Mode mode) {
  constexpr double kRel = 1e-12;
  const double a1 = mode == Mode::kPipeline ? a.period_us : a.latency_ms;
  const double b1 = mode == Mode::kPipeline ? b.period_us : b.latency_ms;
  if (a1 < b1 * (1 - kRel)) return true;
  if (a1 > b1 * (1 + kRel)) return false;
  const double a2 = mode == Mode::kPipeline ? a.latency_ms : a.period_us;
  const double b2 = mode == Mode::kPipeline ? b.latency_ms : b.period_us;
  return a2 < b2 * (1 - kRel);
}

// ---- pipeline DP -------------------------------------------------------------------------------
//
// State (i, used, last): layers [0, i) are mapped in contiguous stages on the processors of the
// bit set `used`, the last stage on `last`. A label is the vector of per-resource busy times so
// far, plus the maximum over "closed" resources (every member processor used, none running the
// current stage), which no later stage can change. Labels dominated in every component are
// dropped; labels whose bottleneck already reaches the incumbent are pruned. Stage i..j-1 on q
// after `last` adds send(i-1, last, q) to last's resource, receive(i-1, last, q) and the layer
// times to q's resource. The answer minimises the final max component: the pipeline period.

struct Label {
  std::vector<double> value;  // [0, R): open resource times; [R]: max over closed resources
  size_t parent = SIZE_MAX;   // arena index of the previous label
  uint32_t begin = 0;         // this stage's first layer
  uint32_t end = 0;           // one past its last layer
  size_t processor = 0;
};

double label_max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

bool dominated_by(const std::vector<double>& a, const std::vector<double>& b) {  // b <= a everywhere
  for (size_t k = 0; k < a.size(); ++k) {
    if (b[k] > a[k]) return false;
  }
  return true;
}

std::string order_from_labels(const std::vector<Label>& arena, size_t index, uint32_t layers,
                              const std::string& letters) {
  std::string order(layers, '?');
  for (size_t at = index; at != SIZE_MAX; at = arena[at].parent) {
    const Label& l = arena[at];
    for (uint32_t i = l.begin; i < l.end; ++i) order[i] = letters[l.processor];
  }
  return order;
}

// Best contiguous pipeline using only processors in `allowed` (bit p = letters()[p]); with
// `all_of_them`, using exactly those. Returns false when none beats `incumbent_period`.
bool dp_search(const CostModel& model, const std::vector<int>& levels, uint32_t allowed,
               bool all_of_them, double incumbent_period, std::string& best_order) {
  const uint32_t n = model.layer_count();
  const size_t n_proc = model.letters().size();
  const size_t n_res = model.resource_count();
  if (n_proc > 16) throw InputError("pipeline DP supports at most 16 processors");

  // prefix[p][i] = sum of layer times [0, i) on p.
  std::vector<std::vector<double>> prefix(n_proc, std::vector<double>(n + 1, 0.0));
  for (size_t p = 0; p < n_proc; ++p) {
    for (uint32_t i = 0; i < n; ++i) prefix[p][i + 1] = prefix[p][i] + model.layer_us(i, p, levels);
  }
  // Lower bound on the work left after layer i: every layer at its cheapest allowed processor.
  std::vector<double> rest(n + 1, 0.0);
  for (uint32_t i = n; i-- > 0;) {
    double cheapest = kInf;
    for (size_t p = 0; p < n_proc; ++p) {
      if (allowed >> p & 1u) cheapest = std::min(cheapest, model.layer_us(i, p, levels));
    }
    rest[i] = rest[i + 1] + cheapest;
  }
  // Member processors of each resource, as bit sets.
  std::vector<uint32_t> members(n_res, 0);
  for (size_t p = 0; p < n_proc; ++p) members[model.resource_of(p)] |= 1u << p;

  const size_t n_masks = size_t{1} << n_proc;
  auto state_index = [&](uint32_t i, uint32_t mask, size_t last) {
    return (static_cast<size_t>(i) * n_masks + mask) * n_proc + last;
  };
  std::vector<std::vector<size_t>> states((n + 1) * n_masks * n_proc);
  std::vector<Label> arena;
  double best = incumbent_period;
  size_t best_label = SIZE_MAX;

  auto insert = [&](size_t state, Label&& label) {
    std::vector<size_t>& list = states[state];
    for (size_t idx : list) {
      if (dominated_by(label.value, arena[idx].value)) return;
    }
    std::erase_if(list, [&](size_t idx) { return dominated_by(arena[idx].value, label.value); });
    arena.push_back(std::move(label));
    list.push_back(arena.size() - 1);
  };

  auto extend = [&](const Label* from, size_t from_index, uint32_t i, uint32_t mask, size_t last) {
    for (size_t q = 0; q < n_proc; ++q) {
      if (!(allowed >> q & 1u) || (mask >> q & 1u)) continue;
      const uint32_t new_mask = mask | (1u << q);
      std::vector<double> base = from != nullptr ? from->value : std::vector<double>(n_res + 1, 0.0);
      if (from == nullptr) {
        base[model.resource_of(q)] += model.input_us(q);
      } else {
        base[model.resource_of(last)] += model.send_us(i - 1, last, q, Mode::kPipeline);
        base[model.resource_of(q)] += model.receive_us(i - 1, last, q, Mode::kPipeline);
      }
      // The previous stage's resource may now be closed.
      if (from != nullptr) {
        const size_t r = model.resource_of(last);
        if ((members[r] & new_mask) == members[r] && model.resource_of(q) != r) {
          base[n_res] = std::max(base[n_res], base[r]);
          base[r] = 0;
        }
      }
      for (uint32_t j = i + 1; j <= n; ++j) {
        std::vector<double> value = base;
        value[model.resource_of(q)] += prefix[q][j] - prefix[q][i];
        const double peak = label_max(value);
        if (peak >= best) break;  // longer stages only add time to q
        // Every resource's time only grows, and the remaining layers add at least rest[j] in all.
        double closed_total = 0;
        for (size_t r = 0; r < n_res; ++r) closed_total += value[r];
        if (std::max(peak, (closed_total + rest[j]) / static_cast<double>(n_res)) >= best && j < n) continue;
        Label label{std::move(value), from_index, i, j, q};
        if (j == n) {
          if (all_of_them && new_mask != allowed) continue;
          best = peak;
          arena.push_back(std::move(label));
          best_label = arena.size() - 1;
        } else {
          insert(state_index(j, new_mask, q), std::move(label));
        }
      }
    }
  };

  extend(nullptr, SIZE_MAX, 0, 0, 0);
  for (uint32_t i = 1; i < n; ++i) {
    for (uint32_t mask = 1; mask < n_masks; ++mask) {
      if ((mask & ~allowed) != 0) continue;
      for (size_t last = 0; last < n_proc; ++last) {
        if (!(mask >> last & 1u)) continue;
        // Copy the indices: extend() may grow the arena but never this (earlier) state's list.
        const std::vector<size_t> list = states[state_index(i, mask, last)];
        for (size_t idx : list) {
          if (label_max(arena[idx].value) >= best) continue;
          const Label from = arena[idx];
          extend(&from, idx, i, mask, last);
        }
      }
    }
  }
  if (best_label == SIZE_MAX) return false;
  best_order = order_from_labels(arena, best_label, n, model.letters());
  return true;
}

// ---- NSGA-II helpers ---------------------------------------------------------------------------

// Deterministic across standard libraries (std distributions are not).
class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  size_t below(size_t n) { return static_cast<size_t>(engine_() % n); }
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

struct Individual {
  Mapping mapping;
  Prediction prediction;
  std::vector<double> objectives;
  size_t rank = 0;
  double crowding = 0;
};

std::string genome_key(const Mapping& m) {
  std::string key = m.order;
  for (int l : m.levels) key += "," + std::to_string(l);
  return key;
}

}  // namespace

// ---- exact searches ----------------------------------------------------------------------------

Candidate shortest_path_latency(const CostModel& model, std::vector<int> levels) {
  levels = resolve_levels(model, std::move(levels));
  const uint32_t n = model.layer_count();
  const size_t n_proc = model.letters().size();
  // dist[i][p]: least latency of layers [0, i] with layer i on p; from[i][p] its predecessor.
  std::vector<std::vector<double>> dist(n, std::vector<double>(n_proc, kInf));
  std::vector<std::vector<size_t>> from(n, std::vector<size_t>(n_proc, 0));
  for (size_t p = 0; p < n_proc; ++p) dist[0][p] = model.input_us(p) + model.layer_us(0, p, levels);
  for (uint32_t i = 1; i < n; ++i) {
    for (size_t q = 0; q < n_proc; ++q) {
      for (size_t p = 0; p < n_proc; ++p) {
        const double d = dist[i - 1][p] + model.send_us(i - 1, p, q, Mode::kSwitch) +
                         model.receive_us(i - 1, p, q, Mode::kSwitch);
        if (d < dist[i][q]) {
          dist[i][q] = d;
          from[i][q] = p;
        }
      }
      dist[i][q] += model.layer_us(i, q, levels);
    }
  }
  size_t at = static_cast<size_t>(std::min_element(dist[n - 1].begin(), dist[n - 1].end()) - dist[n - 1].begin());
  std::string order(n, '?');
  for (uint32_t i = n; i-- > 0;) {
    order[i] = model.letters()[at];
    if (i > 0) at = from[i][at];
  }
  return make_candidate(model, Mapping{order, Mode::kSwitch, levels}, "shortest-path");
}

Candidate best_single_processor(const CostModel& model, Mode mode) {
  const std::vector<int> levels = model.fastest_levels();
  Candidate best;
  for (char letter : model.letters()) {
    Candidate c = make_candidate(model, Mapping{std::string(model.layer_count(), letter), mode, levels},
                                 "single-processor");
    if (best.mapping.order.empty() || better(c.prediction, best.prediction, mode)) best = std::move(c);
  }
  return best;
}

Candidate pipeline_dp(const CostModel& model, std::vector<int> levels) {
  levels = resolve_levels(model, std::move(levels));
  // The best single processor is a feasible contiguous mapping: start from it as incumbent.
  Candidate incumbent;
  for (char letter : model.letters()) {
    Candidate c = make_candidate(model, Mapping{std::string(model.layer_count(), letter), Mode::kPipeline, levels}, "dp");
    if (incumbent.mapping.order.empty() || c.prediction.period_us < incumbent.prediction.period_us) incumbent = c;
  }
  const uint32_t all = (1u << model.letters().size()) - 1;
  std::string order;
  if (dp_search(model, levels, all, false, incumbent.prediction.period_us, order)) {
    return make_candidate(model, Mapping{order, Mode::kPipeline, levels}, "dp");
  }
  return incumbent;
}

std::vector<Candidate> pipeline_dp_per_subset(const CostModel& model, std::vector<int> levels) {
  levels = resolve_levels(model, std::move(levels));
  const size_t n_proc = model.letters().size();
  std::vector<Candidate> out;
  for (uint32_t subset = 1; subset < (1u << n_proc); ++subset) {
    std::string order;
    if (!dp_search(model, levels, subset, true, kInf, order)) continue;  // fewer layers than processors
    out.push_back(make_candidate(model, Mapping{order, Mode::kPipeline, levels}, "dp"));
  }
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return better(a.prediction, b.prediction, Mode::kPipeline);
  });
  return out;
}

size_t subgraph_count(const std::string& order) {
  size_t runs = 0;
  for (size_t i = 0; i < order.size(); ++i) runs += i == 0 || order[i] != order[i - 1] ? 1 : 0;
  return runs;
}

namespace {

// Whether `more` (more sub-graphs than `fewer`) is predicted faster by more than `margin`.
bool worth_more_subgraphs(const Prediction& more, const Prediction& fewer, double margin) {
  return more.throughput_fps > fewer.throughput_fps * (1 + margin);
}

}  // namespace

Candidate refine_pipeline(const CostModel& model, const Candidate& start, int max_rounds, double margin) {
  Candidate best = start;
  best.mapping = model.normalized(best.mapping);
  best.prediction = model.predict(best.mapping);
  const Candidate first = best;
  const std::string& letters = model.letters();
  const uint32_t n = model.layer_count();
  bool changed = false;
  for (int round = 0; round < max_rounds; ++round) {
    Candidate round_best = best;
    auto consider = [&](Mapping&& m) {
      m = model.normalized(std::move(m));
      Prediction p = model.predict(m);
      if (better(p, round_best.prediction, best.mapping.mode)) {
        round_best.mapping = std::move(m);
        round_best.prediction = p;
      }
    };
    for (uint32_t i = 0; i < n; ++i) {  // move one layer to another processor
      for (char c : letters) {
        if (c == best.mapping.order[i]) continue;
        Mapping m = best.mapping;
        m.order[i] = c;
        consider(std::move(m));
      }
    }
    for (uint32_t i = 0; i < n; ++i) {  // swap the processors of two layers
      for (uint32_t j = i + 1; j < n; ++j) {
        if (best.mapping.order[i] == best.mapping.order[j]) continue;
        Mapping m = best.mapping;
        std::swap(m.order[i], m.order[j]);
        consider(std::move(m));
      }
    }
    if (!better(round_best.prediction, best.prediction, best.mapping.mode)) break;
    best = std::move(round_best);
    changed = true;
  }
  // Hill climbing only sees the prediction; more sub-graphs must also beat the model's error.
  if (subgraph_count(best.mapping.order) > subgraph_count(first.mapping.order) &&
      !worth_more_subgraphs(best.prediction, first.prediction, margin)) {
    return first;
  }
  if (changed) best.source = "refined";
  return best;
}

// ---- baselines ---------------------------------------------------------------------------------

Candidate heft(const CostModel& model, Mode mode) {
  const std::vector<int> levels = model.fastest_levels();
  const uint32_t n = model.layer_count();
  const size_t n_proc = model.letters().size();
  // Upward rank over the layer chain: mean compute + mean transfer to the successor + its rank.
  std::vector<double> rank(n, 0.0);
  for (uint32_t i = n; i-- > 0;) {
    double compute = 0;
    for (size_t p = 0; p < n_proc; ++p) compute += model.layer_us(i, p, levels);
    compute /= static_cast<double>(n_proc);
    double transfer = 0;
    if (i + 1 < n && n_proc > 1) {
      for (size_t p = 0; p < n_proc; ++p) {
        for (size_t q = 0; q < n_proc; ++q) transfer += model.send_us(i, p, q, mode) + model.receive_us(i, p, q, mode);
      }
      transfer /= static_cast<double>(n_proc * n_proc);  // HEFT's mean: pairs incl. same-processor 0
    }
    rank[i] = compute + transfer + (i + 1 < n ? rank[i + 1] : 0.0);
  }
  std::vector<uint32_t> tasks(n);
  std::iota(tasks.begin(), tasks.end(), 0u);
  std::stable_sort(tasks.begin(), tasks.end(), [&](uint32_t a, uint32_t b) { return rank[a] > rank[b]; });

  std::vector<double> resource_free(model.resource_count(), 0.0);
  std::vector<double> finish(n, 0.0);
  std::string order(n, '?');
  for (uint32_t i : tasks) {  // a chain: predecessors come first in rank order
    double best_finish = kInf;
    size_t best_p = 0;
    for (size_t p = 0; p < n_proc; ++p) {
      double ready = 0;
      if (i == 0) {
        ready = model.input_us(p);
      } else {
        const size_t prev = model.index_of(order[i - 1]);
        ready = finish[i - 1] + model.send_us(i - 1, prev, p, mode) + model.receive_us(i - 1, prev, p, mode);
      }
      const double eft = std::max(ready, resource_free[model.resource_of(p)]) + model.layer_us(i, p, levels);
      if (eft < best_finish) {
        best_finish = eft;
        best_p = p;
      }
    }
    order[i] = model.letters()[best_p];
    finish[i] = best_finish;
    resource_free[model.resource_of(best_p)] = best_finish;
  }
  return make_candidate(model, Mapping{order, mode, levels}, "heft");
}

// ---- multi-objective ---------------------------------------------------------------------------

std::vector<double> objectives(const Prediction& p, bool use_energy) {
  std::vector<double> o{p.period_us, p.latency_ms};
  if (use_energy) o.push_back(std::isnan(p.energy_mj_per_frame) ? kInf : p.energy_mj_per_frame);
  return o;
}

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool strictly = false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] > b[k]) return false;
    if (a[k] < b[k]) strictly = true;
  }
  return strictly;
}

namespace {

// +1: a dominates b; -1: b dominates a; 0: neither. One pass over the objectives.
int compare_dominance(const std::vector<double>& a, const std::vector<double>& b) {
  bool a_better = false, b_better = false;
  for (size_t k = 0; k < a.size(); ++k) {
    a_better = a_better || a[k] < b[k];
    b_better = b_better || b[k] < a[k];
  }
  return a_better == b_better ? 0 : a_better ? 1 : -1;
}

}  // namespace

std::vector<std::vector<size_t>> non_dominated_sort(const std::vector<std::vector<double>>& points) {
  const size_t n = points.size();
  std::vector<std::vector<size_t>> dominated(n);  // S_p: points p dominates
  std::vector<size_t> count(n, 0);                // n_p: points dominating p
  std::vector<std::vector<size_t>> fronts(1);
  for (size_t p = 0; p < n; ++p) {
    for (size_t q = p + 1; q < n; ++q) {
      const int c = compare_dominance(points[p], points[q]);
      if (c > 0) {
        dominated[p].push_back(q);
        ++count[q];
      } else if (c < 0) {
        dominated[q].push_back(p);
        ++count[p];
      }
    }
  }
  for (size_t p = 0; p < n; ++p) {
    if (count[p] == 0) fronts[0].push_back(p);
  }
  while (!fronts.back().empty()) {
    std::vector<size_t> next;
    for (size_t p : fronts.back()) {
      for (size_t q : dominated[p]) {
        if (--count[q] == 0) next.push_back(q);
      }
    }
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(next));
  }
  fronts.pop_back();
  return fronts;
}

std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points,
                                      const std::vector<size_t>& front) {
  std::vector<double> distance(front.size(), 0.0);
  if (front.empty()) return distance;
  const size_t m = points[front[0]].size();
  std::vector<size_t> idx(front.size());
  for (size_t k = 0; k < m; ++k) {
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return points[front[a]][k] < points[front[b]][k];
    });
    const double lo = points[front[idx.front()]][k];
    const double hi = points[front[idx.back()]][k];
    distance[idx.front()] = kInf;
    distance[idx.back()] = kInf;
    if (!(hi > lo) || !std::isfinite(hi - lo)) continue;
    for (size_t i = 1; i + 1 < idx.size(); ++i) {
      distance[idx[i]] += (points[front[idx[i + 1]]][k] - points[front[idx[i - 1]]][k]) / (hi - lo);
    }
  }
  return distance;
}

std::vector<Candidate> nsga2(const CostModel& model, const std::vector<Mapping>& seeds,
                             const Nsga2Options& options) {
  Random rng(options.seed);
  const uint32_t n = model.layer_count();
  const std::string& letters = model.letters();
  const size_t n_proc = letters.size();
  const bool use_energy = options.use_energy && model.has_energy();
  const size_t pop_size = static_cast<size_t>(std::max(options.population, 4));
  // Level genes exist for the domains profiled at table levels; others stay at 0 (as found).
  std::vector<size_t> level_genes;
  for (size_t d = 0; d < model.domains().size(); ++d) {
    if (model.domain_profiled(d)) level_genes.push_back(d);
  }
  const std::vector<int> base_levels = model.fastest_levels();
  const double mutation = options.mutation_rate >= 0
                              ? options.mutation_rate
                              : 1.0 / static_cast<double>(n + level_genes.size());

  auto evaluate = [&](Mapping m) {
    Individual ind;
    m.mode = options.mode;
    ind.mapping = model.normalized(std::move(m));
    ind.prediction = model.predict(ind.mapping);
    ind.objectives = objectives(ind.prediction, use_energy);
    return ind;
  };
  auto random_levels = [&] {
    std::vector<int> levels = base_levels;
    for (size_t d : level_genes) levels[d] = 1 + static_cast<int>(rng.below(static_cast<size_t>(model.level_count(d))));
    return levels;
  };
  // A random contiguous pipeline: k distinct processors, k - 1 random cuts.
  auto random_mapping = [&] {
    Mapping m;
    m.levels = random_levels();
    std::string perm = letters;
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
    const size_t k = 1 + rng.below(std::min<size_t>(n_proc, n));
    std::vector<uint32_t> cuts{0, n};
    std::set<uint32_t> inner;
    while (inner.size() + 1 < k) inner.insert(1 + static_cast<uint32_t>(rng.below(n - 1)));
    cuts.insert(cuts.begin() + 1, inner.begin(), inner.end());
    for (size_t s = 0; s + 1 < cuts.size(); ++s) {
      m.order.append(cuts[s + 1] - cuts[s], perm[s]);
    }
    return m;
  };

  std::vector<Individual> population;
  std::set<std::string> seen;
  for (const Mapping& s : seeds) {
    Mapping m = s;
    if (m.levels.empty()) m.levels.assign(model.domains().size(), 0);
    m = model.normalized(std::move(m));
    if (seen.insert(genome_key(m)).second && population.size() < pop_size) population.push_back(evaluate(m));
  }
  for (int tries = 0; population.size() < pop_size && tries < 100 * static_cast<int>(pop_size); ++tries) {
    Mapping m = model.normalized(random_mapping());
    if (seen.insert(genome_key(m)).second) population.push_back(evaluate(std::move(m)));
  }

  auto assign_rank_and_crowding = [](std::vector<Individual>& pop) {
    std::vector<std::vector<double>> points;
    points.reserve(pop.size());
    for (const Individual& ind : pop) points.push_back(ind.objectives);
    const auto fronts = non_dominated_sort(points);
    for (size_t f = 0; f < fronts.size(); ++f) {
      const std::vector<double> dist = crowding_distance(points, fronts[f]);
      for (size_t i = 0; i < fronts[f].size(); ++i) {
        pop[fronts[f][i]].rank = f;
        pop[fronts[f][i]].crowding = dist[i];
      }
    }
    return fronts;
  };
  assign_rank_and_crowding(population);

  auto tournament = [&]() -> const Individual& {
    const Individual& a = population[rng.below(population.size())];
    const Individual& b = population[rng.below(population.size())];
    if (a.rank != b.rank) return a.rank < b.rank ? a : b;
    return a.crowding >= b.crowding ? a : b;
  };

  for (int gen = 0; gen < options.generations; ++gen) {
    std::vector<Individual> combined = population;
    std::set<std::string> keys;
    for (const Individual& ind : combined) keys.insert(genome_key(ind.mapping));
    for (size_t made = 0, tries = 0; made < pop_size && tries < 20 * pop_size; ++tries) {
      Mapping child = tournament().mapping;
      if (rng.unit() < options.crossover_rate) {  // two-point crossover of the orders, uniform levels
        const Mapping& other = tournament().mapping;
        size_t a = rng.below(n + 1), b = rng.below(n + 1);
        if (a > b) std::swap(a, b);
        std::copy(other.order.begin() + static_cast<long>(a), other.order.begin() + static_cast<long>(b),
                  child.order.begin() + static_cast<long>(a));
        for (size_t d : level_genes) {
          if (rng.unit() < 0.5) child.levels[d] = other.levels[d];
        }
      }
      for (uint32_t i = 0; i < n; ++i) {  // mutation: extend a neighbour's stage, or any letter
        if (rng.unit() >= mutation) continue;
        if (rng.unit() < 0.5 && n > 1) {
          child.order[i] = i == 0 ? child.order[1] : i + 1 == n ? child.order[i - 1]
                                                                 : child.order[rng.unit() < 0.5 ? i - 1 : i + 1];
        } else {
          child.order[i] = letters[rng.below(n_proc)];
        }
      }
      for (size_t d : level_genes) {
        if (rng.unit() >= mutation) continue;
        const int count = model.level_count(d);
        if (rng.unit() < 0.5) {
          child.levels[d] = std::clamp(child.levels[d] + (rng.unit() < 0.5 ? -1 : 1), 1, count);
        } else {
          child.levels[d] = 1 + static_cast<int>(rng.below(static_cast<size_t>(count)));
        }
      }
      child = model.normalized(std::move(child));
      if (!keys.insert(genome_key(child)).second) continue;  // keep the pool free of copies
      combined.push_back(evaluate(std::move(child)));
      ++made;
    }
    const auto fronts = assign_rank_and_crowding(combined);
    std::vector<Individual> next;
    next.reserve(pop_size);
    for (const std::vector<size_t>& front : fronts) {
      if (next.size() + front.size() <= pop_size) {
        for (size_t i : front) next.push_back(combined[i]);
        continue;
      }
      std::vector<size_t> rest = front;
      std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
        return combined[a].crowding > combined[b].crowding;
      });
      for (size_t i = 0; next.size() < pop_size; ++i) next.push_back(combined[rest[i]]);
      break;
    }
    // Ranks and crowding distances carry over from the combined sort (Deb et al. 2002).
    population = std::move(next);
  }

  std::vector<Candidate> front;
  for (const Individual& ind : population) {
    if (ind.rank != 0) continue;
    front.push_back(Candidate{ind.mapping, ind.prediction, "nsga2"});
  }
  std::stable_sort(front.begin(), front.end(), [](const Candidate& a, const Candidate& b) {
    if (a.prediction.period_us != b.prediction.period_us) return a.prediction.period_us < b.prediction.period_us;
    return a.prediction.latency_ms < b.prediction.latency_ms;
  });
  return front;
}

// ---- brute force -------------------------------------------------------------------------------

void brute_force(const CostModel& model, Mode mode, const std::vector<int>& levels,
                 const std::function<void(const Mapping&, const Prediction&)>& visit) {
  const uint32_t n = model.layer_count();
  const size_t k = model.letters().size();
  double total = std::pow(static_cast<double>(k), static_cast<double>(n));
  if (total > 2e6) {
    throw InputError("brute force over " + std::to_string(k) + "^" + std::to_string(n) + " orders is too many");
  }
  std::vector<size_t> digits(n, 0);
  Mapping m{std::string(n, model.letters()[0]), mode, levels};
  while (true) {
    visit(m, model.predict(m));
    uint32_t i = 0;
    while (i < n && ++digits[i] == k) {
      digits[i] = 0;
      m.order[i] = model.letters()[0];
      ++i;
    }
    if (i == n) break;
    m.order[i] = model.letters()[digits[i]];
  }
}

bool is_contiguous(const std::string& order) {
  std::set<char> done;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && order[i] != order[i - 1]) {
      if (!done.insert(order[i - 1]).second) return false;
      if (done.count(order[i])) return false;
    }
  }
  return true;
}

// ---- plan --------------------------------------------------------------------------------------

namespace {

// Index into `pool` (sorted by the objective's key, best first) of the next mapping to rank among
// those not `taken`: per sub-graph count the first (best) one; from the fewest sub-graphs up, a
// count's best replaces the choice only when worth_more_subgraphs.
size_t preferred_index(const std::vector<Candidate>& pool, const std::vector<bool>& taken, double margin) {
  std::vector<std::pair<size_t, size_t>> group_best;  // (sub-graphs, index), first per count
  for (size_t i = 0; i < pool.size(); ++i) {
    if (taken[i]) continue;
    const size_t count = subgraph_count(pool[i].mapping.order);
    const bool seen = std::any_of(group_best.begin(), group_best.end(), [&](const auto& g) { return g.first == count; });
    if (!seen) group_best.emplace_back(count, i);
  }
  if (group_best.empty()) return pool.size();
  std::sort(group_best.begin(), group_best.end());
  size_t choice = group_best.front().second;
  for (size_t g = 1; g < group_best.size(); ++g) {
    const size_t i = group_best[g].second;
    if (worth_more_subgraphs(pool[i].prediction, pool[choice].prediction, margin)) choice = i;
  }
  return choice;
}

}  // namespace

PlanResult plan(const CostModel& model, Objective objective, size_t top, uint64_t seed, double margin) {
  if (objective == Objective::kEnergy && !model.has_energy()) {
    throw InputError("--objective=energy needs power data in the profile, but " + model.energy_gap() +
                     " (profile with power sensors or add a power_model to the platform)");
  }
  const Mode mode = objective == Objective::kLatency ? Mode::kSwitch : Mode::kPipeline;
  PlanResult result;
  result.single_processor = best_single_processor(model, mode);
  result.heft = heft(model, mode);

  // Exact searches at the fastest levels, then NSGA-II seeded with them.
  std::vector<Candidate> pool = pipeline_dp_per_subset(model);
  const Candidate dp = pool.empty() ? pipeline_dp(model) : pool.front();
  pool.push_back(refine_pipeline(model, dp));
  Candidate sp = shortest_path_latency(model);
  Candidate sp_pipeline = make_candidate(model, Mapping{sp.mapping.order, Mode::kPipeline, sp.mapping.levels},
                                         "shortest-path");
  std::vector<Mapping> seeds;
  for (const Candidate& c : pool) seeds.push_back(c.mapping);
  seeds.push_back(sp_pipeline.mapping);
  seeds.push_back(best_single_processor(model, Mode::kPipeline).mapping);
  seeds.push_back(heft(model, Mode::kPipeline).mapping);
  if (model.has_energy()) {  // the same orders at the lowest levels: energy-lean starting points
    for (size_t i = 0, count = seeds.size(); i < count; ++i) {
      Mapping low = seeds[i];
      for (size_t d = 0; d < model.domains().size(); ++d) {
        if (model.domain_profiled(d)) low.levels[d] = 1;
      }
      seeds.push_back(std::move(low));
    }
  }
  Nsga2Options options;
  options.seed = seed;
  options.mode = Mode::kPipeline;
  // Small genomes converge in fewer generations; 50 layers get the full 250.
  size_t genes = model.layer_count();
  for (size_t d = 0; d < model.domains().size(); ++d) genes += model.domain_profiled(d) ? 1 : 0;
  options.generations = static_cast<int>(std::clamp<size_t>(5 * genes, 60, 250));
  std::vector<Candidate> front = nsga2(model, seeds, options);
  // A layer placed where it was declined cannot run: such candidates are never printed.
  const auto declined = [&](const Candidate& c) { return !model.runs(c.mapping.order); };
  front.erase(std::remove_if(front.begin(), front.end(), declined), front.end());
  pool.erase(std::remove_if(pool.begin(), pool.end(), declined), pool.end());
  if (declined(sp_pipeline)) sp_pipeline = pool.empty() ? result.single_processor : pool.front();
  if (declined(sp)) sp = result.single_processor;
  if (objective == Objective::kPareto) {
    if (front.size() > top) front.resize(top);
    result.ranked = std::move(front);
    return result;
  }

  pool.push_back(sp_pipeline);
  pool.insert(pool.end(), front.begin(), front.end());
  if (mode == Mode::kSwitch) {  // same orders, run one frame at a time
    for (Candidate& c : pool) c = make_candidate(model, Mapping{c.mapping.order, Mode::kSwitch, c.mapping.levels}, c.source);
    pool.insert(pool.begin(), sp);
  }
  auto key = [&](const Candidate& c) {  // the objective, then the others as tie-breaks
    const Prediction& p = c.prediction;
    const double energy = p.has_energy() ? p.energy_mj_per_frame : kInf;
    switch (objective) {
      case Objective::kThroughput: return std::make_tuple(p.period_us, p.latency_ms, energy);
      case Objective::kLatency: return std::make_tuple(p.latency_ms, p.period_us, energy);
      default: return std::make_tuple(energy, p.period_us, p.latency_ms);
    }
  };
  std::stable_sort(pool.begin(), pool.end(), [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  std::set<std::string> seen;
  if (objective != Objective::kThroughput) {
    for (Candidate& c : pool) {
      if (result.ranked.size() >= top) break;
      if (seen.insert(genome_key(c.mapping)).second) result.ranked.push_back(std::move(c));
    }
    return result;
  }
  std::vector<Candidate> unique;
  for (Candidate& c : pool) {
    if (seen.insert(genome_key(c.mapping)).second) unique.push_back(std::move(c));
  }
  std::vector<bool> taken(unique.size(), false);
  while (result.ranked.size() < top) {
    const size_t i = preferred_index(unique, taken, margin);
    if (i == unique.size()) break;
    taken[i] = true;
    result.ranked.push_back(unique[i]);
  }
  if (!result.ranked.empty() && !unique.empty() &&
      unique.front().prediction.period_us < result.ranked.front().prediction.period_us) {
    const Candidate& fastest = unique.front();
    const Candidate& chosen = result.ranked.front();
    const auto percent = [](double fraction) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1f %%", 100.0 * fraction);
      return std::string(text);
    };
    result.preference_note =
        chosen.mapping.order + " (" + std::to_string(subgraph_count(chosen.mapping.order)) +
        " sub-graphs) is preferred to " + fastest.mapping.order + " (" +
        std::to_string(subgraph_count(fastest.mapping.order)) + " sub-graphs, predicted " +
        percent(fastest.prediction.throughput_fps / chosen.prediction.throughput_fps - 1) +
        " faster): more sub-graphs must be predicted more than " + percent(margin) +
        " faster (the cost model's error margin, planner/search.h)";
  }
  return result;
}

}  // namespace co_up::planner
