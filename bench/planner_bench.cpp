// Planning time: how long `co_up plan` takes to search a synthetic profile of a large
// network — by default 50 layers on 4 processors (B, L, G, N) with 8 DVFS levels per domain and
// power data — per objective, and per search. Prints a markdown table of medians.
//
//   co_up_bench_planning [--layers=50] [--processors=4] [--levels=8] [--reps=5] [--seed=1] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "planner/search.h"
#include "planner/synthetic_profile.h"

namespace {

using namespace co_up::planner;
using Clock = std::chrono::steady_clock;

double median_ms(int reps, const std::function<void()>& work) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int run_planning(int argc, char** argv) {
  bool quick = false;
  for (const co_up::bench::BenchOption& a : co_up::bench::read_options(argc, argv)) quick = quick || a.is("quick");
  SyntheticSpec spec;
  spec.layers = quick ? 20 : 50;
  spec.processors = 4;
  spec.levels = quick ? 4 : 8;
  spec.seed = 1;
  spec.power = true;
  int reps = quick ? 1 : 5;
  for (const co_up::bench::BenchOption& a : co_up::bench::read_options(argc, argv)) {
    if (a.is("layers")) spec.layers = static_cast<uint32_t>(a.integer(2, 100000));
    else if (a.is("processors")) spec.processors = static_cast<uint32_t>(a.integer(1, 4));
    else if (a.is("levels")) spec.levels = static_cast<uint32_t>(a.integer(1, 1000));
    else if (a.is("seed")) spec.seed = static_cast<uint64_t>(a.integer(0, INT64_MAX));
    else if (a.is("reps")) reps = static_cast<int>(a.integer(1, 100000));
    else if (a.is("help")) {
      std::cout << "usage: co_up_bench_planning [--layers>=2] [--processors=1..4] [--levels=N] [--seed=N] [--reps>=1] [--quick]\n";
      return 0;
    } else if (!a.is("quick")) {
      a.unknown();
    }
  }
  const CostModel model(make_synthetic_profile(spec));

  std::printf("planning a synthetic profile: %u layers, %u processors (%s), %u DVFS levels per domain "
              "(%zu domains), power data; median of %d runs\n\n",
              spec.layers, spec.processors, model.letters().c_str(), spec.levels, model.domains().size(), reps);
  std::printf("| step | median ms |\n|---|---:|\n");
  const auto row = [&](const char* name, const std::function<void()>& work) {
    std::printf("| %s | %.2f |\n", name, median_ms(reps, work));
    std::fflush(stdout);
  };
  Candidate dp;
  row("pipeline DP (exact, contiguous)", [&] { dp = pipeline_dp(model); });
  row("pipeline DP per processor subset", [&] { pipeline_dp_per_subset(model); });
  row("shortest path (switch, exact)", [&] { shortest_path_latency(model); });
  row("refinement (non-contiguous)", [&] { refine_pipeline(model, dp); });
  row("NSGA-II (96 x 250, 3 objectives)", [&] {
    nsga2(model, {dp.mapping}, Nsga2Options{});
  });
  row("HEFT + single processor", [&] {
    heft(model, Mode::kPipeline);
    best_single_processor(model, Mode::kPipeline);
  });
  double worst = 0;
  for (const auto& [name, objective] : {std::pair{"plan --objective=throughput", Objective::kThroughput},
                                        std::pair{"plan --objective=latency", Objective::kLatency},
                                        std::pair{"plan --objective=energy", Objective::kEnergy},
                                        std::pair{"plan --objective=pareto", Objective::kPareto}}) {
    const double ms = median_ms(reps, [&] { plan(model, objective, 5, 1); });
    worst = std::max(worst, ms);
    std::printf("| %s | %.2f |\n", name, ms);
    std::fflush(stdout);
  }
  std::printf("\nslowest objective: %.2f s (target: under 10 s)\n", worst / 1000);

  // What each search finds on this profile (predicted, fastest levels unless NSGA-II chose).
  std::printf("\n| search | predicted fps | latency ms | order |\n|---|---:|---:|---|\n");
  const auto found = [](const char* name, const Candidate& c) {
    std::printf("| %s | %.1f | %.3f | %s |\n", name, c.prediction.throughput_fps, c.prediction.latency_ms,
                c.mapping.order.c_str());
  };
  found("best single processor", best_single_processor(model, Mode::kPipeline));
  found("HEFT (one frame)", heft(model, Mode::kPipeline));
  found("pipeline DP (contiguous)", dp);
  found("DP + refinement", refine_pipeline(model, dp));
  found("plan --objective=throughput", plan(model, Objective::kThroughput, 1, 1).ranked.front());
  return worst < 10000 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_planning", [&] { return run_planning(argc, argv); });
}
