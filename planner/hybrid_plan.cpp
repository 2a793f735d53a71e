#include "planner/hybrid_plan.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/message_text.h"
#include "planner/hybrid_search.h"
#include "planner/search/search_support.h"
#include "planner/split_plan.h"

namespace co_up::planner {

std::string para_pipe_kind(const DagCostModel& model, const Mapping& m) {
  std::string used;
  for (char c : m.order) {
    if (used.find(c) == std::string::npos) used += c;
  }
  if (used.size() <= 1) return "single";
  if (m.mode == Mode::kOverlap) return "overlap";
  bool split = false;
  for (const SplitGroup& g : split_groups(model.model())) {
    const std::string parts = m.order.substr(g.first, g.parts);
    split = split || parts.find_first_not_of(parts[0]) != std::string::npos;
  }
  if (split) return m.mode == Mode::kSwitch ? "split" : "split-pipe";
  bool spread = false;
  for (const graph::DagRegion& r : graph::find_unit_regions(model.dag())) {
    std::string letters;
    for (const auto& branch : r.branches) {
      for (uint32_t u : branch) {
        if (letters.find(m.order[u]) == std::string::npos) letters += m.order[u];
      }
    }
    spread = spread || letters.size() > 1;
  }
  if (m.mode == Mode::kSwitch) return spread ? "para-only" : "switch";
  return spread ? "hybrid" : "pipe-only";
}

namespace {

// Plans shaped for overlap mode. A switch plan re-run in overlap mode gains little when both
// processors work from a frame's start to its end (the next frame then waits, and two frames in
// flight double the latency); what gains is a plan whose processors each work in a shorter
// window of the frame (a pipeline whose middle is spread): the "overlap-window" candidates below.
// Then, from the overlap candidate that best meets each latency bound (1, 1.15 and 1.3 times the
// least switch latency in the pool), a descent over single units (each moved to every other
// letter, first improvement, at most three passes) minimises the overlap period plus ten times
// any latency over the bound; and from the one that best meets each period bound (1.02, 1.05
// and 1.1 times the least overlap period in the pool), the latency plus a hundred times any
// period over it ("overlap-descent").
void add_overlap_descents(const DagCostModel& model, std::vector<Candidate>& pool) {
  const CostModel& cost = model.model();
  const std::string& letters = cost.letters();
  // Windows: the least-latency switch plan with its first units all on one letter and its last
  // units all on another (cuts every twentieth of the units): the front and back processors then
  // each work in a window of the frame, the spread middle between them.
  const Candidate* fastest = nullptr;
  for (const Candidate& c : pool) {
    if (c.mapping.mode == Mode::kSwitch && (fastest == nullptr || c.prediction.latency_ms < fastest->prediction.latency_ms)) {
      fastest = &c;
    }
  }
  if (fastest == nullptr || letters.size() < 2) return;
  const double switch_ms = fastest->prediction.latency_ms;
  const Mapping spread = fastest->mapping;  // copied: the pool grows below
  const size_t n = spread.order.size(), step = std::max<size_t>(1, n / 20);
  for (char front : letters) {
    for (char back : letters) {
      if (front == back) continue;
      for (size_t a = 0; a < n; a += step) {
        for (size_t b = a + step; b <= n; b += step) {
          Mapping m = spread;
          m.mode = Mode::kOverlap;
          std::fill(m.order.begin(), m.order.begin() + static_cast<std::ptrdiff_t>(a), front);
          std::fill(m.order.begin() + static_cast<std::ptrdiff_t>(b), m.order.end(), back);
          if (m.order.find_first_not_of(m.order[0]) == std::string::npos || !cost.runs(m.order)) continue;
          const Prediction p = model.predict(m);
          pool.push_back(Candidate{std::move(m), p, "overlap-window"});
        }
      }
    }
  }
  // From the overlap candidate that scores best, single units moved to another letter (first
  // improvement, at most three passes); the end joins the pool when it moved.
  auto descend = [&](const auto& score) {
    const Candidate* start = nullptr;
    for (const Candidate& c : pool) {
      if (c.mapping.mode == Mode::kOverlap && (start == nullptr || score(c.prediction) < score(start->prediction))) {
        start = &c;
      }
    }
    if (start == nullptr) return;
    Mapping best = start->mapping;
    Prediction best_prediction = start->prediction;
    double best_score = score(best_prediction);
    bool moved = false;  // no move improved: the start is in the pool already
    for (int pass = 0; pass < 3; ++pass) {
      bool improved = false;
      for (size_t u = 0; u < best.order.size(); ++u) {
        for (char letter : letters) {
          if (letter == best.order[u]) continue;
          Mapping m = best;
          m.order[u] = letter;
          if (!cost.runs(m.order)) continue;
          const Prediction p = model.predict(m);
          const double s = score(p);
          if (s < best_score) {
            best_score = s;
            best = std::move(m);
            best_prediction = p;
            improved = true;
          }
        }
      }
      if (!improved) break;
      moved = true;
    }
    if (moved) pool.push_back(Candidate{std::move(best), best_prediction, "overlap-descent"});
  };
  // The period under a latency bound (from the spread switch plan's end of the front)...
  for (double factor : {1.0, 1.15, 1.3}) {
    const double bound_ms = factor * switch_ms;
    descend([&](const Prediction& p) { return p.period_us + 10'000 * std::max(0.0, p.latency_ms - bound_ms); });
  }
  // ... and the latency under a period bound (from the overlap windows' end: their latency is
  // what the next frame waits inside the frame, which moving a unit of the spread middle can cut).
  double least_period = kInf;
  for (const Candidate& c : pool) {
    if (c.mapping.mode == Mode::kOverlap) least_period = std::min(least_period, c.prediction.period_us);
  }
  if (least_period == kInf) return;
  for (double factor : {1.02, 1.05, 1.1}) {
    const double bound_us = factor * least_period;
    descend([&](const Prediction& p) { return 1000 * p.latency_ms + 100 * std::max(0.0, p.period_us - bound_us); });
  }
}

}  // namespace

PlanResult plan_hybrid(const DagCostModel& model, Objective objective, size_t top,
                       const HybridPlanOptions& options) {
  const CostModel& cost = model.model();
  PlanResult chain = plan(cost, objective, std::max<size_t>(top, 16), options.seed);
  auto predicted = [&](Candidate c) {
    c.mapping = cost.normalized(c.mapping);
    c.prediction = model.predict(c.mapping);
    return c;
  };
  std::vector<Candidate> pool;
  for (const Candidate& c : chain.ranked) pool.push_back(predicted(c));

  std::vector<Mode> modes;
  if (objective == Objective::kLatency || objective == Objective::kPareto) modes.push_back(Mode::kSwitch);
  if (objective == Objective::kThroughput || objective == Objective::kPareto) modes.push_back(Mode::kPipeline);
  // Split layers (a profile taken with --split): which to spread, from one processor and from the
  // chain planner's best, before the searches (whose descent starts from them: spreading branches
  // on top of splits is the hybrid) and again from each search's best.
  const bool has_splits = !split_groups(cost).empty();
  auto add_splits = [&](const std::string& base, Mode mode) {
    SplitPlanOptions split;
    split.mode = mode;
    pool.push_back(plan_splits(model, base, split).best);
  };
  if (has_splits) {
    for (Mode mode : modes) {
      add_splits(cost.normalized(chain.single_processor.mapping).order, mode);
      if (!chain.ranked.empty()) add_splits(cost.normalized(chain.ranked.front().mapping).order, mode);
    }
  }
  std::vector<Mapping> visited;
  std::vector<Mapping> bests;  // per mode searched
  for (Mode mode : modes) {
    HybridSearchOptions search;
    search.mode = mode;
    search.seed = options.seed;
    search.node_budget = options.node_budget;
    for (const Candidate& c : pool) search.starts.push_back(c.mapping);
    HybridSearchResult r = hybrid_search(model, search);
    pool.push_back(r.best);
    if (has_splits) add_splits(r.best.mapping.order, mode);
    bests.push_back(r.best.mapping);
    visited.insert(visited.end(), r.improvements.begin(), r.improvements.end());
  }
  if (objective == Objective::kPareto && bests.size() == 2) {
    // Between the two ends (Para-Pipe's hybrid-T .. hybrid-L): from the best pipeline, take the
    // least-latency plan's branch assignment one region at a time, the region that lowers the
    // pipeline latency most first; every step is a candidate.
    const std::vector<graph::DagRegion> regions = graph::find_unit_regions(model.dag());
    const std::string& para = bests[0].order;
    std::string current = bests[1].order;
    std::vector<bool> applied(regions.size(), false);
    for (size_t step = 0; step < regions.size(); ++step) {
      size_t pick = regions.size();
      double best_latency = kInf;
      for (size_t i = 0; i < regions.size(); ++i) {
        if (applied[i]) continue;
        std::string order = current;
        for (const auto& branch : regions[i].branches) {
          for (uint32_t u : branch) order[u] = para[u];
        }
        if (regions[i].join != graph::kDagExit) order[regions[i].join] = para[regions[i].join];
        if (order == current) {
          applied[i] = true;
          continue;
        }
        const Candidate c = predicted(Candidate{Mapping{order, Mode::kPipeline, bests[1].levels}, {}, "hybrid-path"});
        if (c.prediction.latency_ms < best_latency) {
          best_latency = c.prediction.latency_ms;
          pick = i;
        }
        pool.push_back(c);
      }
      if (pick == regions.size()) break;
      applied[pick] = true;
      for (const auto& branch : regions[pick].branches) {
        for (uint32_t u : branch) current[u] = para[u];
      }
      if (regions[pick].join != graph::kDagExit) current[regions[pick].join] = para[regions[pick].join];
    }
  }
  if (objective == Objective::kPareto) {  // each accepted mapping in both modes
    for (const Mapping& v : visited) {
      for (Mode mode : {Mode::kSwitch, Mode::kPipeline}) {
        pool.push_back(predicted(Candidate{Mapping{v.order, mode, v.levels}, {}, "hybrid-bnb"}));
      }
    }
    for (const Candidate& c : std::vector<Candidate>(pool)) {
      const Mode other = c.mapping.mode == Mode::kSwitch ? Mode::kPipeline : Mode::kSwitch;
      pool.push_back(predicted(Candidate{Mapping{c.mapping.order, other, c.mapping.levels}, {}, c.source}));
    }
    // Every plan on several processors also in overlap mode (a second frame fills the idle tails
    // of the first): a spread plan's one-frame latency with up to twice its throughput, the only
    // shape that can be well above one processor on both (docs/para_pipe.md).
    std::set<std::pair<std::string, std::vector<int>>> overlapped;
    for (const Candidate& c : std::vector<Candidate>(pool)) {
      if (c.mapping.mode != Mode::kSwitch || c.mapping.order.find_first_not_of(c.mapping.order[0]) == std::string::npos ||
          !cost.runs(c.mapping.order) || !overlapped.insert({c.mapping.order, c.mapping.levels}).second) {
        continue;
      }
      pool.push_back(predicted(Candidate{Mapping{c.mapping.order, Mode::kOverlap, c.mapping.levels}, {}, c.source}));
    }
    add_overlap_descents(model, pool);
  }
  pool.push_back(predicted(chain.single_processor));
  pool.erase(std::remove_if(pool.begin(), pool.end(), [&](const Candidate& c) { return !cost.runs(c.mapping.order); }),
             pool.end());

  // Constraints.
  if (options.min_fps > 0 || options.max_latency_ms > 0) {
    const Candidate* closest = nullptr;
    for (const Candidate& c : pool) {
      if (closest == nullptr || (options.min_fps > 0 ? c.prediction.throughput_fps > closest->prediction.throughput_fps
                                                     : c.prediction.latency_ms < closest->prediction.latency_ms)) {
        closest = &c;
      }
    }
    std::vector<Candidate> kept;
    for (const Candidate& c : pool) {
      if ((options.min_fps <= 0 || c.prediction.throughput_fps >= options.min_fps) &&
          (options.max_latency_ms <= 0 || c.prediction.latency_ms <= options.max_latency_ms)) {
        kept.push_back(c);
      }
    }
    if (kept.empty()) {
      std::string asked;
      if (options.min_fps > 0) asked += "--min-fps=" + format_number("%g", options.min_fps);
      if (options.max_latency_ms > 0) asked += (asked.empty() ? "" : " with ") + ("--max-latency-ms=" + format_number("%g", options.max_latency_ms));
      throw InputError("no plan reaches " + asked + ": the closest predicts " +
                       format_number("%.2f fps", closest->prediction.throughput_fps) + " and " +
                       format_number("%.3f ms", closest->prediction.latency_ms) + " (relax the constraint)");
    }
    pool = std::move(kept);
  }

  for (Candidate& c : pool) {
    const std::string kind = para_pipe_kind(model, c.mapping);
    if (c.source.find(kind) == std::string::npos) c.source += ", " + kind;
  }
  auto key = [&](const Candidate& c) {
    const Prediction& p = c.prediction;
    const double energy = p.has_energy() ? p.energy_mj_per_frame : kInf;
    switch (objective) {
      case Objective::kThroughput: return std::make_tuple(p.period_us, p.latency_ms, energy);
      case Objective::kLatency: return std::make_tuple(p.latency_ms, p.period_us, energy);
      case Objective::kEnergy: return std::make_tuple(energy, p.period_us, p.latency_ms);
      default: return std::make_tuple(-p.throughput_fps, p.latency_ms, energy);
    }
  };
  std::stable_sort(pool.begin(), pool.end(), [&](const Candidate& a, const Candidate& b) { return key(a) < key(b); });
  std::vector<Candidate> unique;
  std::set<std::string> seen;
  for (Candidate& c : pool) {
    if (seen.insert(command_line(cost, c.mapping)).second) unique.push_back(std::move(c));
  }
  PlanResult result;
  if (objective == Objective::kPareto) {
    std::vector<std::vector<double>> points;
    for (const Candidate& c : unique) points.push_back(objectives(c.prediction, cost.has_energy()));
    const std::vector<std::vector<size_t>> fronts = non_dominated_sort(points);
    std::vector<size_t> front = fronts.empty() ? std::vector<size_t>{} : fronts.front();
    std::sort(front.begin(), front.end());  // `unique` is sorted by throughput already
    for (size_t i : front) {
      if (result.ranked.size() >= top) break;
      result.ranked.push_back(unique[i]);
    }
  } else {
    for (Candidate& c : unique) {
      if (result.ranked.size() >= top) break;
      result.ranked.push_back(std::move(c));
    }
  }
  result.single_processor = predicted(chain.single_processor);
  result.single_processor.source += ", single";
  result.heft = predicted(chain.heft);
  return result;
}

}  // namespace co_up::planner
