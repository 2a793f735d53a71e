#include "planner/stage_plan_search.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "planner/search.h"
#include "planner/seeded_random.h"
#include "planner/stage_latency_model.h"

namespace co_up::planner {
namespace {

const ProcessorOption& find_option(const StageSearchInput& in, char letter, int level) {
  for (const ProcessorOption& o : in.options) {
    if (o.letter == letter && o.level == level) return o;
  }
  throw InputError(std::string("no costs for processor ") + letter + " at level " + std::to_string(level));
}

std::vector<int> levels_of(const StageSearchInput& in, char letter) {
  std::vector<int> levels;
  for (const ProcessorOption& o : in.options) {
    if (o.letter == letter) levels.push_back(o.level);
  }
  std::sort(levels.begin(), levels.end());
  return levels;
}

std::vector<double> objectives(const StageCandidate& c) {
  return {c.latency_ms, c.energy_mj < 0 ? 0.0 : c.energy_mj, 1.0 - c.accuracy};
}

std::string key(const StageCandidate& c) {
  std::string k = c.order;
  for (int l : c.levels) k += "," + std::to_string(l);
  for (double t : c.thresholds) k += "," + std::to_string(t);
  return k;
}

}  // namespace

namespace {

// Every frame's confidence (softmax maximum) and correctness at every exit, computed once.
class ExitTable {
 public:
  explicit ExitTable(const ExitScores& s) : frames_(s.frames), exits_(s.exits) {
    if (s.exits == 0 || s.classes == 0 || s.logits.size() != s.frames * s.exits * s.classes ||
        s.labels.size() != s.frames) {
      throw InputError("exit scores: " + std::to_string(s.logits.size()) + " logits and " +
                       std::to_string(s.labels.size()) + " labels do not fit " + std::to_string(s.frames) +
                       " frames x " + std::to_string(s.exits) + " exits x " + std::to_string(s.classes) + " classes");
    }
    for (size_t f = 0; f < s.frames; ++f) {
      for (size_t k = 0; k < s.exits; ++k) {
        const float* z = &s.logits[(f * s.exits + k) * s.classes];
        const float* best = std::max_element(z, z + s.classes);
        double sum = 0;
        for (size_t c = 0; c < s.classes; ++c) sum += std::exp(static_cast<double>(z[c] - *best));
        confidence_.push_back(1.0 / sum);  // softmax of the arg-max class
        correct_.push_back(best - z == s.labels[f]);
      }
    }
  }

  ExitOutcome evaluate(const std::vector<double>& thresholds) const {
    if (thresholds.size() + 1 != exits_) {
      throw InputError("exit thresholds: " + std::to_string(thresholds.size()) + " given for " +
                       std::to_string(exits_) + " exits; give one per exit but the last");
    }
    ExitOutcome out;
    out.exit_fraction.assign(exits_, 0.0);
    size_t correct = 0;
    for (size_t f = 0; f < frames_; ++f) {
      for (size_t k = 0; k < exits_; ++k) {
        if (k + 1 < exits_ && confidence_[f * exits_ + k] < thresholds[k]) continue;
        out.exit_fraction[k] += 1;
        correct += correct_[f * exits_ + k] ? 1 : 0;
        break;
      }
    }
    const double n = frames_ == 0 ? 1.0 : static_cast<double>(frames_);
    for (double& v : out.exit_fraction) v /= n;
    out.accuracy = static_cast<double>(correct) / n;
    return out;
  }

 private:
  size_t frames_, exits_;
  std::vector<double> confidence_;
  std::vector<bool> correct_;
};

StageCandidate evaluate_with(const StageSearchInput& in, const ExitTable& table, StageCandidate c);
std::vector<ExitCost> candidate_exit_costs(const StageSearchInput& in, const StageCandidate& c);

}  // namespace

ExitOutcome evaluate_exit_thresholds(const ExitScores& s, const std::vector<double>& thresholds) {
  return ExitTable(s).evaluate(thresholds);
}

std::vector<double> candidate_exit_latency(const StageSearchInput& in, const StageCandidate& c) {
  std::vector<double> out;
  for (const ExitCost& e : candidate_exit_costs(in, c)) out.push_back(e.latency_ms);
  return out;
}

StageCandidate evaluate_stage_candidate(const StageSearchInput& in, StageCandidate c) {
  return evaluate_with(in, ExitTable(in.scores), std::move(c));
}

namespace {

StageCosts candidate_costs(const StageSearchInput& in, const StageCandidate& c) {
  const size_t m = in.reuse.size();
  StageCosts costs;
  costs.reuse = in.reuse;
  for (size_t i = 0; i < m; ++i) {
    const ProcessorOption& o = find_option(in, c.order[i], c.levels[i]);
    costs.tau.push_back(o.tau_ms.at(i));
    costs.power_w.push_back(o.power_w);
  }
  const size_t layers = costs.tau.empty() ? 0 : costs.tau[0].size();
  costs.transfer.assign(m, std::vector<std::vector<double>>(m, std::vector<double>(layers, 0.0)));
  for (size_t k = 0; k < m; ++k) {
    for (size_t i = k + 1; i < m; ++i) {
      if (c.order[k] == c.order[i]) continue;
      const auto it = in.transfer_ms.find({c.order[k], c.order[i]});
      if (it == in.transfer_ms.end()) continue;
      for (size_t j = 0; j + 1 < layers && j < it->second.at(k).size(); ++j) costs.transfer[k][i][j] = it->second[k][j];
    }
  }
  return costs;
}

std::vector<ExitCost> candidate_exit_costs(const StageSearchInput& in, const StageCandidate& c) {
  const StageCosts costs = candidate_costs(in, c);
  std::vector<ExitCost> exits = exit_costs(costs, in.whole_stages);
  if (in.runtime) {
    const size_t m = costs.tau.size();
    const std::vector<double> t = runtime_exit_latency(costs, c.order, *in.runtime);
    for (size_t k = 0; k < m; ++k) exits[k].latency_ms = t[k];
  }
  return exits;
}

StageCandidate evaluate_with(const StageSearchInput& in, const ExitTable& table, StageCandidate c) {
  const size_t m = in.reuse.size();
  bool energy = true;
  for (size_t i = 0; i < m; ++i) energy = energy && find_option(in, c.order[i], c.levels[i]).power_w >= 0;
  const std::vector<ExitCost> exits = candidate_exit_costs(in, c);
  const ExitOutcome outcome = table.evaluate(c.thresholds);
  c.latency_ms = 0;
  c.energy_mj = 0;
  for (size_t k = 0; k < m; ++k) {
    c.latency_ms += outcome.exit_fraction[k] * exits[k].latency_ms;
    c.energy_mj += outcome.exit_fraction[k] * exits[k].energy_mj;
  }
  if (!energy) c.energy_mj = -1;
  c.accuracy = outcome.accuracy;
  c.exit_fraction = outcome.exit_fraction;
  return c;
}

}  // namespace

StageSearchResult search_stage_mappings(const StageSearchInput& in) {
  const size_t m = in.reuse.size();
  if (m == 0) throw InputError("stage search: the plan has no stages");
  if (in.scores.exits != m) {
    throw InputError("stage search: the validation scores have " + std::to_string(in.scores.exits) +
                     " exits but the plan has " + std::to_string(m) + " stages");
  }
  std::string letters;
  for (const ProcessorOption& o : in.options) {
    if (o.tau_ms.size() != m) throw InputError(std::string("stage search: processor ") + o.letter + "'s costs do not have one row per stage");
    if (letters.find(o.letter) == std::string::npos) letters += o.letter;
  }
  if (letters.size() < m) {
    throw InputError("stage search: " + std::to_string(m) + " stages need " + std::to_string(m) +
                     " distinct processors, the profile has " + std::to_string(letters.size()) + " (" + letters + ")");
  }
  const std::vector<double> never(m - 1, 2.0);
  const ExitTable table(in.scores);
  StageSearchResult result;

  // Baselines. Every stage on one processor runs them one after another, to the last exit.
  for (const ProcessorOption& o : in.options) {
    StageCandidate c;
    c.order.assign(m, o.letter);
    c.levels.assign(m, o.level);
    c.thresholds = never;
    c.source = "single processor";
    double total = 0;
    for (const auto& row : o.tau_ms) {
      for (double t : row) total += t;
    }
    const ExitOutcome outcome = table.evaluate(never);
    // The runtime model: every stage a sub-graph on one thread, one after another.
    c.latency_ms = in.runtime ? runtime_exit_latency(candidate_costs(in, c), c.order, *in.runtime).back() : total;
    c.energy_mj = o.power_w >= 0 ? total * o.power_w : -1;
    c.accuracy = outcome.accuracy;
    c.exit_fraction = outcome.exit_fraction;
    result.single_processor.push_back(c);
  }
  // The static width split: distinct processors (the fastest level each), no early exit.
  {
    std::string perm = letters;
    std::sort(perm.begin(), perm.end());
    do {
      StageCandidate c;
      c.order = perm.substr(0, m);
      for (char l : c.order) c.levels.push_back(levels_of(in, l).back());
      c.thresholds = never;
      c.source = "static split";
      const std::string k = key(c);
      const bool dup = std::any_of(result.static_split.begin(), result.static_split.end(),
                                   [&](const StageCandidate& s) { return key(s) == k; });
      if (!dup) result.static_split.push_back(evaluate_with(in, table, c));
    } while (std::next_permutation(perm.begin(), perm.end()));
  }

  // NSGA-II over (order, levels, thresholds).
  SeededRandom rng(in.seed);
  const size_t pop_size = static_cast<size_t>(std::max(in.population, 4));
  const size_t grid = in.threshold_grid.size();
  // With the runtime model, consecutive stages may share a processor whose next-stage cost was
  // fitted (early exits within one processor); otherwise orders are permutations (Eq. 8 lets a
  // frame's stages run at once, which stages on one processor cannot).
  std::string repeatable;
  if (in.runtime) {
    for (char l : letters) {
      if (in.runtime->next_stage_ms.contains(l)) repeatable += l;
    }
  }
  const auto order_allowed = [&](const std::string& order) {
    for (size_t i = 1; i < order.size(); ++i) {
      if (order[i] == order[i - 1] && repeatable.find(order[i]) == std::string::npos) return false;
    }
    return true;
  };
  auto random_candidate = [&] {
    StageCandidate c;
    std::string perm = letters;
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
    c.order = perm.substr(0, m);
    if (!repeatable.empty() && rng.unit() < 0.5) {
      do {
        for (char& l : c.order) l = letters[rng.below(letters.size())];
      } while (!order_allowed(c.order));
    }
    for (char l : c.order) {
      const std::vector<int> levels = levels_of(in, l);
      c.levels.push_back(levels[rng.below(levels.size())]);
    }
    for (size_t k = 0; k + 1 < m; ++k) c.thresholds.push_back(in.threshold_grid[rng.below(grid)]);
    c.source = "nsga2";
    return c;
  };
  std::vector<StageCandidate> population;
  std::set<std::string> seen;
  for (const StageCandidate& s : result.static_split) {
    StageCandidate c = s;
    c.source = "nsga2";
    if (population.size() < pop_size && seen.insert(key(c)).second) population.push_back(c);
  }
  // Every stage on one repeatable processor, with early exits: the plan a loaded multi-processor
  // hand-off cannot beat on a small network. Seeded so that the search always weighs it.
  for (char l : repeatable) {
    for (size_t g = 0; g < grid && population.size() < pop_size; g += 2) {
      StageCandidate c;
      c.order.assign(m, l);
      c.levels.assign(m, levels_of(in, l).back());
      c.thresholds.assign(m - 1, in.threshold_grid[g]);
      c.source = "nsga2";
      if (seen.insert(key(c)).second) population.push_back(evaluate_with(in, table, c));
    }
  }
  for (size_t tries = 0; population.size() < pop_size && tries < 100 * pop_size; ++tries) {
    StageCandidate c = random_candidate();
    if (seen.insert(key(c)).second) population.push_back(evaluate_with(in, table, c));
  }
  auto rank = [](const std::vector<StageCandidate>& pop, std::vector<size_t>& out_rank, std::vector<double>& out_crowd) {
    std::vector<std::vector<double>> points;
    for (const StageCandidate& c : pop) points.push_back(objectives(c));
    const auto fronts = non_dominated_sort(points);
    out_rank.assign(pop.size(), 0);
    out_crowd.assign(pop.size(), 0.0);
    for (size_t f = 0; f < fronts.size(); ++f) {
      const std::vector<double> d = crowding_distance(points, fronts[f]);
      for (size_t i = 0; i < fronts[f].size(); ++i) {
        out_rank[fronts[f][i]] = f;
        out_crowd[fronts[f][i]] = d[i];
      }
    }
    return fronts;
  };
  std::vector<size_t> ranks;
  std::vector<double> crowd;
  rank(population, ranks, crowd);
  const double mutation = 1.0 / static_cast<double>(3 * m);
  for (int gen = 0; gen < in.generations; ++gen) {
    auto tournament = [&]() -> const StageCandidate& {
      const size_t a = rng.below(population.size()), b = rng.below(population.size());
      if (ranks[a] != ranks[b]) return population[ranks[a] < ranks[b] ? a : b];
      return population[crowd[a] >= crowd[b] ? a : b];
    };
    std::vector<StageCandidate> combined = population;
    std::set<std::string> keys;
    for (const StageCandidate& c : combined) keys.insert(key(c));
    for (size_t made = 0, tries = 0; made < pop_size && tries < 20 * pop_size; ++tries) {
      StageCandidate child = tournament();
      if (rng.unit() < 0.9) {  // uniform crossover of levels and thresholds; orders stay permutations
        const StageCandidate& other = tournament();
        if (rng.unit() < 0.5) {
          child.order = other.order;
          child.levels = other.levels;
        }
        for (size_t k = 0; k + 1 < m; ++k) {
          if (rng.unit() < 0.5) child.thresholds[k] = other.thresholds[k];
        }
      }
      for (size_t i = 0; i < m; ++i) {
        if (rng.unit() < mutation) {  // swap with another stage's processor, or an unused one
          const size_t j = rng.below(letters.size());
          const size_t at = child.order.find(letters[j]);
          std::string moved = child.order;
          moved[i] = letters[j];
          if (!repeatable.empty() && rng.unit() < 0.5 && order_allowed(moved)) {
            child.order = moved;  // may now share a processor with a neighbour
            child.levels[i] = levels_of(in, letters[j]).back();
          } else if (at != std::string::npos) {
            std::swap(child.order[i], child.order[at]);
            std::swap(child.levels[i], child.levels[at]);
          } else {
            child.order[i] = letters[j];
            child.levels[i] = levels_of(in, letters[j]).back();
          }
        }
        if (rng.unit() < mutation) {
          const std::vector<int> levels = levels_of(in, child.order[i]);
          child.levels[i] = levels[rng.below(levels.size())];
        }
      }
      for (size_t k = 0; k + 1 < m; ++k) {
        if (rng.unit() < mutation) child.thresholds[k] = in.threshold_grid[rng.below(grid)];
      }
      if (!order_allowed(child.order) || !keys.insert(key(child)).second) continue;
      child.source = "nsga2";
      combined.push_back(evaluate_with(in, table, child));
      ++made;
    }
    std::vector<size_t> r;
    std::vector<double> cd;
    const auto fronts = rank(combined, r, cd);
    std::vector<StageCandidate> next;
    for (const std::vector<size_t>& front : fronts) {
      if (next.size() + front.size() <= pop_size) {
        for (size_t i : front) next.push_back(combined[i]);
        continue;
      }
      std::vector<size_t> rest = front;
      std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) { return cd[a] > cd[b]; });
      for (size_t i = 0; next.size() < pop_size; ++i) next.push_back(combined[rest[i]]);
      break;
    }
    population = std::move(next);
    rank(population, ranks, crowd);
  }
  for (size_t i = 0; i < population.size(); ++i) {
    if (ranks[i] == 0) result.front.push_back(population[i]);
  }
  std::stable_sort(result.front.begin(), result.front.end(), [](const StageCandidate& a, const StageCandidate& b) {
    if (a.latency_ms != b.latency_ms) return a.latency_ms < b.latency_ms;
    return key(a) < key(b);
  });
  return result;
}

}  // namespace co_up::planner
