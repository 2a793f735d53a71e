// Modulo scheduling (planner/modulo_schedule.h) against the executor's modes, by the DAG cost
// model only: for the plans `co_up plan` prints from a profile (the best latency plan and every
// Pareto front point), what one frame interleaved with the next by a static per-processor
// sequence is predicted to give, beside switch, overlap and pipeline mode of the same mapping;
// then a search over mappings for the target on the schedule's optimistic bound. Nothing runs.
//
//   co_up_bench_modulo_schedule [--target=FPS_RATIO,LATENCY_RATIO] PROFILE.json...
//
// Ratios are to the fastest single processor's switch-mode prediction (throughput x, latency
// "one processor's ms / ms"). Per plan and mode, one row; per plan three cyclic rows: the
// scheduler's fastest schedule and its schedule nearest the target (largest min(throughput / its
// target, latency / its target)), each simulated running its sequences (predict_cyclic, 64
// frames), and the bound no static interleaving of that mapping passes (throughput: the busiest
// processor's work co-running all along, modulo_min_ii_us; latency: the frame alone, switch mode).
// The search: from each plan, unit runs of 1-8 units moved to one letter (first improvement,
// then random kicks of 8 single moves, seeded) minimising max(target / bound) of those two bounds:
// where even that stays above 1, no mapping it reached can meet the target by interleaving.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/profiled_network.h"
#include "graph/parallel_regions.h"
#include "planner/dag_cost_model.h"
#include "planner/hybrid_plan.h"
#include "planner/layer_profile.h"
#include "planner/modulo_schedule.h"

namespace {

using namespace co_up;

struct Ratios {
  double fps = 0, latency = 0;  // throughput x one processor's; one processor's latency / this
};

std::string fmt(double x) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << x << "x";
  return s.str();
}

int run(int argc, char** argv) {
  double target_fps = 1.88, target_latency = 1.40;
  std::vector<std::string> profiles;
  for (const bench::BenchOption& o : bench::read_options(argc, argv)) {
    if (o.name.empty()) {
      profiles.push_back(o.text);
    } else if (o.is("target")) {
      const std::vector<std::string> t = o.list();
      if (t.size() != 2) throw InputError("--target needs two ratios: --target=1.88,1.40 (throughput, latency)");
      bench::BenchOption part = o;
      part.value = t[0];
      target_fps = part.real(0.01, 100);
      part.value = t[1];
      target_latency = part.real(0.01, 100);
    } else {
      o.unknown();
    }
  }
  if (profiles.empty()) throw InputError("no profile given (co_up_bench_modulo_schedule PROFILE.json...)");
  for (const std::string& file : profiles) {
    const planner::LayerProfile profile = planner::read_layer_profile(file);
    const planner::CostModel model(profile);
    const planner::ProfileNetwork& net = profile.network;
    const graph::Graph g = bench::profiled_network(net);
    const planner::DagCostModel dm(model, graph::unit_dag(g));
    const size_t processors = model.letters().size();
    // The fastest single processor, switch mode (one core: no co-run).
    double one_ms = 0;
    char one = 0;
    for (char letter : model.letters()) {
      const std::string order(model.layer_count(), letter);
      if (!model.runs(order)) continue;
      const double ms = dm.predict({order, planner::Mode::kSwitch, {}}).latency_ms;
      if (one == 0 || ms < one_ms) {
        one_ms = ms;
        one = letter;
      }
    }
    if (one == 0) throw InputError(file + ": no single processor runs every unit");
    const auto ratios = [&](const planner::Prediction& p) { return Ratios{p.throughput_fps * one_ms / 1e3, one_ms / p.latency_ms}; };
    const auto nearness = [&](const Ratios& r) { return std::min(r.fps / target_fps, r.latency / target_latency); };
    std::cout << "## " << (net.graph.empty() ? net.model : net.graph) << " (" << net.layer_count << " units, processors "
              << model.letters() << "): " << one << " alone predicted " << one_ms << " ms; target " << fmt(target_fps)
              << " throughput with " << fmt(target_latency) << " lower latency\n\n";

    std::vector<std::pair<std::string, planner::Mapping>> plans;
    const planner::PlanResult latency = planner::plan_hybrid(dm, planner::Objective::kLatency, 1);
    plans.push_back({"best latency", latency.ranked.front().mapping});
    const planner::PlanResult front = planner::plan_hybrid(dm, planner::Objective::kPareto, 64);
    for (size_t i = 0; i < front.ranked.size(); ++i) {
      plans.push_back({"pareto " + std::to_string(i + 1) + "/" + std::to_string(front.ranked.size()) + " (" +
                           planner::mode_name(front.ranked[i].mapping.mode) + ")",
                       front.ranked[i].mapping});
    }
    // The two bounds of an interleaving of `order`, as ratios.
    const auto bounds = [&](const std::string& order) {
      const planner::Mapping m{order, planner::Mode::kSwitch, {}};
      const double ii = planner::modulo_min_ii_us(dm.subgraph_costs(m), processors);
      return Ratios{1e3 * one_ms / ii, 1e3 * one_ms / dm.switch_latency_us(m)};
    };
    std::cout << "| plan | mode | predicted fps / " << one << " | predicted " << one << " ms / ms |\n|---|---|---|---|\n";
    for (const auto& [label, mapping] : plans) {
      for (planner::Mode mode : {planner::Mode::kSwitch, planner::Mode::kOverlap, planner::Mode::kPipeline}) {
        const Ratios r = ratios(dm.predict({mapping.order, mode, mapping.levels}));
        std::cout << "| " << label << " | " << planner::mode_name(mode) << " | " << fmt(r.fps) << " | " << fmt(r.latency) << " |\n";
      }
      const planner::Mapping m{mapping.order, planner::Mode::kOverlap, mapping.levels};
      const std::vector<planner::SubGraphCost> costs = dm.subgraph_costs(m);
      const Ratios bound = bounds(mapping.order);
      Ratios fastest, nearest;
      double fastest_ii = 0, nearest_ii = 0;
      for (const planner::ModuloSchedule& s :
           planner::modulo_schedule_front(costs, processors, 1.3 * 1e3 * one_ms / bound.latency)) {
        const Ratios r = ratios(dm.predict_cyclic(m, s.order));
        if (r.fps > fastest.fps) {
          fastest = r;
          fastest_ii = s.ii_us;
        }
        if (nearness(r) > nearness(nearest)) {
          nearest = r;
          nearest_ii = s.ii_us;
        }
      }
      std::cout << "| " << label << " | cyclic, fastest (interval " << fastest_ii / 1e3 << " ms) | " << fmt(fastest.fps)
                << " | " << fmt(fastest.latency) << " |\n";
      std::cout << "| " << label << " | cyclic, nearest the target (interval " << nearest_ii / 1e3 << " ms) | "
                << fmt(nearest.fps) << " | " << fmt(nearest.latency) << " |\n";
      std::cout << "| " << label << " | cyclic bound | " << fmt(bound.fps) << " | " << fmt(bound.latency) << " |\n";
    }

    // The search on the bounds: max(target / bound) over throughput and latency, minimised.
    const auto score = [&](const std::string& order) {
      if (!model.runs(order)) return std::numeric_limits<double>::infinity();
      const Ratios b = bounds(order);
      return std::max(target_fps / b.fps, target_latency / b.latency);
    };
    std::string best_order;
    double best = std::numeric_limits<double>::infinity();
    std::mt19937_64 random(1);
    for (const auto& [label, mapping] : plans) {
      std::string current = mapping.order, kept = current;
      double current_score = score(current), kept_score = current_score;
      for (int kicks = 6;;) {
        bool improved = true;
        while (improved) {
          improved = false;
          for (size_t u = 0; u < current.size(); ++u) {
            for (size_t length = 1; length <= 8 && u + length <= current.size(); ++length) {
              for (char letter : model.letters()) {
                std::string o = current;
                std::fill(o.begin() + static_cast<std::ptrdiff_t>(u), o.begin() + static_cast<std::ptrdiff_t>(u + length), letter);
                if (o == current) continue;
                const double s = score(o);
                if (s < current_score) {
                  current = std::move(o);
                  current_score = s;
                  improved = true;
                }
              }
            }
          }
        }
        if (current_score < kept_score) {
          kept = current;
          kept_score = current_score;
        }
        if (kicks-- == 0) break;
        current = kept;
        for (int k = 0; k < 8; ++k) {
          const size_t u = random() % current.size();
          current[u] = model.letters()[random() % processors];
        }
        current_score = score(current);
      }
      const Ratios b = bounds(kept);
      std::cout << "\nsearch from " << label << ": bound " << fmt(b.fps) << " throughput, " << fmt(b.latency)
                << " lower latency (max target / bound " << kept_score << ")";
      if (kept_score < best) {
        best = kept_score;
        best_order = kept;
      }
    }
    const Ratios b = bounds(best_order);
    std::cout << "\n\nbest bound found: " << fmt(b.fps) << " throughput, " << fmt(b.latency) << " lower latency: "
              << (best <= 1 ? "the target is within the bound" : "the target is beyond it") << "\n--order=" << best_order
              << "\n\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_modulo_schedule", [&] { return run(argc, argv); });
}
