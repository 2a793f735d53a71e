#include "cli/plan_command.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <map>
#include <set>
#include <sstream>

#include "cli/stage_plan_command.h"
#include "cli/measured_tuning.h"
#include "cli/verify_mappings.h"
#include "cli/workload_plan_command.h"
#include "core/error.h"
#include "core/message_text.h"
#include "core/network.h"
#include "graph/parallel_regions.h"
#include "graph/zoo/zoo.h"
#include "planner/dag_cost_model.h"
#include "planner/hybrid_plan.h"
#include "planner/cost_model.h"
#include "planner/layer_profile.h"
#include "planner/search.h"
#include "planner/thread_times.h"

namespace co_up::cli {
namespace {

planner::Objective parse_objective(const std::string& text) {
  if (text == "throughput" || text.empty()) return planner::Objective::kThroughput;
  if (text == "latency") return planner::Objective::kLatency;
  if (text == "energy") return planner::Objective::kEnergy;
  if (text == "pareto") return planner::Objective::kPareto;
  throw InputError("--objective='" + text + "' must be throughput, latency, energy or pareto");
}

std::string numbers(const planner::Prediction& p) {
  std::string s = format_number("%9.2f fps", p.throughput_fps) + format_number("  %9.3f ms", p.latency_ms);
  s += p.has_energy() ? format_number("  %9.3f mJ/frame", p.energy_mj_per_frame) : std::string("  energy n/a");
  std::string bottleneck;
  double worst = -1;
  for (const planner::ResourceTime& r : p.resources) {
    if (r.busy_us > worst) {
      worst = r.busy_us;
      bottleneck = r.processors;
    }
  }
  return s + "  (busiest: " + bottleneck + format_number(" %.0f us/frame)", worst);
}

void print_candidate(std::ostream& out, const planner::CostModel& model, const std::string& label,
                     const planner::Candidate& c) {
  out << label << numbers(c.prediction) << "  [" << c.source << "]\n"
      << "      " << planner::command_line(model, c.mapping) << "\n";
}

// --image-size must be the profile's: a plan is for the input size that was measured.
void check_image_size(const Options& o, const planner::LayerProfile& profile) {
  if (o.image_size == 0) return;
  const planner::ProfileNetwork& net = profile.network;
  const graph::ZooEntry* entry = graph::find_zoo_entry(net.graph);
  const int64_t profiled = net.image_size > 0 ? net.image_size : entry != nullptr ? entry->default_image_size : 0;
  if (o.image_size == profiled) return;
  const std::string measured = net.image_size > 0 ? "--image-size=" + std::to_string(net.image_size)
                               : profiled > 0 ? "the network's own input size (" + std::to_string(profiled) + ")"
                                              : "the model's own input shape";
  throw InputError("--image-size=" + std::to_string(o.image_size) + " differs from the profile, which was measured at " +
                   measured + "; plan without --image-size, or profile again with --image-size=" +
                   std::to_string(o.image_size));
}

// With --graph/--model: the profile must be of that network (name, units, layer count).
void check_network(const Options& o, const planner::LayerProfile& profile) {
  if (o.graph.empty() && o.model.empty()) return;
  if (!o.graph.empty() && !o.model.empty()) throw InputError("--graph and --model both given; use one");
  const std::string units = o.units != "layers" ? o.units : "";  // "layers" is also the default
  planner::check_profile_matches(profile, o.graph, o.model, units, 0);
  if (!o.split.empty() && o.split != profile.network.split) {
    throw InputError("the profile was made with " +
                     (profile.network.split.empty() ? std::string("no --split") : "--split=" + profile.network.split) +
                     " but --split=" + o.split + " was asked; re-profile with the same --split");
  }
  NetworkSpec spec{o.graph, profile.network.units, profile.network.image_size, o.seed, o.data};
  spec.split = profile.network.split;
  spec.model = o.model;
  spec.input_shape = o.input_shape;
  const graph::Graph g = build_network(spec);
  planner::check_profile_matches(profile, "", "", "", static_cast<uint32_t>(g.layer_count()));
  std::vector<std::string> unit_ops;
  for (const graph::LayerSummary& s : graph::summarize_layers(g)) unit_ops.push_back(s.ops);
  planner::check_profile_unit_ops(profile, unit_ops);
}

double parse_limit(const std::string& option, const std::string& text) {
  if (text.empty()) return 0;
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value > 0) || !std::isfinite(value)) {
    throw InputError("--" + option + "='" + text + "' must be a positive number");
  }
  return value;
}

// The profiled network's layer-unit DAG when it can be built here (a zoo graph, or a model file
// that exists); else nothing.
std::optional<graph::UnitDag> network_dag(const Options& o, const planner::LayerProfile& profile) {
  const planner::ProfileNetwork& net = profile.network;
  const std::string model = !o.model.empty() ? o.model : net.model;
  if (net.graph.empty() && (model.empty() || !std::filesystem::exists(model))) return std::nullopt;
  if (!net.graph.empty() && graph::find_zoo_entry(net.graph) == nullptr) return std::nullopt;  // synthetic
  NetworkSpec spec{net.graph, net.units, net.image_size, o.seed, o.data};
  spec.split = net.split;
  if (net.graph.empty()) {
    spec.model = model;
    spec.image_size = 0;
    spec.input_shape = o.input_shape;
  }
  const graph::Graph g = build_network(spec);
  if (g.layer_count() != net.layer_count) return std::nullopt;
  return graph::unit_dag(g);
}

// network_dag when the network has parallel regions (the hybrid search); else nothing (the chain
// planner).
std::optional<graph::UnitDag> region_dag(const std::optional<graph::UnitDag>& dag) {
  if (!dag || graph::find_unit_regions(*dag).empty()) return std::nullopt;
  return dag;
}

// --tune, --tune-candidates, --tune-target, checked before any planning.
struct TuneRequest {
  double seconds = 0;  // 0: no tuning
  size_t max_candidates = std::numeric_limits<size_t>::max();
  double target_fps = 0, target_ms = 0;
  double target_fps_gain = 0, target_latency_gain = 0;  // THROUGHPUTx,LATENCYx
};

TuneRequest parse_tune(const Options& o, planner::Objective objective) {
  TuneRequest t;
  if (o.tune.empty()) {
    if (!o.tune_candidates.empty() || !o.tune_target.empty()) {
      throw InputError(std::string(o.tune_candidates.empty() ? "--tune-target" : "--tune-candidates") +
                       " needs --tune=SECONDS (the time the measured search may take)");
    }
    return t;
  }
  t.seconds = parse_limit("tune", o.tune);
  if (objective == planner::Objective::kEnergy) {
    throw InputError("--tune measures throughput and latency, not energy; use it with --objective=latency, "
                     "throughput or pareto");
  }
  if (!o.tune_candidates.empty()) {
    size_t used = 0;
    long long n = -1;
    try {
      n = std::stoll(o.tune_candidates, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != o.tune_candidates.size() || n < 0) {
      throw InputError("--tune-candidates='" + o.tune_candidates + "' must be a whole number >= 0 (mappings measured)");
    }
    t.max_candidates = static_cast<size_t>(n);
  }
  if (!o.tune_target.empty()) {
    if (objective != planner::Objective::kPareto) {
      throw InputError("--tune-target is a point of the Pareto front; use it with --objective=pareto");
    }
    const std::string& text = o.tune_target;
    const size_t comma = text.find(',');
    const std::string fps = text.substr(0, comma), ms = comma == std::string::npos ? "" : text.substr(comma + 1);
    const auto relative = [](const std::string& part) { return !part.empty() && part.back() == 'x'; };
    if (comma == std::string::npos || fps.empty() || ms.empty() || relative(fps) != relative(ms)) {
      throw InputError("--tune-target='" + text + "' must be FPS,MS (e.g. --tune-target=120,9.5) or gains over the "
                       "best single processor THROUGHPUTx,LATENCYx (e.g. --tune-target=1.8x,1.3x)");
    }
    // Each part a positive number (before its x); the message names the part and the whole.
    const auto part = [&](const std::string& p, bool gain) {
      try {
        return parse_limit("tune-target", gain ? p.substr(0, p.size() - 1) : p);
      } catch (const InputError&) {
        throw InputError("--tune-target='" + text + "': '" + p + "' must be a positive number" +
                         (gain ? " followed by x (1.8x: 1.8 times better than the best single processor)" : ""));
      }
    };
    if (relative(fps)) {
      t.target_fps_gain = part(fps, true);
      t.target_latency_gain = part(ms, true);
    } else {
      t.target_fps = part(fps, false);
      t.target_ms = part(ms, false);
    }
  }
  return t;
}

std::map<char, int> plan_thread_counts(const Options& o) {
  std::map<char, int> threads;
  if (o.threads) threads['B'] = *o.threads;
  if (o.threads_little) threads['L'] = *o.threads_little;
  return threads;
}

// Predictions of the runs --verify and --tune measure: --n frames admitted at once (a short run
// measures more than the steady throughput: its first frame ends late). Capped: the simulation
// keeps every frame.
planner::DagCostOptions measured_run_options(const Options& o) {
  constexpr int64_t kMostSimulatedFrames = 4096;
  planner::DagCostOptions measured_run;
  measured_run.pipeline_frames = static_cast<uint32_t>(std::clamp<int64_t>(o.frames, 2, kMostSimulatedFrames));
  return measured_run;
}

}  // namespace

int run_plan_command(const Options& o, StopSignal& stop) {
  if (!o.tune.empty() && (!o.workload.empty() || !o.stages.empty() || !o.stage_plan.empty())) {
    throw InputError("--tune measures one network's mappings; it does not apply to --workload or stage plans");
  }
  if (!o.workload.empty()) return run_workload_plan_command(o);
  if (!o.stages.empty() || !o.stage_plan.empty()) return run_stage_plan_command(o, stop);
  if (o.profile_file.empty()) {
    throw InputError("co_up plan needs --profile=FILE (a layer profile written by co_up profile)");
  }
  const planner::Objective objective = parse_objective(o.objective);
  const TuneRequest tune = parse_tune(o, objective);
  // --threads / --threads_little: plan with those clusters' times at that intra-op thread count.
  const planner::LayerProfile profile =
      planner::with_thread_counts(planner::read_layer_profile(o.profile_file), plan_thread_counts(o));
  check_image_size(o, profile);
  check_network(o, profile);
  const planner::CostModel model(profile);
  planner::HybridPlanOptions hybrid;
  hybrid.seed = o.seed;
  hybrid.min_fps = parse_limit("min-fps", o.min_fps);
  hybrid.max_latency_ms = parse_limit("max-latency-ms", o.max_latency_ms);
  const std::optional<graph::UnitDag> whole_dag = network_dag(o, profile);
  const std::optional<graph::UnitDag> dag = region_dag(whole_dag);
  if (tune.seconds > 0 && !whole_dag) {
    throw InputError("--tune needs a network co_up plan can build from the profile (a zoo --graph, or a model "
                     "file that exists) to measure");
  }
  if (!dag && (hybrid.min_fps > 0 || hybrid.max_latency_ms > 0)) {
    throw InputError("--min-fps and --max-latency-ms need a network with parallel regions (see --list-regions) "
                     "that co_up plan can build from the profile");
  }
  std::optional<planner::DagCostModel> dag_model;
  if (dag) dag_model.emplace(model, *dag);  // pipelines in their steady state
  const planner::PlanResult result =
      dag_model ? planner::plan_hybrid(*dag_model, objective, static_cast<size_t>(o.top), hybrid)
                : planner::plan(model, objective, static_cast<size_t>(o.top), o.seed);

  std::ostream& out = std::cout;
  const planner::ProfileNetwork& net = profile.network;
  out << "plan for " << (net.graph.empty() ? "--model=" + net.model : "--graph=" + net.graph) << " ("
      << net.layer_count << " layer units, --units=" << net.units
      << (net.split.empty() ? "" : " --split=" + net.split) << ") from profile " << o.profile_file
      << " (platform '" << profile.platform_name << "', processors " << model.letters() << ")\n";
  const char* what = objective == planner::Objective::kThroughput ? "maximum throughput, pipeline mode"
                     : objective == planner::Objective::kLatency  ? "minimum latency, switch mode"
                     : objective == planner::Objective::kEnergy   ? "minimum energy per frame, pipeline mode"
                                                                  : "Pareto front of throughput, latency"
                                                                    " and energy, pipeline mode";
  if (dag) {
    what = objective == planner::Objective::kThroughput ? "maximum throughput, pipeline mode"
           : objective == planner::Objective::kLatency  ? "minimum latency, switch mode"
           : objective == planner::Objective::kEnergy   ? "minimum energy per frame, pipeline mode"
                                                        : "Pareto front of throughput, latency and energy, "
                                                          "switch, pipeline and overlap mode";
    out << graph::find_unit_regions(*dag).size()
        << " parallel regions: hybrid para/pipe search, DAG cost model (critical path of the "
           "sub-graph DAG)\n";
  }
  for (const auto& [letter, count] : plan_thread_counts(o)) {
    out << "intra-op threads: " << letter << " runs with " << count << " (its layer times at that "
        << "count; add " << (letter == 'B' ? "--threads=" : "--threads_little=") << count
        << " to the commands below)\n";
  }
  out << "objective: " << what << "; predicted by the cost model (measure with the commands, or --verify)\n\n";
  for (size_t i = 0; i < result.ranked.size(); ++i) {
    print_candidate(out, model, format_number("%3.0f. ", static_cast<double>(i + 1)), result.ranked[i]);
  }
  if (!result.preference_note.empty()) out << "note: " << result.preference_note << "\n";
  out << "\nbaselines:\n";
  print_candidate(out, model, "  single processor ", result.single_processor);
  print_candidate(out, model, "  HEFT             ", result.heft);
  if (!model.warnings().empty() || !model.has_energy()) out << "\nassumptions:\n";
  for (const std::string& w : model.warnings()) out << "  " << w << "\n";
  if (!model.has_energy()) out << "  energy n/a: " << model.energy_gap() << "\n";
  out.flush();

  bool any_ran = true;
  if (o.verify) {
    // The ranked mappings, then the baselines; each distinct command line runs once.
    std::vector<planner::Candidate> to_run;
    std::set<std::string> seen;
    for (const planner::Candidate& c : result.ranked) {
      if (seen.insert(planner::command_line(model, c.mapping)).second) to_run.push_back(c);
    }
    for (const planner::Candidate* c : {&result.single_processor, &result.heft}) {
      if (seen.insert(planner::command_line(model, c->mapping)).second) to_run.push_back(*c);
    }
    if (dag) {
      const planner::DagCostModel run_model(model, *dag, measured_run_options(o));
      for (planner::Candidate& c : to_run) c.prediction = run_model.predict_run(c.mapping);
      out << "\npredictions below: of the run measured (" << run_model.options().pipeline_frames
          << " frames admitted at once, pipelines the median of " << planner::DagCostModel::kRunDraws
          << " simulations with the profile's layer-time noise; pipeline and overlap plans above: the steady state)";
    }
    out << "\n";
    const std::vector<VerifiedMapping> verified = verify_mappings(o, model, to_run, out);
    any_ran = std::any_of(verified.begin(), verified.end(), [](const VerifiedMapping& v) { return v.failure.empty(); });
  }
  if (tune.seconds > 0) {
    Options tuning = o;  // runs of at least kTuneFramesPerRun frames, predicted as such
    tuning.frames = std::max<int64_t>(o.frames, kTuneFramesPerRun);
    const planner::DagCostModel run_model(model, *whole_dag, measured_run_options(tuning));
    const std::unique_ptr<MeasuringSetup> setup = measuring_setup(tuning, model, out);
    TuneGoal goal;
    goal.objective = objective;
    goal.target_fps = tune.target_fps;
    goal.target_ms = tune.target_ms;
    goal.target_fps_gain = tune.target_fps_gain;
    goal.target_latency_gain = tune.target_latency_gain;
    TuneSettings settings;
    settings.seconds = tune.seconds;
    settings.max_candidates = tune.max_candidates;
    settings.seed = o.seed;
    // In every batch: the model's best single processor, one frame at a time (what the gains of
    // --tune-target=THROUGHPUTx,LATENCYx are over).
    settings.reference = planner::best_single_processor(model, planner::Mode::kSwitch).mapping;
    out << "\ntune: up to " << format_number("%.0f", tune.seconds) << " s measuring neighbours of the plans above ("
        << std::max(setup->settings.frames, 2) << " frames per run after " << setup->settings.warmup_frames
        << " warm-up, " << settings.reps << " runs each, interleaved with the reference, every unit on "
        << settings.reference->order.front() << " in switch mode, in every batch; predictions of that run), then the "
        << settings.confirm << " best measured " << settings.confirm_reps << " more times each beside the reference\n";
    // A target may lie anywhere on the front, and --top=K prints its throughput end: the tuner
    // starts from those of the whole front (as far as the search keeps one) predicted nearest.
    constexpr size_t kWholeFront = 64;
    std::vector<planner::Candidate> starts = result.ranked;
    if (goal.has_target() && static_cast<size_t>(o.top) < kWholeFront) {
      starts = (dag_model ? planner::plan_hybrid(*dag_model, objective, kWholeFront, hybrid)
                          : planner::plan(model, objective, kWholeFront, o.seed))
                   .ranked;
      out << "tune: the target's start points from the model's whole front (" << starts.size() << " points)\n";
    }
    out.flush();
    const TuneResult tuned = tune_mappings(
        run_model, starts, goal, settings,
        [&](const planner::Mapping& m) { return measure_mapping(*setup, model, m); }, &std::cerr);
    print_tuned(out, model, goal, tuned);
    any_ran = any_ran && (tuned.runs == 0 || !tuned.front.empty());
  }
  return any_ran ? 0 : 1;
}

}  // namespace co_up::cli
