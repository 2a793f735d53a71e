// plan(): the searches composed for `co_up plan` (planner/search.h); each search lives in its own
// file under planner/search/ and is called here by its registered name.
#include "planner/search.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "core/error.h"
#include "planner/search/search_support.h"
#include "planner/search_algorithm.h"

namespace co_up::planner {

// ---- plan --------------------------------------------------------------------------------------

namespace {

// Index into `pool` (sorted by the objective's key, best first) of the next mapping to rank among
// those not `taken`: per sub-graph count the first (best) one; from the fewest sub-graphs up, a
// count's best replaces the choice only when worth_more_subgraphs.
size_t preferred_index(const CostModel& model, const std::vector<Candidate>& pool, const std::vector<bool>& taken, double margin) {
  std::vector<std::pair<size_t, size_t>> group_best;  // (sub-graphs, index), first per count
  for (size_t i = 0; i < pool.size(); ++i) {
    if (taken[i]) continue;
    const size_t count = subgraph_count(model, pool[i].mapping.order);
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
  SearchInput in_mode;
  in_mode.model = &model;
  in_mode.mode = mode;
  SearchInput pipeline;
  pipeline.model = &model;
  pipeline.mode = Mode::kPipeline;
  PlanResult result;
  result.single_processor = run_search("single-processor", in_mode).front();
  result.heft = run_search("heft", in_mode).front();

  // Exact searches at the fastest levels, then NSGA-II seeded with them.
  std::vector<Candidate> pool = run_search("dp-per-subset", pipeline);
  SearchInput from_dp = pipeline;
  from_dp.starts.push_back(pool.empty() ? run_search("dp", pipeline).front() : pool.front());
  pool.push_back(run_search("refine", from_dp).front());
  Candidate sp = run_search("shortest-path", pipeline).front();
  Candidate sp_pipeline = make_candidate(model, Mapping{sp.mapping.order, Mode::kPipeline, sp.mapping.levels},
                                         "shortest-path");
  std::vector<Mapping> seeds;
  for (const Candidate& c : pool) seeds.push_back(c.mapping);
  seeds.push_back(sp_pipeline.mapping);
  seeds.push_back(run_search("single-processor", pipeline).front().mapping);
  seeds.push_back(run_search("heft", pipeline).front().mapping);
  if (model.has_energy()) {  // the same orders at the lowest levels: energy-lean starting points
    for (size_t i = 0, count = seeds.size(); i < count; ++i) {
      Mapping low = seeds[i];
      for (size_t d = 0; d < model.domains().size(); ++d) {
        if (model.domain_profiled(d)) low.levels[d] = 1;
      }
      seeds.push_back(std::move(low));
    }
  }
  SearchInput evolve = pipeline;
  evolve.seed = seed;
  for (Mapping& m : seeds) evolve.starts.push_back(Candidate{std::move(m), {}, "seed"});
  // Small genomes converge in fewer generations; 50 layers get the full 250.
  size_t genes = model.layer_count();
  for (size_t d = 0; d < model.domains().size(); ++d) genes += model.domain_profiled(d) ? 1 : 0;
  evolve.generations = static_cast<int>(std::clamp<size_t>(5 * genes, 60, 250));
  std::vector<Candidate> front = run_search("nsga2", evolve);
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
    const size_t i = preferred_index(model, unique, taken, margin);
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
        chosen.mapping.order + " (" + std::to_string(subgraph_count(model, chosen.mapping.order)) +
        " sub-graphs) is preferred to " + fastest.mapping.order + " (" +
        std::to_string(subgraph_count(model, fastest.mapping.order)) + " sub-graphs, predicted " +
        percent(fastest.prediction.throughput_fps / chosen.prediction.throughput_fps - 1) +
        " faster): more sub-graphs must be predicted more than " + percent(margin) +
        " faster (the cost model's error margin, planner/search.h)";
  }
  return result;
}

}  // namespace co_up::planner
