// co_up_bench_para_pipe: the DAG cost model (planner/dag_cost_model.h) against measured runs, and
// the hybrid para/pipe plans (planner/hybrid_plan.h) against one processor.
//
// Input: layer profiles written by `co_up profile` (e.g. --graph=googlenet --units=ops
// --image-size=64 --processors=BL), one per network. Per profile:
//   1. --mappings=M seeded random mappings: one processor, or a contiguous 2-stage split, with
//      each parallel region's branches given random letters with probability 1/2. Each runs in
//      switch and in pipeline mode (its own Executor, 2 warm-up frames, --frames measured, as
//      `co_up plan --verify`): 2M measured runs.
//   2. Fit set / report set: mappings with an even index fit the one free number of the model,
//      the switch-mode wake-up per cross-processor edge (DagCostOptions::switch_edge_us, a grid
//      0..20000 us, 10 us steps to 2 ms then 100 us, minimising the median |latency error|); the odd ones, which the fit never saw,
//      are reported: median |error| of latency (switch, pipeline) and throughput (pipeline),
//      beside the chain cost model's latency error on the same runs. Then the same with a second
//      fitted number, one factor on all the profile's times (for runs under other contention
//      than the profile's).
//      Then pipeline mode's costs (planner/pipeline_cost_fit.h: per sub-graph run, per edge as a
//      delay, both) fitted on the even mappings' pipeline periods, reported on the odd ones with
//      the signed throughput error by sub-graph count, beside the profile's own.
//      --mappings=0 skips 1 and 2: the model then uses the profile's own switch-mode wake-up per
//      edge (LayerProfile::switch_edges, measured by `co_up profile`), as `co_up plan` does.
//      Part 2 also gives, with the profile's own wake-up, every run's error with the co-run
//      slowdown (DagCostOptions::corun_work_factor) off and on: median |error|, signed median.
//   3. Performance: B alone (switch) against the best planned latency (--objective=latency), and
//      --pareto=K points of the Pareto front (--objective=pareto; evenly spread over it, both ends
//      included) measured: throughput
//      and latency ratios to B alone, each mapping re-measured --reps times interleaved with B
//      alone, which of the two runs first alternating (the host is shared: noise hits both
//      alike), medians. A profile taken with --split (planner/split_plan.h) adds the row "every
//      split spread": each split layer's parts over B and L in turn, the Concat on B (the plan
//      with the most hand-offs, for comparison). Overlap mode (planner/dag_cost_model.h): the best
//      latency plan run in overlap mode, and the front's overlap point of highest throughput.
//      The target (>= 1.8x B alone's throughput with >= 1.3x lower latency): from every front
//      point predicted at >= 1.7x and >= 1.2x (at most --select-max=K, 8, those predicted nearest
//      the target first; without one, the nearest) the tuner (cli/measured_tuning.h, `co_up plan
//      --tune --tune-target=1.8x,1.3x`) measures neighbouring mappings for --tune=SECONDS (60),
//      each --select-reps=R (3) times interleaved with B alone (ratios within each batch), then
//      confirms the best three --reps more times each beside B alone and picks on those runs; the
//      pick is then measured again like every row (choose on one run, report another). --tune=0: a selection pass instead, the near points alone, each R times
//      alternating with B alone; --select-reps=0: the point predicted nearest the target.
//   The model simulates the run it is compared with: --frames frames all admitted at once
//   (DagCostOptions::pipeline_frames), their median latency and the throughput as
//   profiler::summarize takes it from their completions. --pipeline-frames=N (default --frames)
//   runs pipeline mode longer: a run of 10 frames measures 15-20 % more throughput than the
//   steady state on GoogLeNet and Inception (its first frame ends late; the model predicts that
//   too), one of 30 about 5 %.
// Prints markdown. Options: --mappings=M (default 60) --frames=N (default 20) --reps=R (3)
//   --pareto=K (12) --plans=0 (only parts 1-2: the model's error) --explain=1 (the best latency
//   plan's sub-graphs, predicted against measured) --seed=S --plugins=DIR
//   --runs=FILE (part 1's runs as CSV, one row per mapping and mode: network, mode, sub-graphs,
//   cross-processor edges, predicted and measured latency and throughput, order)
//   --measured=FILE (part 1 from such a file instead of running: the model re-evaluated on
//   earlier runs of the same profiles and --frames) PROFILE.json...
//   --reference-every=K (2; 0: none): part 1 also runs the reference, every unit on B in switch
//   mode, before the first mapping, before every K-th and after the last (K = 2: up to about 30 %
//   more time, printed), and part 2 reports beside the absolute errors the errors of the ratios
//   measured / the mean of the two references nearest the mapping against predicted / the
//   model's own prediction of the reference: the host's drift, which moves every mapping of a
//   stretch alike, cancels. The CSV holds the references as rows of mode "reference", in the
//   order they ran.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/profiled_network.h"
#include "cli/layer_profiler.h"
#include "cli/measured_tuning.h"
#include "cli/verify_mappings.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/placement.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/parallel_regions.h"
#include "planner/dag_cost_model.h"
#include "planner/hybrid_plan.h"
#include "planner/layer_profile.h"
#include "planner/pipeline_cost_fit.h"
#include "planner/split_plan.h"
#include "profiler/report.h"

namespace {

using namespace co_up;

struct Run {
  planner::Mapping mapping;
  double measured_latency_ms = 0, measured_fps = 0;
  double chain_latency_ms = 0;
};

// A run of the reference mapping (every unit on B, switch mode) between the mappings' runs: the
// host's speed at that moment. `position`: how many mapping runs came before it.
struct Reference {
  size_t position = 0;
  double latency_ms = 0, fps = 0;
};

// Part 1's measurements: the mappings' runs (switch, then pipeline, per mapping) and the
// references measured between them, in the order they ran.
struct Measured {
  std::vector<Run> runs;
  std::vector<Reference> references;
};

// --runs / --measured: one CSV row per run, in the order they ran; a reference's mode is
// "reference" (older files have none).
constexpr const char* kRunsHeader =
    "network,mode,subgraphs,cross_edges,predicted_ms,measured_ms,predicted_fps,measured_fps,order";
constexpr const char* kReferenceMode = "reference";

// The references' mean nearest mapping `mapping` (runs 2 mapping and 2 mapping + 1): the last
// before its runs and the first after them; one of them where the other does not exist; none
// without references.
std::optional<Reference> nearest_reference(const std::vector<Reference>& references, size_t mapping) {
  const Reference* before = nullptr;
  const Reference* after = nullptr;
  for (const Reference& r : references) {
    if (r.position <= 2 * mapping) before = &r;
    if (r.position >= 2 * mapping + 2 && after == nullptr) after = &r;
  }
  if (before == nullptr && after == nullptr) return std::nullopt;
  if (before == nullptr) before = after;
  if (after == nullptr) after = before;
  return Reference{2 * mapping, (before->latency_ms + after->latency_ms) / 2, (before->fps + after->fps) / 2};
}

// Part 1's runs of `network` from a --runs file (other networks' rows are skipped).
Measured read_runs(const std::string& file, const std::string& network, const planner::CostModel& model) {
  std::ifstream in(file);
  if (!in) throw InputError("cannot read --measured=" + file + ": no such file or not readable");
  std::string line;
  if (!std::getline(in, line) || line != kRunsHeader) {
    throw InputError("--measured=" + file + " is not a --runs file (its first line is not '" + kRunsHeader + "')");
  }
  Measured measured;
  std::vector<Run>& runs = measured.runs;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    if (f.size() != 9) throw InputError("--measured=" + file + ": a row without 9 fields: " + line);
    if (f[0] != network) continue;
    if (f[1] == kReferenceMode) {
      measured.references.push_back({runs.size(), std::stod(f[5]), std::stod(f[7])});
      continue;
    }
    Run r;
    r.mapping = planner::Mapping{f[8], f[1] == "switch" ? planner::Mode::kSwitch : planner::Mode::kPipeline, {}};
    r.measured_latency_ms = std::stod(f[5]);
    r.measured_fps = std::stod(f[7]);
    r.chain_latency_ms = model.predict(r.mapping).latency_ms;
    runs.push_back(r);
  }
  if (runs.empty() || runs.size() % 2 != 0) {
    throw InputError("--measured=" + file + " has " + std::to_string(runs.size()) + " runs of " + network +
                     " (one per mapping and mode wanted)");
  }
  return measured;
}

// Sub-graphs and cross-processor edges of a mapping, as the model partitions it.
std::pair<size_t, size_t> cut_counts(const planner::DagCostModel& model, const planner::Mapping& m) {
  const planner::FrameSchedule s = model.schedule(m);
  size_t cross = 0;
  const graph::UnitDag& dag = model.dag();
  for (uint32_t u = 0; u < dag.predecessors.size(); ++u) {
    for (uint32_t q : dag.predecessors[u]) cross += m.order[q] != m.order[u] ? 1 : 0;
  }
  return {s.subgraphs.size(), cross};
}

double rel(double predicted, double measured) { return (predicted - measured) / measured; }

double median_abs(std::vector<double> errors) {
  for (double& x : errors) x = std::abs(x);
  return profiler::median(errors);
}

// The Pareto target against B alone: >= 1.8x its throughput with >= 1.3x lower latency. Front
// points predicted at >= 1.7x and >= 1.2x are near enough to be measured for it: the model's
// errors on overlap plans are a few per cent either way.
constexpr double kTargetFpsGain = 1.8, kTargetLatencyGain = 1.3;
constexpr double kNearFpsGain = 1.7, kNearLatencyGain = 1.2;

// A plan's throughput and latency gains over B alone.
struct Gains {
  double fps = 0, latency = 0;
  // >= 1 where both targets are met; the larger, the more margin on the nearer one.
  double target() const { return std::min(fps / kTargetFpsGain, latency / kTargetLatencyGain); }
};

// Medians of a plan's runs and of B alone's beside them.
struct AgainstB {
  double fps = 0, ms = 0, b_fps = 0, b_ms = 0;
  Gains gains() const { return {fps / b_fps, b_ms / ms}; }
};

std::string pct(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", 100.0 * fraction);
  return text;
}

// "median |error| / median signed error" of relative errors, as the tables print them.
std::string abs_and_signed(const std::vector<double>& errors) {
  return pct(median_abs(errors)) + " / " + pct(profiler::median(errors));
}

std::vector<std::string> random_orders(const planner::CostModel& model, const graph::UnitDag& dag, size_t count,
                                       uint64_t seed) {
  std::mt19937_64 random(seed);
  const std::string& letters = model.letters();
  const uint32_t n = model.layer_count();
  const std::vector<graph::DagRegion> regions = graph::find_unit_regions(dag);
  std::vector<std::string> orders;
  while (orders.size() < count) {
    const char a = letters[random() % letters.size()];
    const char b = letters[random() % letters.size()];
    std::string order(n, a);
    if (random() % 2 == 0) {  // a contiguous 2-stage split
      const uint32_t cut = 1 + static_cast<uint32_t>(random() % (n - 1));
      for (uint32_t u = cut; u < n; ++u) order[u] = b;
    }
    for (const graph::DagRegion& r : regions) {
      if (random() % 2 != 0) continue;
      for (const auto& branch : r.branches) {
        const char c = letters[random() % letters.size()];
        for (uint32_t u : branch) order[u] = c;
      }
    }
    if (model.runs(order)) orders.push_back(order);
  }
  return orders;
}

planner::LayerProfile scaled_profile(planner::LayerProfile p, double k) {
  for (planner::LayerTimes& t : p.layer_times) {
    for (double& v : t.median_us) v *= k;
  }
  for (planner::TransferTimes& t : p.transfers) {
    for (double& v : t.send_us) v *= k;
    for (double& v : t.receive_us) v *= k;
  }
  for (auto& [letter, us] : p.input_transfer_us) us *= k;
  for (planner::HandoffTime& h : p.handoffs) h.us *= k;
  for (planner::HandoffTime& h : p.pipeline_subgraphs) h.us *= k;
  for (planner::HandoffTime& h : p.pipeline_edges) h.us *= k;
  return p;
}

// --explain: one plan taken apart, the model's schedule of one switch-mode frame beside the
// measured sub-graph runs (profile level 1, median over the frames after the first): where the
// measured frame loses time against the prediction, per sub-graph its run time and its wait
// (start minus the later of its last input's end and its processor's previous end).
void explain_plan(const graph::Graph& g, const Platform& platform, const PluginRegistry& plugins,
                  const planner::DagCostModel& dag_model, const planner::Mapping& mapping, int frames) {
  const planner::FrameSchedule fs = dag_model.schedule(mapping);
  ExecutorOptions options;
  options.mode = mapping.mode;
  options.profile_level = 1;
  Executor executor(Placement::create(g, mapping.order, platform, plugins), options);
  RunRequest request;
  request.input_sets.push_back(seeded_inputs(g, 1));
  request.frames = 2;
  executor.run(request);
  request.frames = static_cast<uint64_t>(std::max(frames, 3));
  const RunResult result = executor.run(request);
  const profiler::RunProfile& p = result.profile;
  const size_t count = fs.subgraphs.size();
  if (p.subgraphs.size() != count) {
    std::cout << "explain: the runtime cut " << p.subgraphs.size() << " sub-graphs, the model " << count << "\n\n";
    return;
  }
  std::vector<std::vector<uint32_t>> feeds(count);
  for (const profiler::ReceiverInfo& r : p.receivers) {
    if (r.source != UINT32_MAX && r.destination < count) feeds[r.destination].push_back(r.source);
  }
  const size_t n_frames = std::min(p.frame_start_ns.size(), p.frame_end_ns.size());
  // Each run's previous run on its processor, in time (any frame: overlap mode interleaves two).
  std::map<const profiler::Event*, int64_t> previous_end;
  {
    std::map<char, std::vector<const profiler::Event*>> on;
    for (const profiler::Event& e : p.events) {
      if (e.kind == profiler::EventKind::kSubGraph && e.subgraph < count) on[fs.subgraphs[e.subgraph].processor].push_back(&e);
    }
    for (auto& [letter, list] : on) {
      std::sort(list.begin(), list.end(), [](const auto* a, const auto* b) { return a->begin_ns < b->begin_ns; });
      for (size_t i = 1; i < list.size(); ++i) previous_end[list[i]] = list[i - 1]->end_ns;
    }
  }
  std::vector<std::vector<double>> start(count), run(count), wait(count);
  std::vector<double> latency, tail;
  std::map<char, std::vector<double>> busy;  // per processor: its runs' time per frame
  for (uint64_t f = 1; f < n_frames; ++f) {
    std::vector<const profiler::Event*> of(count, nullptr);
    for (const profiler::Event& e : p.events) {
      if (e.kind == profiler::EventKind::kSubGraph && e.frame == f && e.subgraph < count) of[e.subgraph] = &e;
    }
    const int64_t t0 = p.frame_start_ns[f];
    latency.push_back(static_cast<double>(p.frame_end_ns[f] - t0) / 1e3);
    int64_t last_end = t0;
    std::map<char, double> frame_busy;
    for (uint32_t s = 0; s < count; ++s) {
      const profiler::Event* e = of[s];
      if (e == nullptr) continue;
      int64_t ready = t0;
      for (uint32_t src : feeds[s]) {
        if (of[src] != nullptr) ready = std::max(ready, of[src]->end_ns);
      }
      if (previous_end.count(e) != 0) ready = std::max(ready, previous_end[e]);
      last_end = std::max(last_end, e->end_ns);
      start[s].push_back(static_cast<double>(e->begin_ns - t0) / 1e3);
      run[s].push_back(static_cast<double>(e->end_ns - e->begin_ns) / 1e3);
      wait[s].push_back(static_cast<double>(e->begin_ns - ready) / 1e3);
      frame_busy[fs.subgraphs[s].processor] += static_cast<double>(e->end_ns - e->begin_ns) / 1e3;
    }
    for (const auto& [letter, us] : frame_busy) busy[letter].push_back(us);
    tail.push_back(static_cast<double>(p.frame_end_ns[f] - last_end) / 1e3);
  }
  const profiler::Summary summary = profiler::summarize(p);
  std::vector<bool> critical(count, false);
  for (uint32_t s : fs.critical_path) critical[s] = true;
  std::cout << "explain (sub-graph starts predicted as in switch mode) " << planner::command_line(dag_model.model(), mapping) << "\n\n"
            << "| sub-graph | on | units | predicted start us | predicted run us | measured start us | measured run us | run / predicted | measured wait us | critical (model) |\n"
            << "|---|---|---|---|---|---|---|---|---|---|\n";
  double run_over = 0, run_over_critical = 0, waits = 0, waits_critical = 0;
  for (uint32_t s = 0; s < count; ++s) {
    const planner::ScheduledSubGraph& x = fs.subgraphs[s];
    const double predicted = x.end_us - x.start_us;
    const double measured = profiler::median(run[s]), w = profiler::median(wait[s]);
    run_over += measured - predicted;
    waits += w;
    if (critical[s]) {
      run_over_critical += measured - predicted;
      waits_critical += w;
    }
    char line[256];
    std::snprintf(line, sizeof line, "| %u | %c | %u..%u | %.0f | %.0f | %.0f | %.0f | %.2f | %.0f | %s |\n", s,
                  x.processor, x.first_layer, x.last_layer, x.start_us, predicted, profiler::median(start[s]),
                  measured, predicted > 0 ? measured / predicted : 0.0, w, critical[s] ? "yes" : "");
    std::cout << line;
  }
  std::cout << "\npredicted " << fs.latency_us << " us, measured median " << profiler::median(latency)
            << " us; over the model's critical path: runs " << run_over_critical << " us longer, waits "
            << waits_critical << " us; all sub-graphs: runs " << run_over << " us longer, waits " << waits
            << " us; last run's end to the frame's delivery " << profiler::median(tail) << " us\n";
  for (size_t i = 0; i < fs.processors.size(); ++i) {
    std::cout << fs.processors[i] << " busy per frame: predicted " << fs.busy_us[i] << " us, measured median "
              << profiler::median(busy[fs.processors[i]]) << " us\n";
  }
  std::cout << "measured " << summary.throughput_fps << " fps (predicted " << dag_model.predict_run(mapping).throughput_fps
            << "), " << mode_name(mapping.mode) << " mode\n\n";
}

}  // namespace

static int run_para_pipe(int argc, char** argv) {
  size_t mappings = 60;
  int frames = 20, reps = 3;
  int pipeline_frames = 0;  // 0: --frames
  size_t reference_every = 2;  // a reference run (B alone) before every this many mappings; 0: none
  size_t pareto_points = 12;
  int select_reps = 3;      // the selection pass's repetitions per point near the target (0: none)
  size_t select_max = 8;    // at most this many points near the target measured on it
  double tune_seconds = 60;  // the measured search from those points (cli/measured_tuning.h); 0: none
  bool plans_wanted = true;
  bool explain = false;
  uint64_t seed = 1;
  std::string plugin_dir = CO_UP_PLUGIN_DIR;
  std::string runs_file, measured_file;
  std::vector<std::string> profiles;
  constexpr const char* kUsage =
      "usage: co_up_bench_para_pipe [--mappings=M] [--frames=N] [--pipeline-frames=N] [--reference-every=K] [--reps=R] [--seed=S] [--pareto=K] "
      "[--select-reps=R] [--select-max=K] [--tune=SECONDS] [--plans=0|1] [--explain=0|1] [--plugins=DIR] [--runs=FILE.csv] [--measured=FILE.csv] PROFILE.json...";
  for (const bench::BenchOption& a : bench::read_options(argc, argv)) {
    if (a.is("mappings")) mappings = static_cast<size_t>(a.integer(0, 1000000));  // 0: only the planned ones
    else if (a.is("frames")) frames = static_cast<int>(a.integer(1, 1000000));
    else if (a.is("pipeline-frames")) pipeline_frames = static_cast<int>(a.integer(2, 1000000));
    else if (a.is("reference-every")) reference_every = static_cast<size_t>(a.integer(0, 1000000));
    else if (a.is("reps")) reps = static_cast<int>(a.integer(1, 100000));
    else if (a.is("seed")) seed = static_cast<uint64_t>(a.integer(0, INT64_MAX));
    else if (a.is("pareto")) pareto_points = static_cast<size_t>(a.integer(1, 100000));
    else if (a.is("select-reps")) select_reps = static_cast<int>(a.integer(0, 100000));
    else if (a.is("select-max")) select_max = static_cast<size_t>(a.integer(1, 100000));
    else if (a.is("tune")) tune_seconds = static_cast<double>(a.integer(0, 100000));
    else if (a.is("plans")) plans_wanted = a.integer(0, 1) == 1;  // 0: only the model's error (part 2)
    else if (a.is("plugins")) plugin_dir = a.string();
    else if (a.is("explain")) explain = a.integer(0, 1) == 1;  // 1: the best latency plan taken apart
    else if (a.is("runs")) runs_file = a.string();
    else if (a.is("measured")) measured_file = a.string();
    else if (a.is("help")) {
      std::cout << kUsage << "\n";
      return 0;
    } else if (a.name.empty()) profiles.push_back(a.text);
    else a.unknown();
  }
  if (profiles.empty()) throw InputError(std::string("no layer profile given; ") + kUsage);
  std::ofstream runs_out;
  if (!runs_file.empty()) {
    if (!measured_file.empty() && std::filesystem::exists(runs_file) &&
        std::filesystem::equivalent(runs_file, measured_file)) {
      throw InputError("--runs and --measured name the same file; give --runs another name");
    }
    runs_out.open(runs_file);
    if (!runs_out) throw InputError("cannot write --runs=" + runs_file);
    runs_out << kRunsHeader << "\n";
  }
  try {
    const Platform platform = detect_host_platform("");
    const PluginRegistry plugins = PluginRegistry::load_directory(plugin_dir);
    cli::VerifySettings settings;
    settings.frames = frames;
    cli::VerifySettings pipeline_settings = settings;
    if (pipeline_frames > 0) pipeline_settings.frames = pipeline_frames;
    // Each run with its mode's frame count.
    const auto measure_run = [&](const graph::Graph& g, const std::string& order, planner::Mode mode) {
      return cli::measure_mapping(g, platform, plugins, order, mode,
                                  mode == planner::Mode::kPipeline ? pipeline_settings : settings);
    };
    for (const std::string& file : profiles) {
      const planner::LayerProfile profile = planner::read_layer_profile(file);
      const planner::CostModel model(profile);
      const planner::ProfileNetwork& net = profile.network;
      const graph::Graph g = bench::profiled_network(net);
      const graph::UnitDag dag = graph::unit_dag(g);
      // The run it is compared with: --frames frames (at least 2), all admitted at once.
      planner::DagCostOptions dag_options;
      dag_options.pipeline_frames = static_cast<uint32_t>(std::max(pipeline_settings.frames, 2));
      planner::DagCostModel dag_model(model, dag, dag_options);
      const std::string name = net.graph.empty() ? std::filesystem::path(net.model).stem().string() : net.graph;
      std::cout << "## " << name << " (" << net.layer_count << " units, --units=" << net.units
                << (net.image_size > 0 ? ", image " + std::to_string(net.image_size) : std::string())
                << ", processors " << model.letters() << ", "
                << graph::find_unit_regions(dag).size() << " parallel regions, "
                << planner::split_groups(model).size() << " split layers"
                << (net.split.empty() ? std::string() : ": --split=" + net.split) << ")\n\n";
      for (const planner::HandoffTime& h : profile.switch_edges) {
        std::cout << "profile's switch-mode wake-up " << h.a << "<->" << h.b << ": " << h.us << " us per edge\n\n";
      }
      for (const planner::HandoffTime& h : profile.pipeline_subgraphs) {
        const planner::HandoffTime* edge = profile.find_pipeline_edge(h.a, h.b);
        const planner::HandoffTime* factor = profile.find_pipeline_work_factor(h.a, h.b);
        std::cout << "profile's pipeline cost " << h.a << "<->" << h.b << ": layers x"
                  << (factor != nullptr ? factor->us : 1.0) << ", " << h.us << " us per sub-graph run, "
                  << (edge != nullptr ? edge->us : 0.0) << " us delay per cross-processor edge\n\n";
      }
      for (const planner::HandoffTime& h : profile.switch_edge_mb) {
        std::cout << "profile's switch-mode cross-core read " << h.a << "<->" << h.b << ": " << h.us
                  << " us per MB of a cross-processor edge's tensor\n\n";
      }
      // A profile measured beside other work misses every run by its slowdown (cli/layer_profiler.h).
      std::cout << "profile's layer-time spread (sum of MADs over sum of medians; above "
                << pct(cli::kQuietLayerSpread) << " its layers ran beside other work):";
      for (const planner::LayerTimes& t : profile.layer_times) {
        if (t.level == 0) std::cout << " " << t.processor << " " << pct(cli::layer_spread(t));
      }
      std::cout << "\n\n";

      // 1. Measured runs.
      if (mappings > 0 || !measured_file.empty()) {
      Measured measured;
      if (!measured_file.empty()) measured = read_runs(measured_file, name, model);
      std::vector<Run>& runs = measured.runs;
      std::vector<Reference>& references = measured.references;
      // The reference: every unit on B (the first letter without B), switch mode, measured before
      // the first mapping, after every --reference-every mappings and after the last.
      const std::string reference_order(net.layer_count,
                                        model.letters().find('B') != std::string::npos ? 'B' : model.letters()[0]);
      const planner::Mapping reference_mapping{reference_order, planner::Mode::kSwitch, {}};
      const bool with_references = reference_every > 0 && measured_file.empty() && model.runs(reference_order);
      // Wall time of the references and of the mappings' runs (what the references add).
      double reference_s = 0, mappings_s = 0;
      const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
      };
      const auto measure_reference = [&] {
        const auto start = std::chrono::steady_clock::now();
        const cli::Measurement m = measure_run(g, reference_order, planner::Mode::kSwitch);
        references.push_back({runs.size(), m.latency_ms, m.throughput_fps});
        reference_s += seconds_since(start);
      };
      const std::vector<std::string> orders =
          measured_file.empty() ? random_orders(model, dag, mappings, seed) : std::vector<std::string>{};
      for (size_t k = 0; k < orders.size(); ++k) {
        const std::string& order = orders[k];
        if (with_references && k % reference_every == 0) measure_reference();
        const auto start = std::chrono::steady_clock::now();
        for (planner::Mode mode : {planner::Mode::kSwitch, planner::Mode::kPipeline}) {
          Run r;
          r.mapping = planner::Mapping{order, mode, {}};
          const cli::Measurement m = measure_run(g, order, mode);
          r.measured_latency_ms = m.latency_ms;
          r.measured_fps = m.throughput_fps;
          r.chain_latency_ms = model.predict(r.mapping).latency_ms;
          runs.push_back(r);
        }
        mappings_s += seconds_since(start);
      }
      if (with_references && !orders.empty()) measure_reference();
      // The model's B alone, which every ratio to the references is against (none: not needed).
      const planner::Prediction reference_predicted =
          references.empty() ? planner::Prediction{} : dag_model.predict(reference_mapping);
      // 2. Fit on even mappings (switch latency), report odd ones.
      auto errors = [&](const planner::DagCostModel& dm, bool report, planner::Mode mode, int what) {
        std::vector<double> e;
        for (size_t i = 0; i < runs.size(); ++i) {
          const Run& r = runs[i];
          if (r.mapping.mode != mode || ((i / 2) % 2 == 1) != report) continue;
          // A pipeline run's median over simulations with the profile's noise (the fits' grids are
          // switch mode: one simulation).
          const planner::Prediction p = mode == planner::Mode::kPipeline ? dm.predict_run(r.mapping) : dm.predict(r.mapping);
          if (what == 0) e.push_back(std::abs(rel(p.latency_ms, r.measured_latency_ms)));
          if (what == 1) e.push_back(std::abs(rel(p.throughput_fps, r.measured_fps)));
          if (what == 2) e.push_back(std::abs(rel(r.chain_latency_ms, r.measured_latency_ms)));
        }
        return profiler::median(e);
      };
      // What `co_up plan` predicts: the profile's own measured wake-up per edge, nothing fitted to
      // these runs, so every mapping is held out.
      if (runs_out.is_open()) {
        size_t next_reference = 0;
        const auto write_references = [&](size_t position) {
          for (; next_reference < references.size() && references[next_reference].position <= position; ++next_reference) {
            const Reference& x = references[next_reference];
            char line[256];
            std::snprintf(line, sizeof line, "%s,%s,1,0,%.4f,%.4f,%.3f,%.3f,", name.c_str(), kReferenceMode,
                          reference_predicted.latency_ms, x.latency_ms, reference_predicted.throughput_fps, x.fps);
            runs_out << line << reference_order << "\n";
          }
        };
        for (const Run& r : runs) {
          write_references(static_cast<size_t>(&r - runs.data()));
          const planner::Prediction p = dag_model.predict_run(r.mapping);
          const auto [subgraphs, cross] = cut_counts(dag_model, r.mapping);
          char line[256];
          std::snprintf(line, sizeof line, "%s,%s,%zu,%zu,%.4f,%.4f,%.3f,%.3f,", name.c_str(),
                        mode_name(r.mapping.mode), subgraphs, cross, p.latency_ms, r.measured_latency_ms,
                        p.throughput_fps, r.measured_fps);
          runs_out << line << r.mapping.order << "\n";
        }
        write_references(runs.size());
        runs_out.flush();
      }
      // One simulation with the profile's median times (the searches' prediction), and the median
      // over simulations with its measured noise (DagCostModel::predict_run: what co_up plan
      // --verify compares with a run).
      for (const bool draws : {false, true}) {
        std::vector<double> sw, pl, tp;
        for (const Run& r : runs) {
          const planner::Prediction p = draws ? dag_model.predict_run(r.mapping) : dag_model.predict(r.mapping);
          (r.mapping.mode == planner::Mode::kSwitch ? sw : pl)
              .push_back(std::abs(rel(p.latency_ms, r.measured_latency_ms)));
          if (r.mapping.mode == planner::Mode::kPipeline) {
            tp.push_back(std::abs(rel(p.throughput_fps, r.measured_fps)));
          }
        }
        std::cout << "with the profile's own wake-up per edge (as co_up plan predicts; nothing fitted, all "
                  << runs.size() / 2 << " mappings), "
                  << (draws ? "median of " + std::to_string(planner::DagCostModel::kRunDraws) + " noisy simulations"
                            : std::string("one simulation"))
                  << ": median |error| switch latency " << pct(profiler::median(sw))
                  << ", pipeline latency " << pct(profiler::median(pl)) << ", pipeline throughput "
                  << pct(profiler::median(tp)) << "\n\n";
      }
      // The co-run slowdown (DagCostOptions::corun_work_factor) on and off, as co_up plan predicts
      // (nothing fitted to these runs): median |error| and signed median per mode. Pipeline mode
      // keeps its constant factor either way.
      {
        planner::DagCostOptions off_options = dag_options;
        off_options.corun_work_factor = 1;
        const planner::DagCostModel off(model, dag, off_options);
        std::cout << "| co-run slowdown | switch latency: median abs / signed | pipeline latency | "
                     "pipeline throughput |\n|---|---|---|---|\n";
        for (const planner::DagCostModel* dm : {&off, static_cast<const planner::DagCostModel*>(&dag_model)}) {
          std::vector<double> sw, pl, tp;
          for (const Run& r : runs) {
            const planner::Prediction p = dm->predict_run(r.mapping);
            (r.mapping.mode == planner::Mode::kSwitch ? sw : pl).push_back(rel(p.latency_ms, r.measured_latency_ms));
            if (r.mapping.mode == planner::Mode::kPipeline) tp.push_back(rel(p.throughput_fps, r.measured_fps));
          }
          std::cout << "| " << (dm == &off ? "off" : "on") << " | " << abs_and_signed(sw) << " | "
                    << abs_and_signed(pl) << " | " << abs_and_signed(tp) << " |\n";
        }
        std::cout << "\n";
      }
      // The host's speed drifts (5-10 % within minutes on a shared virtual host), moving every
      // mapping of a stretch alike. Against the reference: each mapping's measurement over the mean
      // of the references nearest it (the last before its runs, the first after), beside the
      // model's prediction over its own prediction of the reference (throughput: times the
      // reference's latency); drift cancels in both ratios.
      // The profile's own costs, nothing fitted (as the co-run table's "on" row).
      if (!references.empty()) {
        std::vector<double> sw, pl, tp, sw_ratio, pl_ratio, tp_ratio, reference_ms, reference_error;
        for (const Reference& x : references) {
          reference_ms.push_back(x.latency_ms);
          reference_error.push_back(rel(reference_predicted.latency_ms, x.latency_ms));
        }
        for (size_t i = 0; i < runs.size(); ++i) {
          const Run& r = runs[i];
          const bool pipeline = r.mapping.mode == planner::Mode::kPipeline;
          const planner::Prediction p = dag_model.predict_run(r.mapping);
          (pipeline ? pl : sw).push_back(rel(p.latency_ms, r.measured_latency_ms));
          if (pipeline) tp.push_back(rel(p.throughput_fps, r.measured_fps));
          const std::optional<Reference> near = nearest_reference(references, i / 2);
          (pipeline ? pl_ratio : sw_ratio)
              .push_back(rel(p.latency_ms / reference_predicted.latency_ms, r.measured_latency_ms / near->latency_ms));
          // The reference's speed is its median frame latency (its throughput in switch mode takes
          // every stall between frames too).
          if (pipeline) {
            tp_ratio.push_back(rel(p.throughput_fps * reference_predicted.latency_ms, r.measured_fps * near->latency_ms));
          }
        }
        const auto [low, high] = std::minmax_element(reference_ms.begin(), reference_ms.end());
        char line[512];
        std::snprintf(line, sizeof line,
                      "reference %c alone (every unit on %c, switch mode, %d frames): %zu runs between the mappings' "
                      "runs, median %.3f ms, %.3f-%.3f ms (the slowest %.1f %% above the fastest); predicted %.3f ms "
                      "(signed median error %s)\n\n",
                      reference_order[0], reference_order[0], settings.frames, references.size(),
                      profiler::median(reference_ms), *low, *high, 100.0 * (*high / *low - 1),
                      reference_predicted.latency_ms, pct(profiler::median(reference_error)).c_str());
        std::cout << line;
        if (mappings_s > 0) {
          std::snprintf(line, sizeof line, "the references took %.1f s beside %.1f s of the mappings' runs (+%.0f %%)\n\n",
                        reference_s, mappings_s, 100.0 * reference_s / mappings_s);
          std::cout << line;
        }
        std::cout << "against " << reference_order[0]
                  << " alone (nothing fitted, all " << runs.size() / 2
                  << " mappings; measured / the nearest references' mean against predicted / the model's "
                  << reference_order[0] << " alone): median |error| switch latency "
                  << pct(median_abs(sw_ratio))
                  << ", pipeline latency "
                  << pct(median_abs(pl_ratio))
                  << ", pipeline throughput "
                  << pct(median_abs(tp_ratio))
                  << "\n\n"
                  << "| nothing fitted, all mappings | switch latency: median abs / signed | pipeline latency | "
                     "pipeline throughput |\n|---|---|---|---|\n"
                  << "| absolute: predicted against measured | " << abs_and_signed(sw) << " | "
                  << abs_and_signed(pl) << " | " << abs_and_signed(tp) << " |\n"
                  << "| against " << reference_order[0] << " alone: ratios to the reference | "
                  << abs_and_signed(sw_ratio) << " | " << abs_and_signed(pl_ratio) << " | "
                  << abs_and_signed(tp_ratio) << " |\n\n";
      }
      // A loaded host's waiting thread comes back a scheduler time slice late (several ms): the
      // grid reaches 20 ms so that the fit is never cut off at its edge.
      const auto next_edge_us = [](double us) { return us < 2000 ? us + 10 : us + 100; };
      dag_model.set_switch_edge_mb_us(0);  // the fit's one number is per edge
      double best_edge = 0, best_error = INFINITY;
      for (double us = 0; us <= 20000; us = next_edge_us(us)) {
        dag_model.set_switch_edge_us(us);
        const double e = errors(dag_model, false, planner::Mode::kSwitch, 0);
        if (e < best_error) {
          best_error = e;
          best_edge = us;
        }
      }
      dag_model.set_switch_edge_us(best_edge);
      std::cout << "| " << runs.size() / 2 << " mappings x 2 modes | fit set (even) | report set (odd) |\n"
                << "|---|---|---|\n"
                << "| switch latency, DAG model | " << pct(errors(dag_model, false, planner::Mode::kSwitch, 0)) << " | "
                << pct(errors(dag_model, true, planner::Mode::kSwitch, 0)) << " |\n"
                << "| switch latency, chain model | " << pct(errors(dag_model, false, planner::Mode::kSwitch, 2))
                << " | " << pct(errors(dag_model, true, planner::Mode::kSwitch, 2)) << " |\n"
                << "| pipeline latency, DAG model | " << pct(errors(dag_model, false, planner::Mode::kPipeline, 0))
                << " | " << pct(errors(dag_model, true, planner::Mode::kPipeline, 0)) << " |\n"
                << "| pipeline throughput | " << pct(errors(dag_model, false, planner::Mode::kPipeline, 1)) << " | "
                << pct(errors(dag_model, true, planner::Mode::kPipeline, 1)) << " |\n\n"
                << "fitted switch-mode wake-up per cross-processor edge: " << best_edge << " us\n\n";

      // The same with one more number fitted on the fit set: a factor on every time of the profile
      // (layers, transfers, hand-offs), for runs measured under other contention than the profile.
      {
        double best_scale = 1, best_scale_edge = 0, best_scaled_error = INFINITY;
        for (double k = 0.5; k <= 10.0 + 1e-9; k += 0.1) {
          const planner::CostModel scaled_model(scaled_profile(profile, k));
          planner::DagCostModel scaled(scaled_model, dag, dag_options);
          scaled.set_switch_edge_mb_us(0);
          for (double us = 0; us <= 20000; us += us < 2000 ? 50 : 250) {
            scaled.set_switch_edge_us(us);
            const double e = errors(scaled, false, planner::Mode::kSwitch, 0);
            if (e < best_scaled_error) {
              best_scaled_error = e;
              best_scale = k;
              best_scale_edge = us;
            }
          }
        }
        const planner::CostModel scaled_model(scaled_profile(profile, best_scale));
        planner::DagCostModel scaled(scaled_model, dag, dag_options);
        scaled.set_switch_edge_mb_us(0);
        scaled.set_switch_edge_us(best_scale_edge);
        std::cout << "with a fitted time factor " << best_scale << " and wake-up " << best_scale_edge
                  << " us: switch latency " << pct(errors(scaled, false, planner::Mode::kSwitch, 0)) << " (fit) / "
                  << pct(errors(scaled, true, planner::Mode::kSwitch, 0)) << " (report), pipeline latency "
                  << pct(errors(scaled, true, planner::Mode::kPipeline, 0)) << ", pipeline throughput "
                  << pct(errors(scaled, true, planner::Mode::kPipeline, 1)) << " (report)\n\n";
      }
      // Pipeline mode: the executor's cost per sub-graph run and the delay per cross-processor
      // edge (planner/pipeline_cost_fit.h) fitted on the even mappings' pipeline runs, reported
      // on the odd ones, each shape; signed errors by sub-graph count show what is left.
      {
        std::vector<planner::PipelineRun> fit_runs;
        std::vector<const Run*> report_runs;
        std::vector<size_t> report_subgraphs;
        for (size_t i = 0; i < runs.size(); ++i) {
          const Run& r = runs[i];
          if (r.mapping.mode != planner::Mode::kPipeline || !(r.measured_fps > 0)) continue;
          if ((i / 2) % 2 == 0) {
            fit_runs.push_back({r.mapping.order, dag_options.pipeline_frames, 1e6 / r.measured_fps});
          } else {
            report_runs.push_back(&r);
            report_subgraphs.push_back(cut_counts(dag_model, r.mapping).first);
          }
        }
        const auto report = [&](const std::string& label, const planner::DagCostModel& dm, double fit_error) {
          std::vector<double> tp, lat, bins[3];
          for (size_t k = 0; k < report_runs.size(); ++k) {
            const planner::Prediction p = dm.predict_run(report_runs[k]->mapping);
            const double e = rel(p.throughput_fps, report_runs[k]->measured_fps);
            tp.push_back(std::abs(e));
            lat.push_back(std::abs(rel(p.latency_ms, report_runs[k]->measured_latency_ms)));
            bins[report_subgraphs[k] <= 10 ? 0 : report_subgraphs[k] <= 16 ? 1 : 2].push_back(e);
          }
          std::cout << "| " << label << " | " << pct(fit_error) << " | " << pct(profiler::median(tp)) << " | "
                    << pct(profiler::median(lat));
          for (const std::vector<double>& b : bins) {
            std::cout << " | " << (b.empty() ? std::string("-") : pct(profiler::median(b)) + " (" + std::to_string(b.size()) + ")");
          }
          std::cout << " |\n";
        };
        if (!fit_runs.empty() && !report_runs.empty()) {
          std::cout << "| pipeline cost (" << fit_runs.size() << " fit, " << report_runs.size()
                    << " reported) | period error, fit set | throughput error, report set | latency error, report set"
                    << " | signed throughput error, <= 10 sub-graphs | 11-16 | > 16 |\n|---|---|---|---|---|---|---|\n";
          planner::DagCostModel own = dag_model;
          own.set_pipeline_subgraph_us(-1);
          own.set_pipeline_edge_us(-1);
          report("the profile's", own,
                 median_abs(planner::pipeline_period_errors(own, fit_runs, false)));
          using Shape = planner::PipelineCostShape;
          for (const auto& [shape, name] : {std::pair{Shape::kPerSubGraph, "per sub-graph"},
                                            std::pair{Shape::kPerEdge, "per edge (delay)"},
                                            std::pair{Shape::kBoth, "both"}}) {
            planner::DagCostModel m = dag_model;
            m.set_pipeline_subgraph_us(0);
            m.set_pipeline_edge_us(0);
            m.set_pipeline_work_factor(1);  // layers as profiled: the shape's numbers alone
            const planner::PipelineCostFit f = planner::fit_pipeline_costs(m, fit_runs, shape, false);
            m.set_pipeline_subgraph_us(f.subgraph_us);
            m.set_pipeline_edge_us(f.edge_us);
            char label[128];
            std::snprintf(label, sizeof label, "%s: %.0f us per sub-graph, %.0f us per edge", name, f.subgraph_us,
                          f.edge_us);
            report(label, m, f.error);
          }
          std::cout << "\n";
        }
      }
      }  // mappings > 0

      if (!plans_wanted) continue;
      // 3. Plans against B alone, interleaved re-measurement.
      const std::string b_alone(net.layer_count, 'B');
      auto measure = [&](const planner::Mapping& m) {
        return measure_run(g, m.order, m.mode);
      };
      // `reps` runs of m, each beside one of B alone, which of the two first alternating (the host
      // is shared: noise hits both alike); medians.
      const auto measure_against_b = [&](const planner::Mapping& m, int reps) {
        std::vector<double> fps, ms, b_fps, b_ms;
        for (int k = 0; k < reps; ++k) {
          cli::Measurement b, r;
          if (k % 2 == 0) {
            b = measure(planner::Mapping{b_alone, planner::Mode::kSwitch, {}});
            r = measure(m);
          } else {
            r = measure(m);
            b = measure(planner::Mapping{b_alone, planner::Mode::kSwitch, {}});
          }
          b_fps.push_back(b.throughput_fps);
          b_ms.push_back(b.latency_ms);
          fps.push_back(r.throughput_fps);
          ms.push_back(r.latency_ms);
        }
        return AgainstB{profiler::median(fps), profiler::median(ms), profiler::median(b_fps), profiler::median(b_ms)};
      };
      std::vector<planner::Candidate> plans;
      std::vector<std::string> labels;
      planner::HybridPlanOptions options;
      options.seed = seed;
      const auto plan_start = std::chrono::steady_clock::now();
      const std::clock_t plan_cpu_start = std::clock();  // CPU time: other load on the host stretches the wall time
      // Planned as `co_up plan` plans (pipelines in their steady state); the table's predictions
      // are of the runs it measures (dag_model).
      planner::DagCostModel steady_model(model, dag);
      steady_model.set_switch_edge_us(dag_model.options().switch_edge_us);  // fitted above, if at all
      steady_model.set_switch_edge_mb_us(dag_model.options().switch_edge_mb_us);
      const planner::PlanResult latency = planner::plan_hybrid(steady_model, planner::Objective::kLatency, 1, options);
      plans.push_back(latency.ranked.front());
      labels.push_back("best latency");
      // The whole front (sorted by throughput), then --pareto=K points evenly spread over it,
      // both ends included: the first K alone would all be pipelines at the throughput end.
      const planner::PlanResult pareto = planner::plan_hybrid(steady_model, planner::Objective::kPareto, 64, options);
      const size_t front = pareto.ranked.size();
      const size_t shown = std::min(front, pareto_points);
      for (size_t k = 0; k < shown; ++k) {
        const size_t i = shown == 1 ? 0 : k * (front - 1) / (shown - 1);
        plans.push_back(pareto.ranked[i]);
        labels.push_back("pareto " + std::to_string(i + 1) + "/" + std::to_string(front));
      }
      std::cout << "planned in "
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - plan_start).count()
                << " s, " << static_cast<double>(std::clock() - plan_cpu_start) / CLOCKS_PER_SEC
                << " s CPU (latency and Pareto searches)\n\n" << std::flush;
      // Overlap mode (a second frame only where the first is done): the best latency plan run so,
      // and the front's overlap point of highest throughput, whether or not the evenly spread
      // points above include it.
      const planner::Mapping& best_latency = latency.ranked.front().mapping;
      if (best_latency.order.find_first_not_of(best_latency.order[0]) != std::string::npos) {
        planner::Candidate c = latency.ranked.front();
        c.mapping.mode = planner::Mode::kOverlap;
        plans.push_back(c);
        labels.push_back("best latency, overlap");
      }
      // Predicted as the table predicts: the runs it measures (dag_model).
      const planner::Prediction b_predicted = dag_model.predict(planner::Mapping{b_alone, planner::Mode::kSwitch, {}});
      std::vector<Gains> predicted_gains;
      for (const planner::Candidate& c : pareto.ranked) {
        const planner::Prediction p = dag_model.predict_run(c.mapping);
        predicted_gains.push_back({p.throughput_fps / b_predicted.throughput_fps, b_predicted.latency_ms / p.latency_ms});
      }
      for (size_t i = 0; i < front; ++i) {  // the front is sorted by throughput
        if (pareto.ranked[i].mapping.mode != planner::Mode::kOverlap) continue;
        plans.push_back(pareto.ranked[i]);
        labels.push_back("pareto overlap " + std::to_string(i + 1) + "/" + std::to_string(front));
        break;
      }
      // The point for the target (>= 1.8x B alone's throughput with >= 1.3x lower latency): every
      // front point predicted near it is measured on a selection pass and the best measured is
      // chosen; the table's row measures the chosen plan again, so that the luck that picked it
      // is not what the row reports. Without such a point, the one predicted nearest the target.
      {
        std::vector<size_t> near;
        size_t nearest = front;
        for (size_t i = 0; i < front; ++i) {
          const Gains& p = predicted_gains[i];
          if (p.fps >= kNearFpsGain && p.latency >= kNearLatencyGain) near.push_back(i);
          if (nearest == front || p.target() > predicted_gains[nearest].target()) nearest = i;
        }
        std::stable_sort(near.begin(), near.end(), [&](size_t a, size_t b) {
          return predicted_gains[a].target() > predicted_gains[b].target();
        });
        if (near.size() > select_max) near.resize(select_max);
        planner::Candidate chosen_plan;
        std::string chosen_label;
        if (nearest != front) {
          chosen_plan = pareto.ranked[nearest];
          chosen_label = "pareto " + std::to_string(nearest + 1) + "/" + std::to_string(front) + " (predicted nearest the target)";
        }
        if (select_reps > 0 && tune_seconds > 0 && nearest != front) {
          // The tuner from those points (or the nearest), aiming at the target as gains over B alone,
          // measured in every batch (ratios within a batch: the host drifts over the pass); its pick
          // is the best on the confirmation runs. The row measures the pick again, alternating with
          // B alone.
          std::vector<planner::Candidate> starts;
          for (size_t i : near) starts.push_back(pareto.ranked[i]);
          if (starts.empty()) starts.push_back(pareto.ranked[nearest]);
          measure(planner::Mapping{b_alone, planner::Mode::kSwitch, {}});  // warm, not counted
          cli::TuneGoal goal;
          goal.target_fps_gain = kTargetFpsGain;
          goal.target_latency_gain = kTargetLatencyGain;
          cli::TuneSettings settings;
          settings.seconds = tune_seconds;
          settings.reps = select_reps;
          settings.starts = select_max;
          settings.seed = seed;
          settings.reference = planner::Mapping{b_alone, planner::Mode::kSwitch, {}};
          settings.confirm_reps = reps;
          const cli::TuneResult tuned = cli::tune_mappings(dag_model, starts, goal, settings, measure, nullptr);
          std::cout << "tuning pass (co_up plan --tune --tune-target=" << kTargetFpsGain << "x," << kTargetLatencyGain
                    << "x): from the " << starts.size() << " front point" << (starts.size() == 1 ? "" : "s")
                    << " predicted nearest the target, neighbours measured " << select_reps
                    << "x each, interleaved with B alone, for " << tune_seconds << " s: " << tuned.measured.size()
                    << " mappings, " << tuned.runs << " runs (" << tuned.confirmation_runs
                    << " of them the confirmation's); its measured front below (the numbers are ratios to B alone's runs in the "
                       "same batch, medians)\n\n"
                    << "| mapping | move | mode | predicted fps / B | predicted B ms / ms | measured fps / B | measured B ms / ms |\n"
                    << "|---|---|---|---|---|---|---|\n";
          std::vector<size_t> shown_rank(tuned.measured.size(), 0);
          for (size_t k = 0; k < tuned.front.size(); ++k) {
            const cli::TunedMapping& t = tuned.measured[tuned.front[k]];
            shown_rank[tuned.front[k]] = k + 1;
            char line[512];
            std::snprintf(line, sizeof line, "| %zu | %s | %s | %.2fx | %.2fx | %.2fx | %.2fx |\n", k + 1, t.move.c_str(),
                          mode_name(t.candidate.mapping.mode), t.candidate.prediction.throughput_fps / b_predicted.throughput_fps,
                          b_predicted.latency_ms / t.candidate.prediction.latency_ms, t.search.gains.fps,
                          t.search.gains.latency);
            std::cout << line;
          }
          std::cout << "\nconfirmation: the " << tuned.confirmed.size() << " best for the target measured " << reps
                    << "x more each, every run beside one of B alone (which first alternating); the pick on these "
                       "runs alone\n\n"
                    << "| mapping | move | search fps / B | search B ms / ms | confirmed fps / B | confirmed B ms / ms | |\n"
                    << "|---|---|---|---|---|---|---|\n";
          // The confirmation takes the best by score of everything measured: a point dominated on its
          // search runs ("-") may be among them.
          const auto rank = [&](size_t i) { return shown_rank[i] == 0 ? std::string("-") : std::to_string(shown_rank[i]); };
          for (size_t i : tuned.confirmed) {
            const cli::TunedMapping& t = tuned.measured[i];
            char line[512];
            std::snprintf(line, sizeof line, "| %s | %s | %.2fx | %.2fx | %.2fx | %.2fx | %s |\n", rank(i).c_str(),
                          t.move.c_str(), t.search.gains.fps, t.search.gains.latency, t.confirmation.gains.fps,
                          t.confirmation.gains.latency, i == tuned.pick ? "picked" : "");
            std::cout << line;
          }
          if (tuned.has_pick()) {
            chosen_plan = tuned.measured[tuned.pick].candidate;
            chosen_label = "tuned " + rank(tuned.pick) + "/" + std::to_string(tuned.front.size()) + " (" +
                           tuned.measured[tuned.pick].move + "; picked for the target on the tuning pass's confirmation runs)";
          }
          std::cout << "\n" << std::flush;
        } else if (!near.empty() && select_reps > 0) {
          measure(planner::Mapping{b_alone, planner::Mode::kSwitch, {}});  // warm, not counted
          std::cout << "selection pass: the " << near.size() << " front points predicted at >= " << kNearFpsGain
                    << "x B alone's throughput and >= " << kNearLatencyGain << "x lower latency, each measured "
                    << select_reps << "x alternating with B alone (medians)\n\n"
                    << "| point | mode | predicted fps / B | predicted B ms / ms | measured fps / B | measured B ms / ms |\n"
                    << "|---|---|---|---|---|---|\n";
          double best = -1;
          for (size_t i : near) {
            const planner::Candidate& c = pareto.ranked[i];
            const Gains& p = predicted_gains[i];
            const Gains m = measure_against_b(c.mapping, select_reps).gains();
            char line[256];
            std::snprintf(line, sizeof line, "| %zu/%zu | %s | %.2fx | %.2fx | %.2fx | %.2fx |\n", i + 1, front,
                          mode_name(c.mapping.mode), p.fps, p.latency, m.fps, m.latency);
            std::cout << line;
            if (m.target() > best) {
              best = m.target();
              chosen_plan = c;
              chosen_label = "pareto " + std::to_string(i + 1) + "/" + std::to_string(front) + " (best of " +
                             std::to_string(near.size()) + " near the target on the selection pass)";
            }
          }
          std::cout << "\n" << std::flush;
        }
        if (!chosen_label.empty()) {
          plans.push_back(chosen_plan);
          labels.push_back(chosen_label);
        }
      }
      if (explain) {
        explain_plan(g, platform, plugins, dag_model, latency.ranked.front().mapping, frames);
        if (labels.back().find("the target") != std::string::npos) {
          explain_plan(g, platform, plugins, dag_model, plans.back().mapping, frames);
        }
      }
      const std::vector<planner::SplitGroup> groups = planner::split_groups(model);
      if (!groups.empty()) {
        std::string every = b_alone;
        for (const planner::SplitGroup& g : groups) {
          for (uint32_t i = 0; i < g.parts; ++i) every[g.first + i] = i % 2 == 0 ? 'B' : 'L';
        }
        if (model.runs(every)) {
          planner::Candidate c;
          c.mapping = planner::Mapping{every, planner::Mode::kSwitch, {}};
          plans.push_back(c);
          labels.push_back("every split spread");
        }
      }
      // One run of B alone first, not counted: the first plan would otherwise run right after the
      // planner's searches, on caches and a processor thread they left cold.
      measure(planner::Mapping{b_alone, planner::Mode::kSwitch, {}});
      std::cout << "| plan | mode | kind | predicted fps | predicted ms | measured fps | measured ms | B alone ms | fps / B | B ms / ms |\n"
                << "|---|---|---|---|---|---|---|---|---|---|\n";
      for (size_t i = 0; i < plans.size(); ++i) {
        const planner::Candidate& c = plans[i];
        const AgainstB r = measure_against_b(c.mapping, reps);
        const planner::Prediction p = dag_model.predict_run(c.mapping);
        char line[512];
        std::snprintf(line, sizeof line, "| %s | %s | %s | %.1f | %.3f | %.1f | %.3f | %.3f | %.2fx | %.2fx |\n",
                      labels[i].c_str(), mode_name(c.mapping.mode),
                      planner::para_pipe_kind(dag_model, c.mapping).c_str(), p.throughput_fps, p.latency_ms,
                      r.fps, r.ms, r.b_ms, r.gains().fps, r.gains().latency);
        std::cout << line;
      }
      std::cout << "\n";
      for (size_t i = 0; i < plans.size(); ++i) {
        std::cout << labels[i] << ": " << planner::command_line(model, plans[i].mapping) << "\n";
      }
      std::cout << "\n" << std::flush;  // one network at a time, while the next one runs
    }
  } catch (const std::exception& e) {
    std::cerr << "co_up_bench_para_pipe: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_para_pipe", [&] { return run_para_pipe(argc, argv); });
}
