// co_up_bench_planner: how well the planner's cost model (planner/cost_model.h) predicts runs on
// this machine, and how good its best pipeline mapping is.
//
// Per zoo network, B and L (this host's two halves, cpu-xnnpack when it is built), with
// --processors=BLGN also G (opencl; PoCL here) and N (npu-int8, simulated on the CPU):
//   1. profile: `co_up profile`'s own code (cli/profile_command.h), --repetitions frames,
//      including the hand-off per sub-graph boundary of every pair (planner/handoff_fit.h), fitted
//      on the pipeline runs of handoff_orders (2, 3 and 4 sub-graphs per pair): the *fit set*.
//      Every other mapping is *held out*: the hand-off never saw it. The tables give the error of
//      both sets apart, and of the held-out mappings by kind (2-stage splits; 3 or more
//      sub-graphs, non-contiguous; mappings using G or N).
//   2. (a) prediction error: every 2-stage split B^k L^(n-k) and L^k B^(n-k), B-only, L-only and
//      the planner's best pipeline mapping run in pipeline mode (throughput); B-only, L-only,
//      the planner's minimum-latency mapping and the two middle splits in switch mode (latency).
//      Each mapping: its own Executor, 2 warm-up frames, --frames measured
//      (cli/verify_mappings.h, as `co_up plan --verify`). Error = (predicted - measured) /
//      measured.
//      Held-out mappings beyond the splits: --random seeded random orders of 3-6 sub-graphs over
//      the profiled processors (pipeline), and two of them in switch mode.
//      The bench exits 1 when the held-out median |error| exceeds --max-heldout-error (0.25).
//   3. (b) the planner's best pipeline mapping against the best 2-stage split found by measuring
//      all of them: both re-measured --reps times, interleaved (machine noise hits both alike),
//      medians compared.
// Quiet-run guard: this host's 2 cores are shared with other work, which makes single runs
// meaningless (a core shared 50/50 doubles a stage's time). Every profile and every run is
// preceded by a wait for a quiet machine and followed by a check of the CPU time *other*
// processes (and the hypervisor: steal) took meanwhile, from /proc/stat minus this process's own
// time; above --max-foreign (default 5 % of the machine) it is redone, up to --attempts times, and
// the tables flag what was accepted contended.
// Prints markdown tables; --json=FILE writes every number.
//
// Options: --networks=a,b --processors=BL|BLG|BLN|BLGN --random=N --max-heldout-error=F
//          --frames=N --min-seconds=S --repetitions=N --reps=R --image-size=S
//          --max-foreign=F --attempts=N --plugins=DIR --json=FILE --quick --help
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/bench_text.h"
#include "core/bound_processor.h"
#include "cli/profile_command.h"
#include "cli/verify_mappings.h"
#include "core/error.h"
#include "core/network.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "planner/cost_model.h"
#include "planner/handoff_fit.h"
#include "planner/random_order.h"
#include "planner/search.h"
#include "profiler/report.h"

#ifndef CO_UP_PLUGIN_DIR
#define CO_UP_PLUGIN_DIR ""
#endif

namespace co_up::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Options {
  std::vector<std::string> networks = {"alexnet", "googlenet", "mobilenet", "resnet50", "squeezenet"};
  int frames = 10;       // measured frames per mapping run
  int repetitions = 10;  // frames per profile measurement
  int reps = 3;          // (b): interleaved re-measurements
  double min_seconds = 1.0;   // a mapping run lasts at least this long (more frames if fast)
  double max_foreign = 0.05;  // fraction of the machine other processes may use during a run
  int attempts = 5;           // runs redone at most this often when the machine was busy
  int64_t image_size = 0;
  std::string plugins = CO_UP_PLUGIN_DIR;
  std::string json_out;
  std::string processors = "BL";   // profiled and mapped; B and L always
  int random_orders = 6;           // held-out random orders of 3-6 sub-graphs per network
  double max_heldout_error = 0.25;  // exit 1 when the held-out median |error| is larger
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (const BenchOption& a : read_options(argc, argv)) {
    if (a.is("networks")) {
      o.networks = a.list();
    } else if (a.is("processors")) {
      o.processors = a.string();
      if (o.processors.size() < 2 || o.processors.substr(0, 2) != "BL" ||
          o.processors.find_first_not_of("BLGN") != std::string::npos) {
        throw InputError("--processors=" + a.value + ": B and L first, then G and/or N (BL, BLG, BLN, BLGN)");
      }
    } else if (a.is("random")) {
      o.random_orders = static_cast<int>(a.integer(0, 100000));
    } else if (a.is("max-heldout-error")) {
      o.max_heldout_error = a.real(0, 1e6);
    } else if (a.is("frames")) {
      o.frames = static_cast<int>(a.integer(2, 10000000));
    } else if (a.is("repetitions")) {
      o.repetitions = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("min-seconds")) {
      o.min_seconds = a.real(0, 1e6);
    } else if (a.is("max-foreign")) {
      o.max_foreign = a.real(0, 1e6);
    } else if (a.is("attempts")) {
      o.attempts = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("reps")) {
      o.reps = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("image-size")) {
      o.image_size = a.integer(1, 100000);
    } else if (a.is("plugins")) {
      o.plugins = a.string();
    } else if (a.is("json")) {
      o.json_out = a.string();
    } else if (a.is("quick")) {
      o.networks = {"squeezenet"};
      o.image_size = 64;
      o.frames = 4;
      o.repetitions = 3;
      o.reps = 1;
      o.min_seconds = 0.2;
      o.attempts = 1;
      o.max_foreign = 1.0;  // a smoke run: no waiting for a quiet machine
      o.random_orders = 2;
      o.max_heldout_error = 10.0;  // 4 frames at 64x64, no quiet guard (a loaded host: 3x off): gross errors only
    } else if (a.is("help")) {
      std::cout << "co_up_bench_planner [--networks=a,b] [--processors=BL|BLGN] [--random=N]\n"
                   "                    [--max-heldout-error=F] [--frames=N] [--min-seconds=S] [--repetitions=N]\n"
                   "                    [--reps=R] [--image-size=S] [--max-foreign=F] [--attempts=N]\n"
                   "                    [--plugins=DIR] [--json=FILE] [--quick]\n";
      std::exit(0);
    } else {
      a.unknown();
    }
  }
  return o;
}

// CPU time used by everything but this process since construction, as a fraction of the
// machine's capacity: (busy jiffies of all CPUs - this process's utime+stime) / all jiffies.
// Both files count in USER_HZ ticks. Steal (the hypervisor running other guests) counts as busy.
class ForeignLoad {
 public:
  ForeignLoad() : start_(sample()) {}
  double fraction() const {
    const Sample now = sample();
    const double total = static_cast<double>(now.total - start_.total);
    if (total <= 0) return 0;
    const double foreign = static_cast<double>((now.busy - start_.busy)) -
                           static_cast<double>(now.self - start_.self);
    return std::max(0.0, foreign / total);
  }

 private:
  struct Sample {
    uint64_t busy = 0, total = 0, self = 0;
  };
  static Sample sample() {
    Sample s;
    std::ifstream stat("/proc/stat");
    std::string cpu;
    uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    s.busy = user + nice + system + irq + softirq + steal;
    s.total = s.busy + idle + iowait;
    std::ifstream self("/proc/self/stat");
    std::string line;
    std::getline(self, line);
    // Fields after the ")" of the command name: state is field 3, utime 14, stime 15.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14 || i == 15) s.self += std::stoull(field);
    }
    return s;
  }
  Sample start_;
};

struct GuardStats {
  int runs = 0;
  int redone = 0;              // runs repeated because the machine was busy
  int accepted_contended = 0;  // still busy after --attempts: kept, flagged
  double waited_s = 0;         // waiting for a quiet machine
};

// Runs `measure` when the machine is quiet and again while it was not (see the file comment).
// Sets *contended when the last attempt still saw foreign load.
template <typename Measure>
auto guarded(const Options& o, GuardStats& stats, bool* contended, Measure measure) {
  for (int attempt = 1;; ++attempt) {
    // Wait (up to 30 s) for a 0.3 s window in which others used under the threshold.
    const auto wait_begin = std::chrono::steady_clock::now();
    for (int i = 0; o.max_foreign < 1.0 && i < 100; ++i) {  // 1.0: never wait (--quick)
      ForeignLoad window;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (window.fraction() <= o.max_foreign) break;
    }
    stats.waited_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_begin).count();
    ForeignLoad during;
    auto result = measure();
    ++stats.runs;
    const bool busy = during.fraction() > o.max_foreign;
    if (!busy || attempt >= o.attempts) {
      if (busy) ++stats.accepted_contended;
      if (contended != nullptr) *contended = busy;
      return result;
    }
    ++stats.redone;
  }
}

struct Row {
  std::string order;
  planner::Mode mode = planner::Mode::kPipeline;
  std::string what;  // "split", "B only", "planner", ...
  double predicted = 0;  // fps (pipeline) or ms (switch)
  double measured = 0;
  bool contended = false;  // accepted although other processes used the machine
  bool fit = false;        // one of the runs the hand-off was fitted on (in-sample)
  double error() const { return measured > 0 ? (predicted - measured) / measured : 0; }
};

double median_abs(const std::vector<Row>& rows, planner::Mode mode) {
  std::vector<double> errors;
  for (const Row& r : rows) {
    if (r.mode == mode) errors.push_back(std::abs(r.error()));
  }
  return profiler::median(errors);
}

// Held-out classes of a mapping (a row can be in several): "2-stage" (a contiguous B/L split),
// "3+ sub-graphs", "G/N" (uses G or N).
bool in_class(const Row& r, const std::string& cls) {
  if (cls == "all") return true;
  if (cls == "2-stage") return planner::subgraph_count(r.order) == 2 && r.order.find_first_of("GN") == std::string::npos;
  if (cls == "3+ sub-graphs") return planner::subgraph_count(r.order) >= 3;
  if (cls == "G/N") return r.order.find_first_of("GN") != std::string::npos;
  return false;
}

// Median |error| and count of the rows with fit == `fit` in class `cls` (NaN when none).
std::pair<double, size_t> median_abs_of(const std::vector<Row>& rows, bool fit, const std::string& cls) {
  std::vector<double> errors;
  for (const Row& r : rows) {
    if (r.fit == fit && in_class(r, cls)) errors.push_back(std::abs(r.error()));
  }
  return {errors.empty() ? std::nan("") : profiler::median(errors), errors.size()};
}

// `count` seeded random orders of 3-6 sub-graphs over `letters` (neighbours differ), each run
// only where every layer runs (model.runs), none of them in `exclude`.
std::vector<std::string> random_orders(const planner::CostModel& model, const std::string& letters, int count,
                                       uint64_t seed, const std::vector<std::string>& exclude) {
  std::vector<std::string> out;
  const uint32_t n = model.layer_count();
  if (n < 3) return out;
  std::mt19937_64 rng(seed);
  for (int tries = 0; static_cast<int>(out.size()) < count && tries < 1000 * count; ++tries) {
    const std::string order = planner::random_order(n, letters, rng);
    if (!model.runs(order) || std::find(exclude.begin(), exclude.end(), order) != exclude.end() ||
        std::find(out.begin(), out.end(), order) != out.end()) {
      continue;
    }
    out.push_back(order);
  }
  return out;
}

struct NetworkResult {
  std::string network;
  double profile_s = 0;
  std::vector<Row> rows;
  std::string planner_order, best_split_order;
  double planner_fps = 0, best_split_fps = 0, planner_predicted_fps = 0;
  double handoff_us = 0;  // the profile's B<->L hand-off per boundary side
  bool profile_contended = false;
  GuardStats guard;
};

NetworkResult run_network(const std::string& name, const Options& o, const Platform& platform,
                          const PluginRegistry& plugins) {
  NetworkResult result;
  result.network = name;
  const graph::Graph g = build_network({name, "layers", o.image_size, 1, ""});
  const uint32_t n = g.layer_count();
  const fs::path out = fs::temp_directory_path() / ("co_up_planner_accuracy_" + name + ".json");

  cli::ProfileJob job;
  job.graph = &g;
  job.platform = &platform;
  job.plugins = &plugins;
  job.input = seeded_inputs(g, 1);
  job.graph_name = name;
  job.image_size = o.image_size;
  job.processors = o.processors;
  job.repetitions = o.repetitions;
  job.out = out;
  job.restart = true;
  job.log = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const cli::ProfileOutcome profiled = guarded(o, result.guard, &result.profile_contended,
                                                [&] { return cli::profile_network(job); });
  result.profile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const planner::CostModel model(profiled.profile);
  if (const planner::HandoffTime* h = profiled.profile.find_handoff('B', 'L')) result.handoff_us = h->us;

  auto measure = [&](const std::string& order, planner::Mode mode, bool* contended = nullptr) {
    // Enough frames for --min-seconds of predicted work: short runs are all noise.
    const planner::Prediction p = model.predict({order, mode, {}});
    const int frames = std::max(o.frames, static_cast<int>(std::ceil(o.min_seconds * p.throughput_fps)));
    const cli::VerifySettings settings{frames, 2};
    bool busy = false;
    const cli::Measurement m = guarded(o, result.guard, &busy, [&] {
      return cli::measure_mapping(g, platform, plugins, order, mode, settings);
    });
    if (contended != nullptr) *contended = busy;
    const bool pipe = mode == planner::Mode::kPipeline;
    std::cerr << "  " << name << " " << order << " " << planner::mode_name(mode) << ": "
              << fmt("%.2f", pipe ? m.throughput_fps : m.latency_ms) << (pipe ? " fps" : " ms")
              << " (predicted " << fmt("%.2f", pipe ? p.throughput_fps : p.latency_ms) << ")"
              << (busy ? " busy" : "") << "\n";
    return pipe ? m.throughput_fps : m.latency_ms;
  };
  // The fit set: the orders each pair's hand-off was fitted on (profile_network asks
  // handoff_orders of the model it had then: layer times and transfers, no hand-offs).
  std::vector<std::string> fit_orders;
  {
    planner::LayerProfile bare = profiled.profile;
    bare.handoffs.clear();
    const planner::CostModel bare_model(bare);
    for (size_t i = 0; i < o.processors.size(); ++i) {
      for (size_t j = i + 1; j < o.processors.size(); ++j) {
        if (profiled.profile.find_handoff(o.processors[i], o.processors[j]) == nullptr) continue;
        for (const std::string& f : planner::handoff_orders(bare_model, o.processors[i], o.processors[j])) {
          fit_orders.push_back(f);
        }
      }
    }
  }
  auto add = [&](const std::string& order, planner::Mode mode, const std::string& what) {
    for (Row& r : result.rows) {
      if (r.order == order && r.mode == mode) {  // measured already
        r.what += ", " + what;
        return r.measured;
      }
    }
    const planner::Prediction p = model.predict({order, mode, {}});
    Row r{order, mode, what, mode == planner::Mode::kPipeline ? p.throughput_fps : p.latency_ms};
    r.fit = mode == planner::Mode::kPipeline &&
            std::find(fit_orders.begin(), fit_orders.end(), order) != fit_orders.end();
    r.measured = measure(order, mode, &r.contended);
    result.rows.push_back(r);
    return r.measured;
  };

  // (a) pipeline: every 2-stage split (also the search space of (b)), single processors, planner.
  const planner::PlanResult best = planner::plan(model, planner::Objective::kThroughput, 1);
  result.planner_order = best.ranked.front().mapping.order;
  result.planner_predicted_fps = best.ranked.front().prediction.throughput_fps;
  for (uint32_t k = 1; k < n; ++k) {
    for (const auto& [first, second] : {std::pair{'B', 'L'}, std::pair{'L', 'B'}}) {
      const std::string order = std::string(k, first) + std::string(n - k, second);
      const double fps = add(order, planner::Mode::kPipeline, "2-stage split");
      if (fps > result.best_split_fps) {
        result.best_split_fps = fps;
        result.best_split_order = order;
      }
    }
  }
  for (const char p : o.processors) {
    if (model.runs(std::string(n, p))) add(std::string(n, p), planner::Mode::kPipeline, std::string(1, p) + " only");
  }
  add(result.planner_order, planner::Mode::kPipeline, "planner best");
  // The fit set itself (in-sample), then held-out random orders of 3-6 sub-graphs.
  for (const std::string& f : fit_orders) add(f, planner::Mode::kPipeline, "hand-off fit");
  const std::vector<std::string> randoms =
      random_orders(model, o.processors, o.random_orders + 2, 0x5eed + n, fit_orders);
  for (size_t i = 0; i < randoms.size(); ++i) {
    add(randoms[i], i < 2 && randoms.size() > 2 ? planner::Mode::kSwitch : planner::Mode::kPipeline, "random");
  }
  // (a) switch.
  for (const char p : o.processors) {
    if (model.runs(std::string(n, p))) add(std::string(n, p), planner::Mode::kSwitch, std::string(1, p) + " only");
  }
  add(planner::shortest_path_latency(model).mapping.order, planner::Mode::kSwitch, "planner best");
  add(std::string(n / 2, 'B') + std::string(n - n / 2, 'L'), planner::Mode::kSwitch, "middle split");
  add(std::string(n / 2, 'L') + std::string(n - n / 2, 'B'), planner::Mode::kSwitch, "middle split");

  // (b) re-measure the two contenders interleaved; the first pass above was only the search.
  if (result.planner_order == result.best_split_order) {
    result.planner_fps = result.best_split_fps = measure(result.planner_order, planner::Mode::kPipeline);
  } else {
    std::vector<double> planner_fps, split_fps;
    for (int r = 0; r < o.reps; ++r) {
      planner_fps.push_back(measure(result.planner_order, planner::Mode::kPipeline));
      split_fps.push_back(measure(result.best_split_order, planner::Mode::kPipeline));
    }
    result.planner_fps = profiler::median(planner_fps);
    result.best_split_fps = profiler::median(split_fps);
  }
  return result;
}

int run(const Options& o) {
  const Platform platform = detect_host_platform("/sys");
  const PluginRegistry plugins = PluginRegistry::load_directory(o.plugins);
  const std::shared_ptr<const Plugin> plugin = find_backend_plugin(*platform.find('B'), plugins);
  const std::string backend = plugin ? plugin->name() : std::string();
  std::cout << "# planner accuracy: platform " << platform.name << " (" << o.processors << ", B and L on " << backend
            << "), profile " << o.repetitions << " frames per run, mappings " << o.frames
            << "+ frames (at least " << o.min_seconds << " s) after 2 warm-up, (b) " << o.reps
            << " interleaved reps; runs redone while others used > " << 100 * o.max_foreign
            << " % of the machine (up to " << o.attempts << " attempts)\n\n";
  std::vector<NetworkResult> results;
  for (const std::string& name : o.networks) {
    std::cerr << "planner_accuracy: " << name << "...\n";
    results.push_back(run_network(name, o, platform, plugins));
  }

  std::cout << "## (a) prediction error per mapping (fit: a run the hand-off was fitted on)\n\n"
            << "| network | mapping | mode | what | predicted | measured | error | set |\n"
            << "|---|---|---|---|---|---|---|---|\n";
  std::vector<Row> all;
  for (const NetworkResult& r : results) {
    for (const Row& row : r.rows) {
      const bool pipe = row.mode == planner::Mode::kPipeline;
      std::cout << "| " << r.network << " | `" << row.order << "` | " << planner::mode_name(row.mode)
                << " | " << row.what << " | " << fmt("%.2f", row.predicted) << (pipe ? " fps" : " ms")
                << " | " << fmt("%.2f", row.measured) << (pipe ? " fps" : " ms") << " | "
                << fmt("%+.1f%%", 100 * row.error()) << (row.contended ? " (busy)" : "") << " | "
                << (row.fit ? "fit" : "held out") << " |\n";
      all.push_back(row);
    }
  }
  std::cout << "\n## (a) summary: median |error|\n\n"
            << "| network | profile s | pipeline throughput (n) | switch latency (n) | runs (redone, busy) | waited s |\n|---|---|---|---|---|---|\n";
  for (const NetworkResult& r : results) {
    const auto count = [&](planner::Mode m) {
      return std::count_if(r.rows.begin(), r.rows.end(), [&](const Row& x) { return x.mode == m; });
    };
    std::cout << "| " << r.network << " | " << fmt("%.1f", r.profile_s) << " | "
              << fmt("%.1f%%", 100 * median_abs(r.rows, planner::Mode::kPipeline)) << " ("
              << count(planner::Mode::kPipeline) << ") | "
              << fmt("%.1f%%", 100 * median_abs(r.rows, planner::Mode::kSwitch)) << " ("
              << count(planner::Mode::kSwitch) << ") | " << r.guard.runs << " (" << r.guard.redone
              << ", " << r.guard.accepted_contended << (r.profile_contended ? ", profile busy" : "")
              << ") | " << fmt("%.0f", r.guard.waited_s) << " |\n";
  }
  std::vector<double> every;
  for (const Row& row : all) every.push_back(std::abs(row.error()));
  std::cout << "| **all** | | " << fmt("%.1f%%", 100 * median_abs(all, planner::Mode::kPipeline))
            << " | " << fmt("%.1f%%", 100 * median_abs(all, planner::Mode::kSwitch))
            << " | | |\n\nmedian |error| over all " << all.size() << " mappings: "
            << fmt("%.1f%%", 100 * profiler::median(every)) << "\n\n";

  // Held out against fit: the hand-off's in-sample error says nothing about other mappings.
  const std::vector<std::string> classes = {"all", "2-stage", "3+ sub-graphs", "G/N"};
  std::cout << "## (a) held out vs fit: median |error| (n)\n\n| network | fit set |";
  for (const std::string& c : classes) std::cout << " held out: " << c << " |";
  std::cout << "\n|---|---|";
  for (size_t i = 0; i < classes.size(); ++i) std::cout << "---|";
  std::cout << "\n";
  auto cell = [](std::pair<double, size_t> v) {
    return v.second == 0 ? std::string("-") : fmt("%.1f%%", 100 * v.first) + " (" + std::to_string(v.second) + ")";
  };
  std::vector<std::pair<std::string, const std::vector<Row>*>> groups;
  for (const NetworkResult& r : results) groups.emplace_back(r.network, &r.rows);
  groups.emplace_back("**all**", &all);
  for (const auto& [name, rows] : groups) {
    std::cout << "| " << name << " | " << cell(median_abs_of(*rows, true, "all")) << " |";
    for (const std::string& c : classes) std::cout << " " << cell(median_abs_of(*rows, false, c)) << " |";
    std::cout << "\n";
  }
  const auto heldout = median_abs_of(all, false, "all");
  const bool heldout_ok = heldout.second > 0 && heldout.first <= o.max_heldout_error;
  std::cout << "\nheld-out median |error| " << fmt("%.1f%%", 100 * heldout.first) << " over " << heldout.second
            << " mappings: " << (heldout_ok ? "within" : "OVER") << " the bound "
            << fmt("%.0f%%", 100 * o.max_heldout_error) << "\n\n";

  std::cout << "## (b) planner's best pipeline mapping vs the best measured 2-stage split\n\n"
            << "| network | hand-off us | planner mapping | predicted fps | measured fps | best 2-stage split | measured fps | planner / best |\n"
            << "|---|---|---|---|---|---|---|---|\n";
  for (const NetworkResult& r : results) {
    std::cout << "| " << r.network << " | " << fmt("%.0f", r.handoff_us) << " | `" << r.planner_order << "` | "
              << fmt("%.2f", r.planner_predicted_fps) << " | " << fmt("%.2f", r.planner_fps)
              << " | `" << r.best_split_order << "` | " << fmt("%.2f", r.best_split_fps) << " | "
              << fmt("%.3f", r.best_split_fps > 0 ? r.planner_fps / r.best_split_fps : 0) << " |\n";
  }

  if (!o.json_out.empty()) {
    json j = json::array();
    for (const NetworkResult& r : results) {
      json rows = json::array();
      for (const Row& row : r.rows) {
        rows.push_back({{"order", row.order}, {"mode", planner::mode_name(row.mode)},
                        {"what", row.what}, {"predicted", row.predicted},
                        {"measured", row.measured}, {"error", row.error()},
                        {"contended", row.contended}, {"fit", row.fit}});
      }
      j.push_back({{"network", r.network}, {"profile_s", r.profile_s}, {"rows", rows},
                   {"planner_order", r.planner_order}, {"planner_fps", r.planner_fps},
                   {"planner_predicted_fps", r.planner_predicted_fps}, {"handoff_us", r.handoff_us},
                   {"best_split_order", r.best_split_order}, {"best_split_fps", r.best_split_fps}});
    }
    std::ofstream(o.json_out) << j.dump(1) << "\n";
  }
  if (!heldout_ok) {
    std::cerr << "co_up_bench_planner: held-out median |error| " << fmt("%.1f%%", 100 * heldout.first)
              << " exceeds --max-heldout-error=" << o.max_heldout_error << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace co_up::bench

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_planner", [&] {
    return co_up::bench::run(co_up::bench::parse_options(argc, argv));
  });
}
