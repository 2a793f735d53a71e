// co_up_bench_pipeline: end-to-end pipeline benchmark (a program, not a timed test).
//
// Part 1, per zoo network at its default image size:
//   - B-only throughput (every unit on B, pipeline mode);
//   - the best balanced two-stage B/L split: per-unit times profiled once on B (profile level 2),
//     every contiguous split point k predicted (B^k L^(n-k) and L^k B^(n-k): the slower stage plus
//     the boundary copy), the best few candidates *measured*, for --units=layers and, where it
//     gives more split points, --units=ops, and "split": the finest of those with one op cut by
//     output channels (--split, data parallelism) where that balances better; the fastest
//     measured candidate wins.
//   B-only and candidates run back to back inside each repetition, so machine noise hits both;
//   every number is a median over repetitions.
// Part 2: Sender/Receiver transfer time per frame (kTransfer events of a two-stage pipeline of a
//   synthetic ReLU graph) against memcpy of the same bytes between 64-byte-aligned buffers, in the
//   same process: hot (one thread, buffers in cache) and cross-core (source written on core 0,
//   destination last read on core 1, as in the pipeline). Plus the synchronisation cost per frame
//   of pipelines of trivial layers with tiny tensors.
//
// Options: --quick, --networks=a,b, --frames=N, --reps=R, --candidates=C, --json=FILE,
//          --plugins=DIR, --skip-transfer, --skip-networks, --help.
#include <algorithm>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/bench_text.h"
#include "core/affinity.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/builder.h"
#include "graph/zoo/zoo.h"
#include "profiler/events.h"
#include "profiler/report.h"

#ifndef CO_UP_PLUGIN_DIR
#define CO_UP_PLUGIN_DIR ""
#endif

namespace co_up::bench {
namespace {

using nlohmann::json;
using profiler::Event;
using profiler::EventKind;
using profiler::median;

constexpr double kNsPerMs = 1e6;

struct Options {
  bool quick = false;
  bool skip_transfer = false;
  bool skip_networks = false;
  std::vector<std::string> networks;
  uint64_t frames = 0;      // 0: per network, about 1.5 s of B-only work
  int reps = 0;             // 0: mode default
  int candidates = 0;       // 0: mode default (per granularity)
  std::string json_path;
  std::string plugins = CO_UP_PLUGIN_DIR;
};

const char* kUsage =
    "usage: co_up_bench_pipeline [--quick] [--networks=a,b] [--frames=N] [--reps=R]\n"
    "                            [--candidates=C] [--json=FILE] [--plugins=DIR]\n"
    "                            [--skip-transfer] [--skip-networks]\n"
    "  --quick         fewer frames and repetitions (CI smoke run, < 60 s)\n"
    "  --networks      zoo networks to measure (default: all five)\n"
    "  --frames        frames per measured run (default: ~1.5 s of B-only work,\n"
    "                  8..30 frames; quick 6)\n"
    "  --reps          repetitions, medians reported (default 3, quick 1)\n"
    "  --candidates    predicted splits measured per granularity (default 4, quick 2)\n"
    "  --json          write every number as JSON\n"
    "  --plugins       plugin directory (default: the build's plugins/)\n";

Options parse_options(int argc, char** argv) {
  Options o;
  for (const BenchOption& a : read_options(argc, argv)) {
    if (a.is("help")) {
      std::cout << kUsage;
      std::exit(0);
    } else if (a.is("quick")) {
      o.quick = true;
    } else if (a.is("skip-transfer")) {
      o.skip_transfer = true;
    } else if (a.is("skip-networks")) {
      o.skip_networks = true;
    } else if (a.is("networks")) {
      o.networks = a.list();
    } else if (a.is("frames")) {
      o.frames = static_cast<uint64_t>(a.integer(3, 10000000));  // the first frame fills the pipeline
    } else if (a.is("reps")) {
      o.reps = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("candidates")) {
      o.candidates = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("json")) {
      o.json_path = a.string();
    } else if (a.is("plugins")) {
      o.plugins = a.string();
    } else {
      a.unknown();
    }
  }
  if (o.reps == 0) o.reps = o.quick ? 1 : 3;
  if (o.candidates == 0) o.candidates = o.quick ? 2 : 4;
  if (o.networks.empty()) {
    for (const graph::ZooEntry& e : graph::zoo_entries()) o.networks.push_back(e.name);
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// memcpy baselines

struct AlignedBuffer {
  explicit AlignedBuffer(size_t bytes)
      : data(static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64))) {
    if (data == nullptr) throw RuntimeError("out of memory allocating " + std::to_string(bytes));
    std::memset(data, 1, bytes);  // fault the pages in
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data;
};

// Median and minimum of repeated timings: the minimum is the cost free of preemption by other
// tenants, which on a shared host hits millisecond-long copies far more often than short ones.
struct Timing {
  double median_ns = 0;
  double min_ns = 0;
};

Timing timing_of(const std::vector<double>& ns) {
  if (ns.empty()) return {};
  return {median(ns), *std::min_element(ns.begin(), ns.end())};
}

int iterations_for(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((256u << 20) / std::max<size_t>(bytes, 1), 20, 2000));
}

// One thread, both buffers hot in its cache (as far as they fit): the strict baseline.
Timing memcpy_hot(size_t bytes) {
  AlignedBuffer src(bytes), dst(bytes);
  const int iterations = iterations_for(bytes);
  std::vector<double> ns;
  for (int i = 0; i < iterations + 3; ++i) {
    const int64_t t0 = profiler::now_ns();
    std::memcpy(dst.data, src.data, bytes);
    const int64_t t1 = profiler::now_ns();
    asm volatile("" : : "r"(dst.data) : "memory");
    if (i >= 3) ns.push_back(static_cast<double>(t1 - t0));
  }
  return timing_of(ns);
}

// The cache state a pipeline transfer meets: the producer (core `a`) has just written the source,
// the consumer (core `b`) last read the destination. Copy timed on core `a`.
Timing memcpy_cross_core(size_t bytes, int core_a, int core_b) {
  AlignedBuffer src(bytes), dst(bytes);
  const int iterations = std::min(iterations_for(bytes), 400);
  std::atomic<int> turn{0};  // 0: producer's turn, 1: consumer's turn, 2: stop
  std::vector<double> ns;
  const std::vector<int> saved_affinity = current_thread_affinity();
  std::thread consumer([&] {
    try {
      pin_current_thread({core_b});
    } catch (...) {
    }
    volatile uint64_t sink = 0;
    while (true) {
      int t;
      while ((t = turn.load(std::memory_order_acquire)) == 0) {
      }
      if (t == 2) break;
      uint64_t sum = 0;
      const auto* p = reinterpret_cast<const uint64_t*>(dst.data);
      for (size_t i = 0; i < bytes / 8; i += 8) sum += p[i];  // one read per cache line
      sink = sink + sum;
      turn.store(0, std::memory_order_release);
    }
  });
  try {
    pin_current_thread({core_a});
  } catch (...) {
  }
  for (int i = 0; i < iterations + 3; ++i) {
    std::memset(src.data, i & 0xff, bytes);  // the producer's last write
    const int64_t t0 = profiler::now_ns();
    std::memcpy(dst.data, src.data, bytes);
    const int64_t t1 = profiler::now_ns();
    if (i >= 3) ns.push_back(static_cast<double>(t1 - t0));
    turn.store(1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 0) {
    }
  }
  turn.store(2, std::memory_order_release);
  consumer.join();
  pin_current_thread(saved_affinity);
  return timing_of(ns);
}

// ---------------------------------------------------------------------------------------------
// Runs

struct Env {
  Platform platform;
  PluginRegistry registry;
};

struct StageStat {
  char processor = 0;
  uint32_t first_layer = 0, last_layer = 0;
  double exec_ms = 0;      // median per frame
  double transfer_ms = 0;  // median per frame, sends from this stage
};

struct BoundaryStat {
  std::string tensor;
  uint64_t bytes = 0;
  double transfer_ms = 0;  // median per frame
  double transfer_min_ms = 0;
};

struct RunStat {
  double fps = 0;
  // CPU time of the whole process over the run's wall time: the cores the run actually got
  // (B-only at most 1, a two-stage pipeline at most 2; less = waiting or preempted by others).
  double cores_used = 0;
  int64_t involuntary_switches = 0;  // preemptions (by other tenants on a shared host)
  std::vector<StageStat> stages;
  std::vector<BoundaryStat> boundaries;
};

// The 1-minute load average: on a shared 2-core host, a pipeline that needs both cores competes
// with whatever else runs, while B-only leaves a core free for it.
double load_average() {
  std::ifstream f("/proc/loadavg");
  double one = -1;
  f >> one;
  return one;
}

double event_ms(const Event& e) { return static_cast<double>(e.end_ns - e.begin_ns) / kNsPerMs; }

// `g` names the layer that produced each boundary tensor: transfer events carry the layer, so two
// boundaries of equal size (GoogLeNet's inception branches) are told apart.
RunStat summarize_run(const profiler::RunProfile& p, const graph::Graph& g) {
  std::map<std::string, uint32_t> producer_layer;
  for (const graph::Tensor& t : g.tensors()) {
    if (t.producer != graph::kNoNode) producer_layer[t.name] = g.node(t.producer).layer;
  }
  RunStat r;
  r.fps = profiler::summarize(p).throughput_fps;
  for (const profiler::SubGraphInfo& sg : p.subgraphs) {
    std::map<uint64_t, double> exec, transfer;
    for (const Event& e : p.events) {
      if (e.subgraph != sg.index) continue;
      if (e.kind == EventKind::kSubGraph) exec[e.frame] += event_ms(e);
      if (e.kind == EventKind::kTransfer) transfer[e.frame] += event_ms(e);
    }
    std::vector<double> ev, tv;
    for (auto& [f, ms] : exec) ev.push_back(ms);
    for (uint64_t f = 0; f < p.frames_completed; ++f) tv.push_back(transfer.count(f) ? transfer[f] : 0);
    r.stages.push_back({sg.processor, sg.first_layer, sg.last_layer, median(ev), median(tv)});
  }
  for (const profiler::ReceiverInfo& rcv : p.receivers) {
    std::vector<double> tv;
    for (const Event& e : p.events) {
      if (e.kind == EventKind::kTransfer && e.subgraph == rcv.source && e.peer == rcv.destination &&
          e.bytes == rcv.bytes && e.layer == producer_layer[rcv.tensor]) {
        tv.push_back(event_ms(e));
      }
    }
    r.boundaries.push_back({rcv.tensor, rcv.bytes, median(tv),
                            tv.empty() ? 0 : *std::min_element(tv.begin(), tv.end())});
  }
  return r;
}

// Balance of a two-stage pipeline: faster stage / slower stage (1 = perfect).
double stage_balance(const RunStat& r) {
  if (r.stages.size() < 2) return 1;
  double lo = 1e300, hi = 0;
  for (const StageStat& s : r.stages) {
    const double t = s.exec_ms + s.transfer_ms;
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  return hi > 0 ? lo / hi : 1;
}

struct Usage {
  double cpu_s = 0;
  int64_t nivcsw = 0;
  int64_t wall_ns = 0;
};

Usage usage_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return {sec(u.ru_utime) + sec(u.ru_stime), u.ru_nivcsw, profiler::now_ns()};
}

RunRequest make_request(const graph::Graph& g, uint64_t frames) {
  RunRequest request;
  request.frames = frames;
  request.input_sets.push_back(seeded_inputs(g, 1));
  return request;
}

std::unique_ptr<Executor> make_executor(const Env& env, const graph::Graph& g,
                                        const std::string& order, int level) {
  ExecutorOptions options;
  options.mode = ExecutionMode::kPipeline;
  options.profile_level = level;
  return std::make_unique<Executor>(g, Partition::create(g, order), env.platform, env.registry,
                                    options);
}

// One measured run: profile summary plus the cores the process got meanwhile.
RunStat measure(Executor& exec, const graph::Graph& g, const RunRequest& request) {
  const Usage before = usage_now();
  const RunResult result = exec.run(request);
  const Usage after = usage_now();
  RunStat r = summarize_run(result.profile, g);
  r.cores_used = (after.cpu_s - before.cpu_s) /
                 (static_cast<double>(after.wall_ns - before.wall_ns) / 1e9);
  r.involuntary_switches = after.nivcsw - before.nivcsw;
  return r;
}

// Per-unit execution time on B, ms per frame (median over frames).
std::vector<double> profile_units(const Env& env, const graph::Graph& g, uint64_t frames) {
  auto exec = make_executor(env, g, std::string(g.layer_count(), 'B'), 2);
  const RunRequest request = make_request(g, frames);
  const RunResult result = exec->run(request);
  std::vector<std::map<uint64_t, double>> per_frame(g.layer_count());
  for (const Event& e : result.profile.events) {
    if (e.kind == EventKind::kLayer) per_frame.at(e.layer)[e.frame] += event_ms(e);
  }
  std::vector<double> ms;
  for (const auto& m : per_frame) {
    std::vector<double> v;
    for (auto& [f, t] : m) {
      if (f > 0 || m.size() == 1) v.push_back(t);  // frame 0 warms caches and page tables
    }
    ms.push_back(median(v));
  }
  return ms;
}

// ---------------------------------------------------------------------------------------------
// Part 1: split search

struct Candidate {
  std::string units;
  std::string order;
  double predicted_ms = 0;  // slower stage, incl. boundary copy
  double predicted_balance = 0;
  uint64_t boundary_bytes = 0;
  std::vector<double> fps;  // per repetition
  std::vector<double> speedup;  // per repetition, against B-only of the same repetition
  RunStat last;
};

struct Granularity {
  std::string units;
  std::unique_ptr<graph::Graph> graph;
  std::vector<double> unit_ms;
};

std::vector<Candidate> predict(const Granularity& gr, double copy_ns_per_byte, int keep) {
  const graph::Graph& g = *gr.graph;
  const size_t n = gr.unit_ms.size();
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + gr.unit_ms[i];
  std::vector<Candidate> all;
  for (size_t k = 1; k < n; ++k) {
    for (int flip = 0; flip < 2; ++flip) {
      const char first = flip ? 'L' : 'B', second = flip ? 'B' : 'L';
      Candidate c;
      c.units = gr.units;
      c.order = std::string(k, first) + std::string(n - k, second);
      const Partition part = Partition::create(g, c.order);
      for (const Edge& e : part.edges()) {
        if (e.source == kGraphInput) continue;
        c.boundary_bytes += g.tensor(e.tensor).desc.byte_size() * e.destinations.size();
      }
      const double s1 = prefix[k] + static_cast<double>(c.boundary_bytes) * copy_ns_per_byte / kNsPerMs;
      const double s2 = prefix[n] - prefix[k];
      c.predicted_ms = std::max(s1, s2);
      c.predicted_balance = std::min(s1, s2) / std::max(s1, s2);
      all.push_back(std::move(c));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    return a.predicted_ms < b.predicted_ms;
  });
  if (all.size() > static_cast<size_t>(keep)) all.resize(static_cast<size_t>(keep));
  return all;
}

// Data parallelism: the unit of `gr` whose compute op, cut by output channels into up to 8
// slices of >= 32 channels (--split), would give the best-balanced two-stage split, as
// "UNIT:PARTS"; empty when that is no better than the best split at unit boundaries.
std::string best_split(const Granularity& gr) {
  const graph::Graph& g = *gr.graph;
  const std::vector<graph::LayerUnit> units = g.layers();
  auto balance = [](const std::vector<double>& t) {
    const double total = std::accumulate(t.begin(), t.end(), 0.0);
    double best = 0, prefix = 0;
    for (size_t k = 0; k + 1 < t.size(); ++k) {
      prefix += t[k];
      best = std::max(best, std::min(prefix, total - prefix) / std::max(prefix, total - prefix));
    }
    return best;
  };
  double best = balance(gr.unit_ms) + 0.02;
  std::string split;
  for (size_t i = 0; i < units.size(); ++i) {
    int64_t channels = 0;
    for (const graph::NodeId id : units[i].nodes) {
      const graph::Node& n = g.node(id);
      if (graph::is_compute_op(n.op)) channels = g.tensor(n.inputs.at(1)).desc.shape.at(0);
    }
    if (channels == 0) continue;  // no convolution or fully connected op to cut
    // Up to 8 slices of >= 32 channels: with 4, AlexNet's boundary inside fc6 (40 % of a frame)
    // could only fall at quarters, a 0.87 balance; eighths reach 0.92. 32-channel slices keep
    // co_up's AVX-512 convolution (avx512_conv_wins) on 28x28 and larger images.
    const int parts = static_cast<int>(std::clamp<int64_t>(channels / 32, 2, 8));
    std::vector<double> t(gr.unit_ms.begin(), gr.unit_ms.begin() + static_cast<std::ptrdiff_t>(i));
    t.insert(t.end(), static_cast<size_t>(parts), gr.unit_ms[i] / parts);
    t.insert(t.end(), gr.unit_ms.begin() + static_cast<std::ptrdiff_t>(i) + 1, gr.unit_ms.end());
    if (const double b = balance(t); b > best) {
      best = b;
      split = std::to_string(i) + ":" + std::to_string(parts);
    }
  }
  return split;
}

struct NetworkResult {
  std::string name;
  std::string split;  // the "split" granularity: --units=... --split=..., "" when not tried
  std::vector<double> b_only_fps;
  RunStat b_only_last;
  double b_only_profile_ms = 0;  // sum of per-unit medians
  std::vector<Candidate> candidates;
  size_t best = 0;
  std::map<std::string, uint32_t> unit_counts;
  std::map<std::string, std::vector<double>> unit_ms;  // per granularity profiled
  uint64_t frames = 0;
};

NetworkResult bench_network(const Env& env, const Options& o, const std::string& name,
                            double copy_ns_per_byte) {
  NetworkResult nr;
  nr.name = name;
  const uint64_t profile_frames = o.quick ? 3 : 6;

  std::vector<Granularity> grains;
  for (const char* units : {"layers", "ops"}) {
    Granularity gr;
    gr.units = units;
    gr.graph = std::make_unique<graph::Graph>(build_network({name, units, 0, 1, ""}));
    nr.unit_counts[units] = gr.graph->layer_count();
    if (gr.units == "ops" && gr.graph->layer_count() <= grains[0].graph->layer_count()) {
      continue;  // no finer split points (AlexNet: one compute op per layer)
    }
    gr.unit_ms = profile_units(env, *gr.graph, profile_frames);
    nr.unit_ms[units] = gr.unit_ms;
    grains.push_back(std::move(gr));
  }
  // Data parallelism: the finest granularity with one op cut into slices, where that balances
  // better (AlexNet: fc6 is 40 % of the frame). A grouped convolution cannot be split: skipped.
  if (const std::string split = best_split(grains.back()); !split.empty()) {
    NetworkSpec spec{name, grains.back().units, 0, 1, ""};
    spec.split = split;
    try {
      Granularity gr;
      gr.units = "split";
      gr.graph = std::make_unique<graph::Graph>(build_network(spec));
      nr.split = "--units=" + grains.back().units + " --split=" + split;
      nr.unit_counts["split"] = gr.graph->layer_count();
      gr.unit_ms = profile_units(env, *gr.graph, profile_frames);
      nr.unit_ms["split"] = gr.unit_ms;
      grains.push_back(std::move(gr));
    } catch (const InputError&) {
    }
  }
  for (double ms : grains[0].unit_ms) nr.b_only_profile_ms += ms;
  // Frames per measured run: --frames, else about 1.5 s of B-only work (8..30 frames; quick: 6).
  uint64_t frames = o.frames;
  if (frames == 0) {
    frames = o.quick ? 6
                     : std::clamp<uint64_t>(static_cast<uint64_t>(1500 / nr.b_only_profile_ms), 8,
                                            30);
  }
  nr.frames = frames;

  std::vector<const graph::Graph*> cand_graph;
  for (const Granularity& gr : grains) {
    for (Candidate& c : predict(gr, copy_ns_per_byte, o.candidates)) {
      nr.candidates.push_back(std::move(c));
      cand_graph.push_back(gr.graph.get());
    }
  }

  // Executors are set up once (weight packing is not part of throughput) and reused.
  const graph::Graph& g0 = *grains[0].graph;
  auto b_only = make_executor(env, g0, std::string(g0.layer_count(), 'B'), 1);
  std::vector<std::unique_ptr<Executor>> execs;
  for (size_t i = 0; i < nr.candidates.size(); ++i) {
    execs.push_back(make_executor(env, *cand_graph[i], nr.candidates[i].order, 1));
  }
  const RunRequest warm0 = make_request(g0, 2);
  b_only->run(warm0);
  for (size_t i = 0; i < execs.size(); ++i) execs[i]->run(make_request(*cand_graph[i], 2));

  for (int rep = 0; rep < o.reps; ++rep) {
    const RunRequest req0 = make_request(g0, frames);
    nr.b_only_last = measure(*b_only, g0, req0);
    nr.b_only_fps.push_back(nr.b_only_last.fps);
    for (size_t i = 0; i < execs.size(); ++i) {
      Candidate& c = nr.candidates[i];
      c.last = measure(*execs[i], *cand_graph[i], make_request(*cand_graph[i], frames));
      c.fps.push_back(c.last.fps);
      c.speedup.push_back(nr.b_only_last.fps > 0 ? c.last.fps / nr.b_only_last.fps : 0);
    }
  }
  for (size_t i = 1; i < nr.candidates.size(); ++i) {
    if (median(nr.candidates[i].fps) > median(nr.candidates[nr.best].fps)) nr.best = i;
  }
  return nr;
}

// ---------------------------------------------------------------------------------------------
// Part 2: transfers and synchronisation

// Two layer units of one ReLU each over `elements` floats; order "BL" puts one boundary between.
graph::Graph relu_chain(int64_t elements, int units) {
  graph::SeededWeights weights(1);
  graph::GraphBuilder b("relu_chain", weights);
  graph::TensorId x = b.input("data", {1, 1, 1, elements});
  for (int u = 0; u < units; ++u) {
    const std::string name = "relu" + std::to_string(u);
    b.begin_layer(name);
    x = b.relu(x, name);
  }
  b.output(x);
  return b.finish();
}

struct TransferResult {
  uint64_t bytes = 0;
  std::string source;  // "synthetic" or "<network> <tensor>"
  Timing transfer;
  Timing memcpy_hot;
  Timing memcpy_cross;
};

Timing synthetic_transfer(const Env& env, size_t bytes, uint64_t frames) {
  const graph::Graph g = relu_chain(static_cast<int64_t>(bytes / 4), 2);
  auto exec = make_executor(env, g, "BL", 1);
  exec->run(make_request(g, 2));
  const RunResult result = exec->run(make_request(g, frames));
  std::vector<double> ns;
  for (const Event& e : result.profile.events) {
    if (e.kind == EventKind::kTransfer && e.subgraph == 0 && e.peer == 1 && e.frame > 0) {
      ns.push_back(static_cast<double>(e.end_ns - e.begin_ns));
    }
  }
  return timing_of(ns);
}

struct SyncResult {
  std::string order;
  uint64_t frames = 0;
  double fps = 0;
  double us_per_frame = 0;
};

SyncResult sync_cost(const Env& env, const std::string& order, uint64_t frames, int reps) {
  const graph::Graph g = relu_chain(16, static_cast<int>(order.size()));
  auto exec = make_executor(env, g, order, 0);
  exec->run(make_request(g, 10));
  std::vector<double> fps;
  for (int r = 0; r < reps; ++r) {
    fps.push_back(profiler::summarize(exec->run(make_request(g, frames)).profile).throughput_fps);
  }
  SyncResult s{order, frames, median(fps), 0};
  s.us_per_frame = s.fps > 0 ? 1e6 / s.fps : 0;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Output

std::string size_label(uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024) return fmt("%.1f KiB", static_cast<double>(bytes) / 1024);
  return std::to_string(bytes) + " B";
}

json stat_json(const RunStat& r) {
  json j;
  j["fps"] = r.fps;
  j["cores_used"] = r.cores_used;
  j["involuntary_switches"] = r.involuntary_switches;
  j["stage_balance"] = stage_balance(r);
  for (const StageStat& s : r.stages) {
    j["stages"].push_back({{"processor", std::string(1, s.processor)},
                           {"first_unit", s.first_layer},
                           {"last_unit", s.last_layer},
                           {"exec_ms", s.exec_ms},
                           {"transfer_ms", s.transfer_ms}});
  }
  for (const BoundaryStat& b : r.boundaries) {
    j["boundaries"].push_back(
        {{"tensor", b.tensor}, {"bytes", b.bytes}, {"transfer_ms", b.transfer_ms}});
  }
  return j;
}

int run(const Options& o) {
  if (!std::filesystem::is_directory(o.plugins)) {
    throw InputError("plugin directory '" + o.plugins + "' does not exist (use --plugins=DIR)");
  }
  Env env{detect_host_platform("/sys"), PluginRegistry::load_directory(o.plugins)};
  check_cores_exist(env.platform);
  const ProcessorSpec* big = env.platform.find('B');
  const ProcessorSpec* little = env.platform.find('L');
  if (big == nullptr || little == nullptr) throw InputError("the host platform has no B and L");
  const int core_b = env.platform.host_cores('B').at(0);
  const int core_l = env.platform.host_cores('L').at(0);

  json out;
  out["machine"] = {{"platform", env.platform.name},
                    {"hardware_threads", std::thread::hardware_concurrency()},
                    {"B_cores", format_cores(env.platform.host_cores('B'))},
                    {"L_cores", format_cores(env.platform.host_cores('L'))},
                    {"B_threads", big->threads},
                    {"L_threads", little->threads}};
  out["load_average_start"] = load_average();
  out["settings"] = {{"quick", o.quick},
                     {"frames", o.frames == 0 ? json("auto") : json(o.frames)},
                     {"reps", o.reps},
                     {"candidates_per_granularity", o.candidates}};
  std::cout << "co_up pipeline bench: platform " << env.platform.name << ", B = cores "
            << format_cores(env.platform.host_cores('B')) << " (" << big->threads
            << " thr), L = cores " << format_cores(env.platform.host_cores('L')) << " ("
            << little->threads << " thr); " << o.reps << " reps, medians; load average " << fmt("%.2f", load_average()) << "\n";

  // Copy cost estimate for the predictions: 1 MiB memcpy (cross-core, as in the pipeline).
  const double copy_ns_per_byte = memcpy_cross_core(1 << 20, core_b, core_l).median_ns / (1 << 20);

  // Part 1
  std::vector<NetworkResult> results;
  if (!o.skip_networks) {
    for (const std::string& name : o.networks) {
      const auto t0 = std::chrono::steady_clock::now();
      results.push_back(bench_network(env, o, name, copy_ns_per_byte));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const NetworkResult& nr = results.back();
      std::cout << "  " << name << ": " << nr.candidates.size() << " candidates measured in "
                << fmt("%.1f", s) << " s, " << nr.frames << " frames per run"
                << (nr.split.empty() ? "" : "; split = " + nr.split) << "\n";
      for (const Candidate& c : nr.candidates) {
        std::cout << "    " << pad(c.units, 7) << pad(c.order, 60) << " predicted "
                  << fmt("%7.2f", c.predicted_ms) << " ms (" << fmt("%5.1f", 1000 / c.predicted_ms)
                  << " fps)  measured " << fmt("%6.2f", median(c.fps)) << " fps\n";
      }
      std::cout << std::flush;
    }
    std::cout << "\nbest two-stage split per network (medians over " << o.reps
              << " reps; speedup = pipeline fps / B-only fps of the same rep; cores = CPU time /"
                 " wall time, B-only/pipeline)\n";
    std::cout << "  network     units   frames  B-only fps  pipeline fps  speedup  balance  cores"
                 "      best order\n";
    for (const NetworkResult& nr : results) {
      const Candidate& c = nr.candidates[nr.best];
      std::cout << "  " << pad(nr.name, 12) << pad(c.units, 8)
                << pad(std::to_string(nr.frames), 8)
                << pad(fmt("%.2f", median(nr.b_only_fps)), 12)
                << pad(fmt("%.2f", median(c.fps)), 14) << pad(fmt("%.2fx", median(c.speedup)), 9)
                << pad(fmt("%.2f", stage_balance(c.last)), 9)
                << pad(fmt("%.2f", nr.b_only_last.cores_used) + "/" +
                           fmt("%.2f", c.last.cores_used), 11)
                << c.order << "\n";
    }
    std::cout << "\n  stage detail of the best split (last rep, ms/frame; solo = same units in"
                 " the B-only profile)\n";
    std::cout << "  network     stage  proc  units  exec ms  solo ms  transfer ms\n";
    for (const NetworkResult& nr : results) {
      const Candidate& c = nr.candidates[nr.best];
      const std::vector<double>& unit_ms = nr.unit_ms.at(c.units);
      for (size_t s = 0; s < c.last.stages.size(); ++s) {
        const StageStat& st = c.last.stages[s];
        double solo = 0;
        for (uint32_t u = st.first_layer; u <= st.last_layer; ++u) solo += unit_ms.at(u);
        std::cout << "  " << pad(s == 0 ? nr.name : "", 12) << pad(std::to_string(s), 7)
                  << pad(std::string(1, st.processor), 6)
                  << pad(std::to_string(st.first_layer) + "-" + std::to_string(st.last_layer), 7)
                  << pad(fmt("%.2f", st.exec_ms), 9) << pad(fmt("%.2f", solo), 9)
                  << fmt("%.3f", st.transfer_ms) << "\n";
      }
    }
    for (const NetworkResult& nr : results) {
      json j;
      j["network"] = nr.name;
      j["unit_counts"] = nr.unit_counts;
      if (!nr.split.empty()) j["split"] = nr.split;
      j["frames"] = nr.frames;
      j["unit_ms_on_B"] = nr.unit_ms;
      j["b_only"] = {{"order", "all B"},
                     {"fps_per_rep", nr.b_only_fps},
                     {"fps_median", median(nr.b_only_fps)},
                     {"profile_sum_ms", nr.b_only_profile_ms},
                     {"last", stat_json(nr.b_only_last)}};
      for (const Candidate& c : nr.candidates) {
        j["candidates"].push_back({{"units", c.units},
                                   {"order", c.order},
                                   {"predicted_stage_max_ms", c.predicted_ms},
                                   {"predicted_balance", c.predicted_balance},
                                   {"boundary_bytes", c.boundary_bytes},
                                   {"fps_per_rep", c.fps},
                                   {"fps_median", median(c.fps)},
                                   {"speedup_per_rep", c.speedup},
                                   {"speedup_median", median(c.speedup)},
                                   {"last", stat_json(c.last)}});
      }
      const Candidate& b = nr.candidates[nr.best];
      j["best"] = {{"units", b.units},
                   {"order", b.order},
                   {"fps_median", median(b.fps)},
                   {"speedup_median", median(b.speedup)},
                   {"stage_balance", stage_balance(b.last)}};
      out["networks"].push_back(j);
    }
  }

  // Part 2
  if (!o.skip_transfer) {
    std::vector<TransferResult> transfers;
    std::vector<size_t> sizes;
    for (size_t s = 4096; s <= (16u << 20); s *= 4) sizes.push_back(s);
    for (size_t bytes : sizes) {
      const uint64_t frames = o.quick ? 20 : std::clamp<uint64_t>((512u << 20) / bytes, 30, 400);
      TransferResult t;
      t.bytes = bytes;
      t.source = "synthetic";
      t.transfer = synthetic_transfer(env, bytes, frames);
      t.memcpy_hot = memcpy_hot(bytes);
      t.memcpy_cross = memcpy_cross_core(bytes, core_b, core_l);
      transfers.push_back(t);
    }
    for (const NetworkResult& nr : results) {
      const Candidate& c = nr.candidates[nr.best];
      for (const BoundaryStat& b : c.last.boundaries) {
        TransferResult t;
        t.bytes = b.bytes;
        t.source = nr.name + " " + b.tensor;
        t.transfer = {b.transfer_ms * kNsPerMs, b.transfer_min_ms * kNsPerMs};
        t.memcpy_hot = memcpy_hot(b.bytes);
        t.memcpy_cross = memcpy_cross_core(b.bytes, core_b, core_l);
        transfers.push_back(t);
      }
    }
    std::cout << "\nSender/Receiver transfer per frame vs memcpy of the same bytes, us (median and"
                 " min; target: transfer <= 1.5x memcpy)\n"
                 "  memcpy hot: one thread, buffers cached; x-core: source just written on B, "
                 "destination last read on L\n";
    std::cout << "  source                              bytes       transfer med/min    memcpy hot "
                 "med/min  ratio med/min  x-core med/min    ratio med/min\n";
    for (const TransferResult& t : transfers) {
      auto pair = [](const Timing& x) {
        return fmt("%.2f", x.median_ns / 1e3) + "/" + fmt("%.2f", x.min_ns / 1e3);
      };
      auto ratio = [](const Timing& a, const Timing& b) {
        return fmt("%.2fx", a.median_ns / b.median_ns) + "/" + fmt("%.2fx", a.min_ns / b.min_ns);
      };
      std::cout << "  " << pad(t.source, 36) << pad(size_label(t.bytes), 12)
                << pad(pair(t.transfer), 20) << pad(pair(t.memcpy_hot), 20)
                << pad(ratio(t.transfer, t.memcpy_hot), 15) << pad(pair(t.memcpy_cross), 18)
                << ratio(t.transfer, t.memcpy_cross) << "\n";
      out["transfers"].push_back(
          {{"source", t.source},
           {"bytes", t.bytes},
           {"transfer_ns", {{"median", t.transfer.median_ns}, {"min", t.transfer.min_ns}}},
           {"memcpy_hot_ns", {{"median", t.memcpy_hot.median_ns}, {"min", t.memcpy_hot.min_ns}}},
           {"memcpy_cross_core_ns",
            {{"median", t.memcpy_cross.median_ns}, {"min", t.memcpy_cross.min_ns}}},
           {"ratio_vs_hot_median", t.transfer.median_ns / t.memcpy_hot.median_ns},
           {"ratio_vs_hot_min", t.transfer.min_ns / t.memcpy_hot.min_ns},
           {"ratio_vs_cross_core_median", t.transfer.median_ns / t.memcpy_cross.median_ns},
           {"ratio_vs_cross_core_min", t.transfer.min_ns / t.memcpy_cross.min_ns}});
    }
    std::cout << std::flush;

    const uint64_t sync_frames = o.quick ? 500 : 5000;
    const int sync_reps = o.quick ? 1 : 5;
    std::cout << "\nsynchronisation cost: pipelines of trivial layers (ReLU over 16 floats), "
              << sync_frames << " frames, median of " << sync_reps << "\n";
    std::cout << "  order     frames/s    us/frame\n";
    for (const std::string order : {"B", "L", "BB", "BL", "BLBL"}) {
      const SyncResult s = sync_cost(env, order, sync_frames, sync_reps);
      std::cout << "  " << pad(order, 10) << pad(fmt("%.0f", s.fps), 12)
                << fmt("%.2f", s.us_per_frame) << "\n";
      out["sync"].push_back({{"order", s.order},
                             {"frames", s.frames},
                             {"fps", s.fps},
                             {"us_per_frame", s.us_per_frame}});
    }
  }

  out["load_average_end"] = load_average();
  std::cout << "\nload average at the end " << fmt("%.2f", load_average())
            << " (on 2 cores, anything above ~0.1 besides this bench skews pipeline numbers)\n";
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    if (!f) throw InputError("cannot write --json='" + o.json_path + "'");
    f << out.dump(2) << "\n";
    if (!f) throw InputError("failed writing --json='" + o.json_path + "'");
    std::cout << "\nwrote " << o.json_path << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace co_up::bench

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_pipeline", [&] {
    return co_up::bench::run(co_up::bench::parse_options(argc, argv));
  });
}
