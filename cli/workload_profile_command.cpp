#include "cli/workload_profile_command.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <exception>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/layer_profiler.h"
#include "cli/profile_command.h"
#include "core/calibration.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/io/output_file.h"
#include "core/network.h"
#include "core/placement.h"
#include "planner/contention_model.h"
#include "planner/workload_profile.h"
#include "core/workload.h"

namespace co_up::cli {
namespace {

namespace fs = std::filesystem;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct FrameSpan {
  int64_t start_ns, end_ns;
  int64_t cpu_ns = 0;       // the processor thread's CPU time in the frame's sub-graph runs
  int64_t transfer_ns = 0;  // wall time of its input copies and output sends (outside those runs)
};

std::vector<FrameSpan> spans_of(const profiler::RunProfile& p) {
  std::vector<FrameSpan> out;
  for (size_t f = 0; f < p.frame_end_ns.size() && f < p.frame_start_ns.size(); ++f) {
    out.push_back({p.frame_start_ns[f], p.frame_end_ns[f]});
  }
  for (const profiler::Event& e : p.events) {
    if (e.frame >= out.size()) continue;
    if (e.kind == profiler::EventKind::kSubGraph && e.thread_cpu_ns > 0) out[e.frame].cpu_ns += e.thread_cpu_ns;
    if (e.kind == profiler::EventKind::kTransfer) out[e.frame].transfer_ns += e.end_ns - e.begin_ns;
  }
  return out;
}

// A frame's cost in a co-run comparison: its processor thread's CPU time where that thread does
// all of the work itself, else its wall time. CPU time grows with what co-running costs (cache and
// memory stalls count as CPU time) but not with time the thread waited for a core: on a shared host
// another process's burst, or the scheduler putting both co-run threads on one core for a while,
// doubled wall times (+50 to +180 % "slowdowns" in single co-runs, -60 % in others) and the
// planner predicted plans 15-35 % slower than they ran.
// The CPU-time cost adds the frame's transfers (input copy, output send: short, and on the
// processor thread), so both costs cover what a whole frame does and scale_to_whole_runs can take
// the profile's input time off either.
double frame_us(const FrameSpan& s, bool cpu_time) {
  return static_cast<double>(cpu_time && s.cpu_ns > 0 ? s.cpu_ns + s.transfer_ns : s.end_ns - s.start_ns) / 1e3;
}

std::unique_ptr<Executor> executor_for(const CoRunParty& party, const Platform& platform, const PluginRegistry& plugins) {
  ExecutorOptions options;
  options.mode = Mode::kSwitch;
  options.profile_level = 1;  // sub-graph events with the thread's CPU time
  return std::make_unique<Executor>(Placement::create(*party.graph, party.order, platform, plugins), options);
}

struct FrameTimes {
  std::vector<double> cost_us;  // frame_us of each frame
};

FrameTimes solo_frames(Executor& e, const CoRunParty& party, int frames) {
  RunRequest request;
  request.input_sets.push_back(party.input);
  request.frames = static_cast<uint64_t>(frames);
  FrameTimes t;
  for (const FrameSpan& s : spans_of(e.run(request).profile)) t.cost_us.push_back(frame_us(s, party.cpu_time));
  return t;
}

// A CPU cluster with one thread: its backend computes on the processor thread itself, so that
// thread's CPU time is the whole of a frame's work.
bool computes_on_its_thread(const ProcessorSpec& p) {
  const size_t threads = p.threads > 0 ? static_cast<size_t>(p.threads) : p.cores.size();
  return p.is_cpu() && threads == 1;
}

}  // namespace

namespace {

// One co-run of the two parties: each thread runs `frames` frames per call until both have that
// many frames inside the other's activity (started after the other's first frame started, ended
// before the other's latest frame ended); the one that gets there first keeps running, so the
// other is measured under contention to its last frame. (Counting frames by their start alone let
// a thread that was descheduled while the other ran count frames that ran after the other had
// stopped, so that no frame of it was left inside the common window on a loaded host.) (Not one frame per call: each run()
// starts its processor threads, and the gaps between calls would be time without contention.)
// Returns each party's frame costs (frame_us) of the frames that ran while the other was running.
std::array<std::vector<double>, 2> run_together(const std::array<const CoRunParty*, 2>& party,
                                                const std::array<std::unique_ptr<Executor>, 2>& exec, int frames) {
  std::array<std::vector<FrameSpan>, 2> spans;
  std::atomic<int> reached{0};
  std::array<std::atomic<int64_t>, 2> first_start{};  // each party's first frame start, once known
  std::array<std::atomic<int64_t>, 2> last_end{};     // each party's latest frame end so far
  std::array<std::exception_ptr, 2> error{};
  const auto body = [&](int i) {
    try {
      RunRequest request;
      request.input_sets.push_back(party[i]->input);
      request.frames = static_cast<uint64_t>(frames);
      bool counted = false;
      while (reached.load() < 2) {
        const RunResult r = exec[i]->run(request);
        for (const FrameSpan& s : spans_of(r.profile)) spans[i].push_back(s);
        if (r.profile.frames_completed == 0) throw RuntimeError("a co-run frame did not complete");
        if (first_start[i].load() == 0) first_start[i].store(spans[i].front().start_ns);
        last_end[i].store(spans[i].back().end_ns);
        // Frames that ran while the other party was running ran under contention.
        const int64_t other_first = first_start[1 - i].load();
        const int64_t other_last = last_end[1 - i].load();
        const auto inside = other_first == 0 ? 0 : std::count_if(spans[i].begin(), spans[i].end(), [&](const FrameSpan& s) {
          return s.start_ns >= other_first && s.end_ns <= other_last;
        });
        if (!counted && inside >= frames) {
          counted = true;
          reached.fetch_add(1);
        }
      }
    } catch (...) {
      error[i] = std::current_exception();
      reached.store(2);  // let the other thread stop too
    }
  };
  std::thread t0(body, 0), t1(body, 1);
  t0.join();
  t1.join();
  for (const std::exception_ptr& e : error) {
    if (e) std::rethrow_exception(e);
  }
  const int64_t begin = std::max(spans[0].front().start_ns, spans[1].front().start_ns);
  const int64_t end = std::min(spans[0].back().end_ns, spans[1].back().end_ns);
  std::array<std::vector<double>, 2> co;
  for (int i = 0; i < 2; ++i) {
    for (const FrameSpan& s : spans[i]) {
      if (s.start_ns >= begin && s.end_ns <= end) co[i].push_back(frame_us(s, party[i]->cpu_time));
    }
    if (co[i].empty()) throw RuntimeError("co-run: order '" + party[i]->order + "' completed no frame while the other ran");
  }
  return co;
}

}  // namespace

CoRunTimes measure_corun(const CoRunParty& a, const CoRunParty& b, const Platform& platform,
                         const PluginRegistry& plugins, int frames) {
  const std::array<const CoRunParty*, 2> party = {&a, &b};
  const std::array<std::unique_ptr<Executor>, 2> exec = {executor_for(a, platform, plugins),
                                                         executor_for(b, platform, plugins)};
  for (int i = 0; i < 2; ++i) solo_frames(*exec[i], *party[i], kWarmupFrames + party[i]->warmup_extra);  // discarded
  // Rounds of (a alone, b alone, both): each round's slowdown compares frames seconds apart, so a
  // machine whose speed drifts (a shared host: up to 2x within a minute) biases it less than one
  // solo run against one co-run would; the median over rounds is kept.
  const int per_round = std::max(2, (frames + kCoRunRounds - 1) / kCoRunRounds);
  std::array<std::vector<double>, 2> solo_all, ratios, co_all;
  for (int round = 0; round < kCoRunRounds; ++round) {
    std::array<double, 2> solo_median{};
    for (int i = 0; i < 2; ++i) {
      const FrameTimes s = solo_frames(*exec[i], *party[i], per_round);
      solo_all[i].insert(solo_all[i].end(), s.cost_us.begin(), s.cost_us.end());
      solo_median[i] = median(s.cost_us);
    }
    const std::array<std::vector<double>, 2> co = run_together(party, exec, per_round);
    for (int i = 0; i < 2; ++i) {
      co_all[i].insert(co_all[i].end(), co[i].begin(), co[i].end());
      if (solo_median[i] > 0) ratios[i].push_back(median(co[i]) / solo_median[i]);
    }
  }
  CoRunTimes t;
  for (int i = 0; i < 2; ++i) {
    t.solo_us[i] = median(solo_all[i]);
    t.corun_us[i] = t.solo_us[i] * median(ratios[i]);
    t.corun_frames[i] = co_all[i].size();
  }
  return t;
}

int run_workload_profile_command(const Options& o, StopSignal& stop) {
  if (o.profile_out.empty()) {
    throw InputError("co_up profile --workload needs --profile-out=FILE (where the workload profile goes)");
  }
  if (!o.graph.empty() || !o.model.empty() || !o.order.empty()) {
    throw InputError("co_up profile --workload takes its networks from the workload file; drop --graph/--model/--order");
  }
  const io::OutputFile output = io::OutputFile::check(o.profile_out, "--profile-out");
  const Workload spec = read_workload(o.workload, Orders::kOptional);
  const fs::path plugin_dir = o.plugins.empty() ? PluginRegistry::default_directory() : fs::path(o.plugins);
  if (!o.plugins.empty() && !fs::is_directory(plugin_dir)) throw InputError("--plugins='" + o.plugins + "' is not a directory");
  Platform platform = o.platform.empty() ? detect_host_platform(o.sysfs_root) : load_platform(o.platform);
  apply_overrides(platform, {o.threads, o.cores, o.threads_little, o.cores_little, o.host_gpu, o.host_npu});
  check_cores_exist(platform);
  const PluginRegistry registry = PluginRegistry::load_directory(plugin_dir);
  const std::string calibrating = set_calibration_frames(platform, registry, static_cast<int>(o.calibration));
  const int repetitions = o.repetitions > 0 ? o.repetitions : kDefaultRepetitions;

  // The graphs first: a bad network is an input error before anything is measured.
  std::vector<graph::Graph> graphs;
  for (const WorkloadNetwork& n : spec.networks) {
    NetworkSpec ns{n.graph, "layers", n.image_size, o.seed, o.data};
    ns.split = n.split;
    ns.model = n.model;
    try {
      graphs.push_back(build_network(ns));
    } catch (const InputError& e) {
      throw InputError("workload network '" + n.name + "': " + e.what());
    }
  }

  planner::WorkloadProfile wp;
  wp.platform_name = platform.name;
  std::vector<std::vector<std::vector<float>>> inputs;
  std::vector<std::unique_ptr<LayerProfiler>> profilers;
  MeasureSettings settings;
  settings.frames = repetitions;
  settings.warmup_frames = kWarmupFrames;
  settings.rounds = kRounds;
  settings.calibrating = calibrating;
  settings.calibration_frames = static_cast<int>(o.calibration);
  const auto stopped = [&] { return stop.stopped(); };
  for (size_t i = 0; i < spec.networks.size() && !stopped(); ++i) {
    const WorkloadNetwork& n = spec.networks[i];
    const graph::Graph& g = graphs[i];
    ProfileJob job;
    job.graph = &g;
    job.platform = &platform;
    job.plugins = &registry;
    job.graph_name = n.graph;
    job.model = n.model;
    job.split = n.split;
    job.image_size = n.image_size;
    job.processors = o.processors;
    job.repetitions = repetitions;
    job.log = &std::cerr;
    planner::LayerProfile lp = profile_skeleton(job);
    const std::string letters = lp.letters();
    if (wp.processors.empty()) wp.processors = letters;
    inputs.push_back(seeded_inputs(g, o.seed));
    profilers.push_back(std::make_unique<LayerProfiler>(g, platform, registry, inputs.back(), settings));
    std::cerr << "co_up profile: network '" << n.name << "': layers on " << letters << "\n";
    const std::vector<LayerMeasurement> m = profilers.back()->measure_layers(letters, 0);
    for (size_t p = 0; p < letters.size(); ++p) {
      lp.layer_times.push_back(m[p].times);
      lp.input_transfer_us[letters[p]] = m[p].input_us;
    }
    lp.completed.push_back("layers:" + letters + ":0");
    if (g.layer_count() >= 2) {
      for (size_t x = 0; x < letters.size() && !stopped(); ++x) {
        for (size_t y = x + 1; y < letters.size() && !stopped(); ++y) {
          std::cerr << "co_up profile: network '" << n.name << "': transfers " << letters[x] << "<->" << letters[y] << "\n";
          const auto [xy, yx] = profilers.back()->measure_transfers(letters[x], letters[y]);
          lp.transfers.push_back(xy);
          lp.transfers.push_back(yx);
          lp.completed.push_back(std::string("transfers:") + letters[x] + ":" + letters[y]);
        }
      }
    }
    planner::WorkloadProfileNetwork w;
    w.name = n.name;
    w.graph = n.graph;
    w.model = n.model;
    w.split = n.split;
    w.image_size = n.image_size;
    for (const graph::Tensor& t : g.tensors()) {
      if (t.is_constant) w.weight_bytes += static_cast<int64_t>(t.desc.byte_size());
    }
    for (const planner::ProfileLayer& l : lp.network.layers) {
      w.activation_bytes += l.output_bytes;
      w.macs += l.macs;
    }
    w.profile = std::move(lp);
    wp.networks.push_back(std::move(w));
  }

  // Network i (graph g: its own, or built for a batch) whole on one processor: its layers there,
  // those the processor declines on its host.
  const auto whole_party = [&](const graph::Graph& g, std::vector<std::vector<float>> input, size_t i, char letter) {
    CoRunParty p{&g, std::move(input), std::string(g.layer_count(), letter)};
    const ProcessorSpec* ps = platform.find(letter);
    for (const auto& [layer, why] : profilers[i]->declined_layers(letter)) p.order[layer] = ps->host;
    if (p.order.find_first_of(calibrating) != std::string::npos) p.warmup_extra = static_cast<int>(o.calibration);
    p.cpu_time = computes_on_its_thread(*ps);
    return p;
  };

  // Batch times (planner/batch_time.h): each zoo network whole on each processor alone at
  // kProfiledBatches, in interleaved rounds, a frame costed as the co-runs cost it.
  for (size_t i = 0; i < profilers.size() && !stopped(); ++i) {
    const WorkloadNetwork& net = spec.networks[i];
    if (!net.model.empty()) continue;
    std::vector<graph::Graph> batched;
    for (uint32_t b : kProfiledBatches) {
      NetworkSpec ns{net.graph, "layers", net.image_size, o.seed, o.data};
      ns.split = net.split;
      ns.batch = b;
      batched.push_back(build_network(ns));
    }
    for (char letter : wp.processors) {
      if (stopped()) break;
      std::cerr << "co_up profile: network '" << net.name << "': batch times on " << letter << "\n";
      std::vector<CoRunParty> parties;
      std::vector<std::unique_ptr<Executor>> executors;
      std::vector<std::vector<double>> costs(batched.size());
      for (const graph::Graph& g : batched) {
        CoRunParty p = whole_party(g, seeded_inputs(g, o.seed), i, letter);
        executors.push_back(executor_for(p, platform, registry));
        solo_frames(*executors.back(), p, kWarmupFrames + p.warmup_extra);  // discarded
        parties.push_back(std::move(p));
      }
      const int per_round = std::max(2, (repetitions + kCoRunRounds - 1) / kCoRunRounds);
      for (int r = 0; r < kCoRunRounds && !stopped(); ++r) {
        for (size_t j = 0; j < batched.size(); ++j) {
          const std::vector<double> c = solo_frames(*executors[j], parties[j], per_round).cost_us;
          costs[j].insert(costs[j].end(), c.begin(), c.end());
        }
      }
      std::vector<planner::BatchTime>& points = wp.networks[i].batch_times[letter];
      for (size_t j = 0; j < batched.size(); ++j) points.push_back({kProfiledBatches[j], median(costs[j])});
    }
  }

  // Co-runs: per processor pair, network pairs with different networks first.
  const size_t n = wp.networks.size();
  std::vector<std::pair<size_t, size_t>> combos;
  for (size_t s = 1; s <= n; ++s) {
    for (size_t i = 0; i < n; ++i) combos.push_back({i, (i + s) % n});
  }
  const size_t per_pair = static_cast<size_t>(o.coruns > 0 ? o.coruns : kDefaultCoRunsPerPair);
  int corun = 0;
  const std::string& letters = wp.processors;
  for (size_t x = 0; x < letters.size() && !stopped(); ++x) {
    for (size_t y = x + 1; y < letters.size() && !stopped(); ++y) {
      for (size_t c = 0; c < combos.size() && c < per_pair && !stopped(); ++c) {
        const auto [ia, ib] = combos[c];
        const planner::WorkloadProfileNetwork& na = wp.networks[ia];
        const planner::WorkloadProfileNetwork& nb = wp.networks[ib];
        const auto party = [&](size_t i, char letter) { return whole_party(graphs[i], inputs[i], i, letter); };
        std::cerr << "co_up profile: co-run " << na.name << " on " << letters[x] << " with " << nb.name << " on "
                  << letters[y] << "\n";
        const CoRunTimes t = measure_corun(party(ia, letters[x]), party(ib, letters[y]), platform, registry, repetitions);
        planner::CoRunSample s;
        s.corun = corun;
        s.victim = na.name;
        s.aggressor = nb.name;
        s.victim_processor = letters[x];
        s.aggressor_processor = letters[y];
        s.victim_features = planner::features_of(na, letters[x]);
        s.aggressor_features = planner::features_of(nb, letters[y]);
        s.solo_us = t.solo_us[0];
        s.corun_us = t.corun_us[0];
        wp.coruns.push_back(s);
        std::swap(s.victim, s.aggressor);
        std::swap(s.victim_processor, s.aggressor_processor);
        std::swap(s.victim_features, s.aggressor_features);
        s.solo_us = t.solo_us[1];
        s.corun_us = t.corun_us[1];
        wp.coruns.push_back(s);
        ++corun;
      }
    }
  }
  auto [fitted, held] = planner::split_held_out(wp.coruns, 3);
  if (!fitted.empty()) {
    wp.contention = planner::ContentionModel::fit(fitted);
    wp.held_out_error = planner::held_out_error(*wp.contention, held);
    wp.held_out_pair_mean = planner::held_out_error_of_pair_mean(fitted, held);
    for (const planner::CoRunSample& s : held) {
      if (wp.held_out_coruns.empty() || wp.held_out_coruns.back() != s.corun) wp.held_out_coruns.push_back(s.corun);
    }
  }
  output.write(planner::workload_profile_json(wp));

  std::ostream& out = std::cout;
  out << "workload profile of " << o.workload << " (" << wp.networks.size() << " networks, processors " << letters
      << ") written to " << o.profile_out << "\n";
  out << "co-runs (slowdown = co-run / alone - 1):\n";
  for (const planner::CoRunSample& s : wp.coruns) {
    char line[256];
    std::snprintf(line, sizeof line, "  #%-3d %-14s on %c with %-14s on %c: alone %9.2f ms, co-run %9.2f ms, %+6.1f %%%s\n",
                  s.corun, s.victim.c_str(), s.victim_processor, s.aggressor.c_str(), s.aggressor_processor,
                  s.solo_us / 1e3, s.corun_us / 1e3, 100 * s.slowdown(),
                  std::find(wp.held_out_coruns.begin(), wp.held_out_coruns.end(), s.corun) != wp.held_out_coruns.end()
                      ? "  (held out)" : "");
    out << line;
  }
  for (const planner::WorkloadProfileNetwork& w : wp.networks) {
    for (const auto& [letter, points] : w.batch_times) {
      out << "batch times of " << w.name << " on " << letter << " (whole frames alone; ms per frame, per request):";
      for (const planner::BatchTime& t : points) {
        char item[96];
        std::snprintf(item, sizeof item, " b%u %.2f, %.2f;", t.batch, t.frame_us / 1e3, t.frame_us / 1e3 / t.batch);
        out << item;
      }
      out << "\n";
    }
  }
  if (wp.contention) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "slowdown regression: fitted to %zu co-runs, held-out error over %zu predictions (%zu co-runs): "
                  "mean %.1f points, max %.1f points (%.1f %% of co-run time)\n",
                  fitted.size() / 2, wp.held_out_error.samples, wp.held_out_coruns.size(),
                  wp.held_out_error.mean_abs_points, wp.held_out_error.max_abs_points, wp.held_out_error.mean_abs_time_pct);
    out << line;
    std::snprintf(line, sizeof line,
                  "  for comparison, each processor pair's mean slowdown: mean %.1f points, max %.1f points (%.1f %%)\n",
                  wp.held_out_pair_mean.mean_abs_points, wp.held_out_pair_mean.max_abs_points,
                  wp.held_out_pair_mean.mean_abs_time_pct);
    out << line;
  }
  out.flush();
  if (stopped()) {
    std::cerr << "co_up: interrupted; '" << o.profile_out << "' has what was measured\n";
    return 128 + stop.signal_number();
  }
  return 0;
}

}  // namespace co_up::cli
