// Planning several networks at once (Hetero2Pipe): the planners side by side.
//
//   co_up_bench_workload_plan --workload=W.json --profile=P.json
//       each registered planner on a measured workload profile: predicted aggregate throughput,
//       against the one-core baseline (every network on B, one after another) and the best
//       baseline planner, and planning time;
//   co_up_bench_workload_plan --synthetic[=N]
//       N random small workloads (2-3 networks, 4-6 layers, 2-3 processors, random contention):
//       each planner's predicted throughput as a fraction of the best partition found by trying
//       every partition of every network (same request order, same simulator) — the paper's
//       Fig. 8(a) comparison with exhaustive search.
// Every number is a prediction of planner/hetero2pipe.h's simulator; measured throughput needs
// the multi-network runtime (co_up --workload).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "core/workload.h"
#include "planner/workload_planner.h"
#include "planner/workload_profile.h"

namespace {

using namespace co_up::planner;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int measured_profile(const std::string& workload, const std::string& profile_path) {
  const co_up::Workload spec = co_up::read_workload(workload, co_up::Orders::kOptional);
  const WorkloadProfile profile = read_workload_profile(profile_path);
  std::vector<std::string> notes;
  const WorkloadProblem problem = workload_problem(profile, spec, notes);
  const size_t b = problem.letters.find('B');
  double one_core = 0;
  if (b != std::string::npos) {
    std::vector<StageCuts> cuts;
    for (const NetworkCosts& c : problem.networks) cuts.push_back(single_stage_cuts(c.layers(), c.stages(), b));
    std::vector<size_t> seq(problem.networks.size());
    std::iota(seq.begin(), seq.end(), size_t{0});
    one_core = simulate(problem.networks, cuts, seq, problem.interference, problem.simulation).throughput_fps;
  }
  std::printf("workload %s, profile %s, processors %s, %zu networks\n", workload.c_str(), profile_path.c_str(),
              problem.letters.c_str(), problem.networks.size());
  if (profile.contention) {
    std::printf("slowdown regression held-out error: %zu predictions, mean %.1f points, max %.1f points, %.1f %% of co-run time\n",
                profile.held_out_error.samples, profile.held_out_error.mean_abs_points,
                profile.held_out_error.max_abs_points, profile.held_out_error.mean_abs_time_pct);
  }
  if (!profile.coruns.empty()) {
    // Recomputed from the stored co-runs: the regression refitted to those not held out, and each
    // processor pair's mean slowdown as the alternative it must beat.
    std::vector<CoRunSample> fitted, held;
    for (const CoRunSample& c : profile.coruns) {
      const bool out = std::find(profile.held_out_coruns.begin(), profile.held_out_coruns.end(), c.corun) !=
                       profile.held_out_coruns.end();
      (out ? held : fitted).push_back(c);
    }
    if (!fitted.empty() && !held.empty()) {
      const HeldOutError reg = held_out_error(ContentionModel::fit(fitted), held);
      const HeldOutError mean = held_out_error_of_pair_mean(fitted, held);
      std::printf("held out (%zu predictions): regression mean %.1f / max %.1f points (%.1f %% of co-run time); "
                  "pair mean %.1f / %.1f points (%.1f %%)\n",
                  reg.samples, reg.mean_abs_points, reg.max_abs_points, reg.mean_abs_time_pct, mean.mean_abs_points,
                  mean.max_abs_points, mean.mean_abs_time_pct);
    }
  }
  std::printf("one-core baseline (all on B, one after another): %.2f fps predicted\n", one_core);
  std::printf("%-15s %12s %10s %12s %10s\n", "planner", "fps (pred.)", "x one-core", "x best base", "plan ms");
  std::vector<std::pair<std::string, double>> rows;
  std::vector<double> ms;
  double best_base = 0;
  for (const WorkloadPlannerRegistration& r : workload_planner_registry()) {
    const auto t0 = std::chrono::steady_clock::now();
    const WorkloadPlan plan = r.create()->plan(problem);
    ms.push_back(ms_since(t0));
    rows.push_back({plan.planner, plan.predicted.throughput_fps});
    if (plan.planner == "alone-best" || plan.planner == "band-greedy") best_base = std::max(best_base, plan.predicted.throughput_fps);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf("%-15s %12.2f %10.2f %12.3f %10.1f\n", rows[i].first.c_str(), rows[i].second,
                one_core > 0 ? rows[i].second / one_core : 0.0, rows[i].second / best_base, ms[i]);
  }
  for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
  return 0;
}

NetworkCosts random_network(std::mt19937& rng, const std::string& name, uint32_t layers, size_t stages) {
  std::uniform_real_distribution<double> t(100, 3000), x(0, 100);
  NetworkCosts c;
  c.name = name;
  c.layer_us.assign(stages, std::vector<double>(layers));
  c.send_us.assign(stages, std::vector<double>(layers - 1));
  c.receive_us.assign(stages, std::vector<double>(layers - 1));
  c.input_us.assign(stages, 0);
  for (size_t k = 0; k < stages; ++k) {
    const double speed = std::uniform_real_distribution<double>(0.6, 2.5)(rng);
    for (double& v : c.layer_us[k]) v = t(rng) * speed;
    for (double& v : c.send_us[k]) v = x(rng);
    for (double& v : c.receive_us[k]) v = x(rng);
  }
  return c;
}

std::vector<StageCuts> all_partitions(uint32_t layers, size_t stages) {
  std::vector<StageCuts> out;
  StageCuts cuts(stages + 1, 0);
  cuts[stages] = layers;
  std::function<void(size_t)> rec = [&](size_t k) {
    if (k == stages) {
      out.push_back(cuts);
      return;
    }
    for (uint32_t c = cuts[k - 1]; c <= layers; ++c) {
      cuts[k] = c;
      rec(k + 1);
    }
  };
  if (stages == 1) return {cuts};
  rec(1);
  return out;
}

int synthetic(int problems) {
  std::printf("%d random workloads: predicted throughput / best of every partition (same request order)\n", problems);
  std::vector<std::vector<double>> ratio(workload_planner_registry().size());
  for (int s = 1; s <= problems; ++s) {
    std::mt19937 rng(static_cast<uint32_t>(s));
    const size_t networks = 2 + static_cast<size_t>(s % 2), stages = 2 + static_cast<size_t>((s / 2) % 2);
    WorkloadProblem p;
    p.letters = std::string("BLG").substr(0, stages);
    for (size_t i = 0; i < networks; ++i) {
      std::string name = "n";
      name += std::to_string(i);  // (not "n" + to_string: GCC 12 warns falsely, -Wrestrict)
      p.networks.push_back(random_network(rng, name, 4 + static_cast<uint32_t>(rng() % 3), stages));
    }
    p.interference = Interference(networks, stages);
    for (size_t a = 0; a < networks; ++a)
      for (size_t ka = 0; ka < stages; ++ka)
        for (size_t b = 0; b < networks; ++b)
          for (size_t kb = 0; kb < stages; ++kb)
            if (ka != kb) p.interference.set(a, ka, b, kb, std::uniform_real_distribution<double>(0, 0.5)(rng));
    // Exhaustive over every partition of every network, for each pipeline order of the processors.
    double best = 0;
    std::string letters = p.letters;
    std::sort(letters.begin(), letters.end());
    do {
      const WorkloadProblem q = reorder_stages(p, letters);
      std::vector<std::vector<StageCuts>> options;
      for (const NetworkCosts& c : q.networks) options.push_back(all_partitions(c.layers(), stages));
      std::vector<size_t> seq(networks);
      std::iota(seq.begin(), seq.end(), size_t{0});
      std::vector<size_t> pick(networks, 0);
      while (true) {
        std::vector<StageCuts> cuts;
        for (size_t i = 0; i < networks; ++i) cuts.push_back(options[i][pick[i]]);
        best = std::max(best, simulate(q.networks, cuts, seq, q.interference, q.simulation).throughput_fps);
        size_t i = 0;
        while (i < networks && ++pick[i] == options[i].size()) pick[i++] = 0;
        if (i == networks) break;
      }
    } while (std::next_permutation(letters.begin(), letters.end()));
    size_t r = 0;
    for (const WorkloadPlannerRegistration& reg : workload_planner_registry()) {
      ratio[r++].push_back(reg.create()->plan(p).predicted.throughput_fps / best);
    }
  }
  std::printf("%-15s %8s %8s %8s\n", "planner", "median", "min", "max");
  size_t r = 0;
  for (const WorkloadPlannerRegistration& reg : workload_planner_registry()) {
    std::vector<double>& v = ratio[r++];
    std::sort(v.begin(), v.end());
    std::printf("%-15s %8.3f %8.3f %8.3f\n", std::string(reg.name).c_str(), v[v.size() / 2], v.front(), v.back());
  }
  return 0;
}

int run_workload_plan(int argc, char** argv) {
  constexpr const char* kUsage = "usage: co_up_bench_workload_plan --workload=W.json --profile=P.json | --synthetic[=N]";
  std::string workload, profile;
  int problems = 0;
  for (const co_up::bench::BenchOption& a : co_up::bench::read_options(argc, argv)) {
    if (a.is("workload")) workload = a.string();
    else if (a.is("profile")) profile = a.string();
    else if (a.is("synthetic")) problems = a.has_value ? static_cast<int>(a.integer(1, 100000)) : 20;
    else if (a.is("help")) {
      std::cout << kUsage << "\n";
      return 0;
    } else {
      a.unknown();
    }
  }
  if (problems > 0) return synthetic(problems);
  if (workload.empty() || profile.empty()) {
    throw co_up::InputError(std::string("give --workload and --profile, or --synthetic; ") + kUsage);
  }
  return measured_profile(workload, profile);
}

}  // namespace

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_workload_plan", [&] { return run_workload_plan(argc, argv); });
}
