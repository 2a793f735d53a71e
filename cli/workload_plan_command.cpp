#include "cli/workload_plan_command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>

#include "cli/workload_verify.h"
#include "core/error.h"
#include "core/workload.h"
#include "planner/workload_planner.h"
#include "planner/workload_profile.h"

namespace co_up::cli {
namespace {

namespace fs = std::filesystem;

std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}

std::string padded(const std::string& s, size_t width) { return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' '); }

// Every order must fit its network and name processors the plan knows; a given order is kept as
// the user's but the planner chooses its own (the file's orders are not constraints).
void check_given_orders(const Workload& spec, const planner::WorkloadProblem& problem) {
  for (size_t i = 0; i < spec.networks.size(); ++i) {
    const WorkloadNetwork& n = spec.networks[i];
    if (n.order.empty()) continue;
    const uint32_t layers = problem.networks[i].layers();
    if (n.order.size() != layers) {
      throw InputError("workload network '" + n.name + "': order '" + n.order + "' has " + std::to_string(n.order.size()) +
                       " letters for " + std::to_string(layers) + " layers; give one letter per layer");
    }
    const size_t bad = n.order.find_first_not_of(problem.letters);
    if (bad != std::string::npos) {
      throw InputError("workload network '" + n.name + "': order letter '" + std::string(1, n.order[bad]) +
                       "' is not a processor of the profile (" + problem.letters + ")");
    }
  }
}

// The user's workload with the plan's orders, run in pipeline mode with the plan's request order
// ("plan": one cycle, the runtime repeats it). The networks stay listed as the user listed them.
// Each network's batch is the problem's (workload_problem chooses it before planning).
Workload runnable_workload(const Workload& spec, const planner::WorkloadPlan& plan,
                           const std::vector<uint32_t>& batches) {
  Workload out = spec;
  out.mode = Mode::kPipeline;
  out.policy = GroupPolicy::kPlan;
  out.plan.clear();
  for (size_t i : plan.sequence) out.plan.push_back(spec.networks[i].name);
  for (size_t i = 0; i < out.networks.size(); ++i) {
    out.networks[i].order = plan.orders[i];
    out.networks[i].replicas = i < plan.replicas.size() ? plan.replicas[i] : std::vector<std::string>{};
    if (i < batches.size()) out.networks[i].batch = batches[i];
  }
  // Affinity (a processor keeps to the network it ran last) only where every network runs whole
  // on one processor: a switch to another network costs the next frame its warm caches, but in
  // a plan with a pipelined network, a processor keeping to its whole networks leaves that
  // network's other stage waiting (measured: 1.19x the one-core baseline with affinity, 1.84x
  // without, on the bench's four CNNs with ResNet-50 pipelined over B and L).
  out.affinity = std::all_of(out.networks.begin(), out.networks.end(), [](const WorkloadNetwork& n) {
    auto whole = [](const std::string& order) { return order.find_first_not_of(order.front()) == std::string::npos; };
    return !n.order.empty() && whole(n.order) &&
           std::all_of(n.replicas.begin(), n.replicas.end(), [&](const std::string& r) { return !r.empty() && whole(r); });
  });
  return out;
}

// `spec` as written into `dir`: its model and input paths relative to `dir` (read_workload reads
// a file's relative paths against the file's directory), so a folder holding the plans and the
// models together can move. A path the short form left relative to the working directory is
// made absolute first. A model that shares no directory with `dir` below the root (/usr/share
// against /home/...) stays absolute: the relative form would only climb to the root and back.
Workload relative_to(Workload spec, const fs::path& dir) {
  const fs::path base = fs::absolute(dir).lexically_normal();
  const auto relative = [&](std::string& path) {
    if (path.empty()) return;
    const fs::path absolute = fs::absolute(path).lexically_normal();
    path = absolute.string();
    const auto top = [](const fs::path& p) { return std::next(p.begin()); };  // after the root
    if (std::distance(absolute.begin(), absolute.end()) < 2 || std::distance(base.begin(), base.end()) < 2 ||
        *top(absolute) != *top(base)) {
      return;
    }
    const fs::path r = absolute.lexically_relative(base);
    if (!r.empty()) path = r.string();
  };
  for (WorkloadNetwork& n : spec.networks) {
    relative(n.model);
    relative(n.input);
  }
  return spec;
}

// Creates `path` and writes `text`; an existing file (created since the check) is left alone.
void write_new_file(const fs::path& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wx");  // "x": O_EXCL, never replaces
  if (f == nullptr) {
    if (errno == EEXIST) {
      throw InputError("--out: '" + path.string() + "' exists; co_up plan does not replace workload files");
    }
    throw RuntimeError("cannot create '" + path.string() + "': " + std::strerror(errno));
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) throw RuntimeError("cannot write '" + path.string() + "': " + std::strerror(errno));
}

// Planning simulates at most this many requests per network (each local-search step simulates
// once); the balance between processors, not the run's length, decides the plans.
constexpr uint64_t kPlanningCycles = 48;

// The frames per network when the simulator can model the run as the runtime makes it: every
// network the same frame count, as fast as possible, unbatched (one request of each per cycle).
std::optional<uint64_t> whole_run_frames(const Workload& spec) {
  for (const WorkloadNetwork& n : spec.networks) {
    if (n.frames != spec.networks.front().frames || n.rate || n.batch != 1) return std::nullopt;
  }
  return spec.networks.front().frames;
}

// Requests per second over the whole run (all arrived at the start; fill and drain included),
// which is what --verify measures, rather than the steady state the planners compare.
double predict_whole_run(const planner::WorkloadProblem& problem, const planner::WorkloadPlan& plan, uint64_t frames) {
  // The plan's cuts refer to its own pipeline order of the processors.
  const planner::WorkloadProblem staged = planner::reorder_stages(problem, plan.stage_letters);
  planner::SimulationSettings settings = staged.simulation;
  settings.whole_run = true;
  settings.cycles = static_cast<int>(std::min<uint64_t>(frames, 1u << 20));
  return planner::simulate(staged.networks, plan.cuts, plan.sequence, staged.interference, settings,
                           plan.replica_stages)
      .throughput_fps;
}

}  // namespace

int run_workload_plan_command(const Options& o) {
  if (o.profile_file.empty()) {
    throw InputError("co_up plan --workload needs --profile=FILE (a workload profile written by co_up profile --workload)");
  }
  if (!o.graph.empty() || !o.model.empty()) {
    throw InputError("co_up plan --workload takes its networks from the workload file; drop --graph/--model");
  }
  const Workload spec = read_workload(o.workload, Orders::kOptional);
  const planner::WorkloadProfile profile = planner::read_workload_profile(o.profile_file);
  std::vector<std::string> notes;
  planner::WorkloadProblem problem = planner::workload_problem(profile, spec, notes);
  check_given_orders(spec, problem);
  // Equal frame counts as fast as possible end when the processor with the most work is done:
  // every planner is scored by that whole run (its makespan), not by a steady state in which a
  // network on a less loaded processor would run ahead and its frames count as throughput.
  if (const std::optional<uint64_t> frames = whole_run_frames(spec)) {
    problem.simulation.whole_run = true;
    problem.simulation.cycles = static_cast<int>(std::min<uint64_t>(*frames, kPlanningCycles));
    notes.push_back("every network " + std::to_string(*frames) +
                    " requests as fast as possible: plans are scored by the simulated whole run (all requests at "
                    "the start to the last completion) over " + std::to_string(problem.simulation.cycles) +
                    " requests each");
  }

  // Where the files go, checked before planning: nothing is written when one cannot be.
  std::vector<fs::path> files;
  if (!o.out_dir.empty()) {
    const fs::path dir(o.out_dir);
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
      throw InputError("--out='" + o.out_dir + "' is not a directory");
    }
    for (const planner::WorkloadPlannerRegistration& r : planner::workload_planner_registry()) {
      const fs::path file = dir / (std::string(r.name) + ".json");
      if (fs::symlink_status(file, ec).type() != fs::file_type::not_found) {
        throw InputError("--out: '" + file.string() +
                         "' exists; co_up plan does not replace workload files (choose another --out or remove it)");
      }
      files.push_back(file);
    }
  }

  std::vector<planner::WorkloadPlan> plans;
  for (const planner::WorkloadPlannerRegistration& r : planner::workload_planner_registry()) {
    plans.push_back(r.create()->plan(problem));
  }

  std::ostream& out = std::cout;
  out << "workload plan for " << o.workload << " (" << spec.networks.size() << " networks) from " << o.profile_file
      << " (platform '" << profile.platform_name << "', processors " << problem.letters << ")\n";
  if (profile.contention) {
    const planner::HeldOutError& e = profile.held_out_error;
    out << "contention: ridge regression per processor pair from " << profile.coruns.size() / 2 << " co-runs ("
        << profile.held_out_coruns.size() << " held out); held-out error over " << e.samples << " predictions: mean "
        << format("%.1f", e.mean_abs_points) << " points, max " << format("%.1f", e.max_abs_points)
        << " points of slowdown (" << format("%.1f", e.mean_abs_time_pct) << " % of co-run time); each pair's mean"
        << " slowdown instead: mean " << format("%.1f", profile.held_out_pair_mean.mean_abs_points) << " points\n";
  }
  out << "predicted by the pipeline simulator (one thread per processor, oldest request first, slowdowns from the "
         "profile's co-runs: the regression, or each processor pair's mean where that erred less on the held-out "
         "co-runs); aggregate = frames/s of all networks together, requests in the listed order\n\n";
  double best_baseline = 0;
  std::string best_baseline_name;
  for (size_t p = 0; p < plans.size(); ++p) {
    const planner::WorkloadPlan& plan = plans[p];
    out << padded(plan.planner, 15) << format("%9.2f fps aggregate", plan.predicted.throughput_fps)
        << format("  %8.2f fps per network", plan.predicted.throughput_fps / static_cast<double>(spec.networks.size()))
        << format("  processors idle %4.1f %%", std::max(0.0, 100 * plan.predicted.bubble_fraction)) << "\n";
    out << "    " << plan.note << "\n";
    std::string sequence;
    for (size_t i : plan.sequence) sequence += (sequence.empty() ? "" : " ") + spec.networks[i].name;
    out << "    request order: " << sequence << "\n";
    for (size_t i : plan.sequence) {
      out << "    " << padded(spec.networks[i].name, 16) << plan.orders[i];
      if (i < plan.replicas.size()) {
        for (const std::string& r : plan.replicas[i]) out << " | " << r;
      }
      out << "\n";
    }
    if (!files.empty()) out << "    written: " << files[p].string() << "\n";
    if (plan.planner == "alone-best" || plan.planner == "band-greedy") {
      if (plan.predicted.throughput_fps > best_baseline) {
        best_baseline = plan.predicted.throughput_fps;
        best_baseline_name = plan.planner;
      }
    }
  }
  for (const planner::WorkloadPlan& plan : plans) {
    if (plan.planner == "hetero2pipe" && best_baseline > 0) {
      out << "\nhetero2pipe / best baseline (" << best_baseline_name
          << "): " << format("%.3f", plan.predicted.throughput_fps / best_baseline) << "x predicted\n";
    }
  }
  if (!notes.empty()) out << "\nassumptions:\n";
  for (const std::string& n : notes) out << "  " << n << "\n";

  std::vector<PlannedWorkload> planned;
  if (!files.empty()) fs::create_directories(o.out_dir);
  const std::optional<uint64_t> run_frames = whole_run_frames(spec);
  for (size_t p = 0; p < plans.size(); ++p) {
    PlannedWorkload w{plans[p].planner, runnable_workload(spec, plans[p], problem.batches),
                      files.empty() ? fs::path() : files[p], plans[p].predicted.throughput_fps};
    if (run_frames) {
      w.predicted_fps = predict_whole_run(problem, plans[p], *run_frames);
      w.whole_run = true;
    }
    if (!files.empty()) write_new_file(files[p], workload_json(relative_to(w.spec, o.out_dir)));
    planned.push_back(std::move(w));
  }
  out.flush();
  if (o.verify) return verify_workload_plans(o, planned, out);
  return 0;
}

}  // namespace co_up::cli
