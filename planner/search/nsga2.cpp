#include "planner/search_algorithm.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "planner/search/search_support.h"
#include "planner/seeded_random.h"

namespace co_up::planner {
namespace {

struct Individual {
  Mapping mapping;
  Prediction prediction;
  std::vector<double> objectives;
  size_t rank = 0;
  double crowding = 0;
};

}  // namespace

std::vector<Candidate> nsga2(const CostModel& model, const std::vector<Mapping>& seeds,
                             const Nsga2Options& options) {
  SeededRandom rng(options.seed);
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

std::unique_ptr<SearchAlgorithm> create_nsga2_search() {
  return std::make_unique<FunctionSearch>([](const SearchInput& in) {
    std::vector<Mapping> seeds;
    for (const Candidate& c : in.starts) seeds.push_back(c.mapping);
    Nsga2Options options;
    options.seed = in.seed;
    options.mode = in.mode;
    if (in.generations > 0) options.generations = in.generations;
    return nsga2(*in.model, seeds, options);
  });
}

}  // namespace co_up::planner
