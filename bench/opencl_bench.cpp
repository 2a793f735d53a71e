// co_up_bench_opencl: the opencl backend (`G`) measured on whatever OpenCL device the ICD loader
// gives (PoCL on the development host). A program that prints tables, not a timed test.
//
// Part A, MobileNet per layer on G (the paper's Fig. 18 analogue): each layer's kernel time (all-G
//   run, profile level 2: kLayer events, the layer's kernels finished) against the time to move
//   its output tensor out of G (map + memcpy) and into G (map + memcpy + unmap), from the kTransfer
//   events of `GBGB…` and `BGBG…` runs, where every layer boundary crosses between G and B; plus a
//   plain memcpy of the same bytes.
// Part B, every convolution / fully connected node of the networks: the node alone on G (a one-node
//   graph, profile level 2: im2col + GEMM + bias/activation, finished) against CLBlast's own SGEMM
//   of the same M x N x K (x groups) on the same device, called directly here (own context and
//   queue, wall time to clFinish). Both interleaved, rep by rep, medians.
// Part C, per zoo network: B alone against a balanced B+G pipeline (B^k G^m, G^k B^m, or G inside:
//   B^a G^b B^c), with PoCL limited to the other core. Runs in a child process with POCL_MAX_PTHREAD_COUNT=1 (one PoCL worker thread)
//   and POCL_AFFINITY=1 (PoCL pins worker i to core i, so the worker sits on core 0); the child's
//   platform puts B on core 1 and L on core 0, and G's host thread on L.
// Part D, the program-binary cache: Executor setup of GoogLeNet all on G in a fresh process with
//   empty caches (a new XDG_CACHE_HOME: co_up's $XDG_CACHE_HOME/co_up/opencl and PoCL's
//   $XDG_CACHE_HOME/pocl) against the same setup in later processes.
//
// usage: co_up_bench_opencl [--quick] [--parts=abcd] [--networks=a,b] [--pipeline-networks=a,b]
//                           [--reps=R] [--image-size=N] [--plugins=DIR]
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <clblast.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/bench_options.h"
#include "bench/bench_text.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"
#include "ocl_runtime.h"
#include "profiler/events.h"
#include "profiler/report.h"

#ifndef CO_UP_PLUGIN_DIR
#define CO_UP_PLUGIN_DIR ""
#endif

extern char** environ;

namespace co_up::bench {
namespace {

using profiler::Event;
using profiler::EventKind;
using profiler::median;

constexpr double kNsPerMs = 1e6;
// A test harness convention: ctest reports exit code 77 as "skipped" (SKIP_RETURN_CODE).
constexpr int kExitSkipped = 77;

struct Options {
  bool quick = false;
  std::string parts = "abcd";
  std::vector<std::string> networks;           // part B
  std::vector<std::string> pipeline_networks;  // part C
  int reps = 0;
  int64_t image_size = 0;  // 0: each network's own
  std::string plugins = CO_UP_PLUGIN_DIR;
  // Internal: the child processes of parts C and D.
  std::string child;
  std::string result_file;
};

const char* kUsage =
    "usage: co_up_bench_opencl [--quick] [--parts=abcd] [--networks=a,b]\n"
    "                          [--pipeline-networks=a,b] [--reps=R] [--plugins=DIR]\n"
    "  --quick              small images, one network per part, 1-2 reps (CI smoke run)\n"
    "  --parts              a: MobileNet per-layer kernel vs transfer time; b: conv/FC GFLOP/s\n"
    "                       vs CLBlast SGEMM; c: B alone vs B+G pipeline (PoCL on the other\n"
    "                       core); d: first vs second setup (program-binary cache)\n"
    "  --networks           part b's networks (default mobilenet,alexnet,googlenet)\n"
    "  --pipeline-networks  part c's networks (default: all five zoo networks)\n"
    "  --reps               repetitions, medians reported (default 5, quick 1)\n"
    "  --image-size         input height/width of every network (default: its own; quick 96)\n"
    "  --plugins            plugin directory (default: the build's plugins/)\n";

Options parse_options(int argc, char** argv) {
  Options o;
  for (const BenchOption& a : read_options(argc, argv)) {
    if (a.is("help")) {
      std::cout << kUsage;
      std::exit(0);
    } else if (a.is("quick")) {
      o.quick = true;
    } else if (a.is("parts")) {
      if (a.string().find_first_not_of("abcd") != std::string::npos) {
        throw InputError("--parts='" + a.value + "' must be letters among a, b, c, d");
      }
      o.parts = a.value;
    } else if (a.is("networks")) {
      o.networks = a.list();
    } else if (a.is("pipeline-networks")) {
      o.pipeline_networks = a.list();
    } else if (a.is("reps")) {
      o.reps = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("image-size")) {
      o.image_size = static_cast<int>(a.integer(1, 100000));
    } else if (a.is("plugins")) {
      o.plugins = a.string();
    } else if (a.is("child")) {
      o.child = a.string();
    } else if (a.is("result-file")) {
      o.result_file = a.string();
    } else {
      a.unknown();
    }
  }
  if (o.reps == 0) o.reps = o.quick ? 1 : 5;
  if (o.networks.empty()) {
    o.networks = o.quick ? std::vector<std::string>{"mobilenet"}
                         : std::vector<std::string>{"mobilenet", "alexnet", "googlenet"};
  }
  if (o.pipeline_networks.empty()) {
    o.pipeline_networks =
        o.quick ? std::vector<std::string>{"squeezenet"}
                : std::vector<std::string>{"alexnet", "googlenet", "mobilenet", "resnet50",
                                           "squeezenet"};
  }
  if (o.quick && o.image_size == 0) o.image_size = 96;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Output helpers

std::string size_label(uint64_t bytes) {
  if (bytes >= (1u << 20)) return fmt("%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= 1024) return fmt("%.1f KiB", static_cast<double>(bytes) / 1024);
  return std::to_string(bytes) + " B";
}

double load_average() {
  std::ifstream f("/proc/loadavg");
  double one = -1;
  f >> one;
  return one;
}

double event_ms(const Event& e) { return static_cast<double>(e.end_ns - e.begin_ns) / kNsPerMs; }

// ---------------------------------------------------------------------------------------------
// Platform and runs

// B and L one core each (one thread), G the opencl plugin hosted on L. CPU layers prefer
// cpu-xnnpack.
Platform bench_platform(int b_core, int l_core) {
  const std::string cpu = R"("kind": "cpu", "backend": ["cpu-xnnpack", "cpu-reference"], "threads": 1)";
  return parse_platform(R"({"name": "bench-opencl", "processors": [)"
                        R"({"letter": "B", )" + cpu + R"(, "cores": [)" + std::to_string(b_core) +
                            R"(]},)"
                        R"({"letter": "L", )" + cpu + R"(, "cores": [)" + std::to_string(l_core) +
                            R"(]},)"
                        R"({"letter": "G", "kind": "gpu", "backend": "opencl", "host": "L"}]})",
                        "opencl bench");
}

struct Env {
  Platform platform;
  PluginRegistry registry;
};

RunRequest make_request(const graph::Graph& g, uint64_t frames) {
  RunRequest request;
  request.frames = frames;
  request.input_sets.push_back(seeded_inputs(g, 1));
  return request;
}

std::unique_ptr<Executor> make_executor(const Env& env, const graph::Graph& g,
                                        const std::string& order, ExecutionMode mode, int level) {
  ExecutorOptions options;
  options.mode = mode;
  options.profile_level = level;
  return std::make_unique<Executor>(g, Partition::create(g, order), env.platform, env.registry,
                                    options);
}

// Per layer, the median over frames (frame 0 dropped when there are more) of its summed kLayer
// time.
std::vector<double> layer_medians(const profiler::RunProfile& p, uint32_t layers) {
  std::vector<std::map<uint64_t, double>> per_frame(layers);
  for (const Event& e : p.events) {
    if (e.kind == EventKind::kLayer && e.layer < layers) per_frame[e.layer][e.frame] += event_ms(e);
  }
  std::vector<double> out;
  for (const auto& m : per_frame) {
    std::vector<double> v;
    for (const auto& [frame, ms] : m) {
      if (frame > 0 || m.size() == 1) v.push_back(ms);
    }
    out.push_back(v.empty() ? 0.0 : median(v));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// CLBlast SGEMM on its own context and queue (the device the opencl plugin picks by default).

class SgemmReference {
 public:
  SgemmReference() {
    std::string error;
    devices_ = opencl::enumerate_devices(&error);
    if (devices_.empty()) throw std::runtime_error("no OpenCL device: " + error);
    device_ = &opencl::select_device(devices_, "", "");
    cl_int err = CL_SUCCESS;
    cl_device_id id = device_->device;
    context_ = opencl::ClContext(clCreateContext(nullptr, 1, &id, nullptr, nullptr, &err));
    opencl::check_cl(err, "clCreateContext");
    queue_ = opencl::ClQueue(clCreateCommandQueue(context_.get(), id, 0, &err));
    opencl::check_cl(err, "clCreateCommandQueue");
  }
  const opencl::DeviceInfo& device() const { return *device_; }

  // Buffers for one M x N x K product, row-major with leading dimensions K, N, N (as the opencl
  // plugin calls it), filled with small values.
  void prepare(size_t m, size_t n, size_t k) {
    m_ = m, n_ = n, k_ = k;
    a_ = buffer(m * k);
    b_ = buffer(k * n);
    c_ = buffer(m * n);
    size_t temp = 0;
    cl_command_queue q = queue_.get();
    clblast::GemmTempBufferSize<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                                       clblast::Transpose::kNo, m, n, k, 0, k, 0, n, 0, n, &q, temp);
    temp_ = temp > 0 ? buffer(temp / sizeof(float) + 1) : opencl::ClMem();
    run(1);  // CLBlast builds its kernels on first use
  }

  // Seconds for `times` SGEMMs back to back, to clFinish.
  double run(size_t times) {
    cl_command_queue q = queue_.get();
    const double t0 = now_s();
    for (size_t i = 0; i < times; ++i) {
      const auto status = clblast::Gemm<float>(
          clblast::Layout::kRowMajor, clblast::Transpose::kNo, clblast::Transpose::kNo, m_, n_, k_,
          1.0f, a_.get(), 0, k_, b_.get(), 0, n_, 0.0f, c_.get(), 0, n_, &q, nullptr,
          temp_ ? temp_.get() : nullptr);
      if (status != clblast::StatusCode::kSuccess) {
        throw std::runtime_error("CLBlast Gemm " + std::to_string(m_) + "x" + std::to_string(n_) +
                                 "x" + std::to_string(k_) + " failed: status " +
                                 std::to_string(static_cast<int>(status)));
      }
    }
    opencl::check_cl(clFinish(q), "clFinish");
    return now_s() - t0;
  }

 private:
  opencl::ClMem buffer(size_t floats) {
    cl_int err = CL_SUCCESS;
    opencl::ClMem mem(clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, floats * sizeof(float),
                                     nullptr, &err));
    opencl::check_cl(err, "clCreateBuffer");
    const float value = 0.01f;
    opencl::check_cl(clEnqueueFillBuffer(queue_.get(), mem.get(), &value, sizeof(value), 0,
                                         floats * sizeof(float), 0, nullptr, nullptr),
                     "clEnqueueFillBuffer");
    return mem;
  }

  std::vector<opencl::DeviceInfo> devices_;
  const opencl::DeviceInfo* device_ = nullptr;
  opencl::ClContext context_;
  opencl::ClQueue queue_;
  opencl::ClMem a_, b_, c_, temp_;
  size_t m_ = 0, n_ = 0, k_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Part A: MobileNet per layer, kernel time vs transfer time

struct TransferTimes {
  std::vector<double> out_of_g;  // per layer: its output G -> B (map + memcpy), ms
  std::vector<double> into_g;    // per layer: its input B -> G (map + memcpy + unmap), ms
};

// kTransfer events of one run: senders on G (output of e.layer leaves G) and receives on G (the
// G sub-graph starting at e.layer gets its input). Medians over frames 1.., per layer.
void collect_transfers(const profiler::RunProfile& p, TransferTimes& t) {
  std::map<uint32_t, char> processor_of;
  for (const profiler::SubGraphInfo& sg : p.subgraphs) processor_of[sg.index] = sg.processor;
  std::map<uint32_t, std::vector<double>> out, in;
  for (const Event& e : p.events) {
    if (e.kind != EventKind::kTransfer || processor_of[e.subgraph] != 'G' || e.frame == 0) continue;
    (e.peer == e.subgraph ? in : out)[e.layer].push_back(event_ms(e));
  }
  for (auto& [layer, v] : out) t.out_of_g.at(layer) = median(v);
  for (auto& [layer, v] : in) t.into_g.at(layer) = median(v);
}

double memcpy_ms(size_t bytes, int reps) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    std::memcpy(b.data(), a.data(), bytes);
    v.push_back((now_s() - t0) * 1e3);
    a[r % bytes] = b[(r * 7) % bytes];  // keeps the copy from being optimised away
  }
  return median(v);
}

void part_a(const Env& env, const Options& o) {
  std::cout << "\n== A. MobileNet per layer on G: kernel time vs transfer time (Fig. 18 analogue)\n";
  const graph::Graph g = build_network({"mobilenet", "layers", o.image_size, 1, ""});
  const uint32_t n = g.layer_count();
  const uint64_t frames = o.quick ? 3 : 8;
  std::string alt_g, alt_b;
  for (uint32_t i = 0; i < n; ++i) {
    alt_g += i % 2 ? 'B' : 'G';
    alt_b += i % 2 ? 'G' : 'B';
  }
  auto all_g = make_executor(env, g, std::string(n, 'G'), ExecutionMode::kSwitch, 2);
  auto gb = make_executor(env, g, alt_g, ExecutionMode::kSwitch, 2);
  auto bg = make_executor(env, g, alt_b, ExecutionMode::kSwitch, 2);
  // The same frames without per-layer hooks (level 1): what the per-layer clFinish costs.
  auto level1 = make_executor(env, g, std::string(n, 'G'), ExecutionMode::kSwitch, 1);
  // Interleaved: each rep runs the four executors back to back.
  std::vector<std::vector<double>> kernel(n);
  TransferTimes transfers{std::vector<double>(n, 0), std::vector<double>(n, 0)};
  std::vector<std::vector<double>> out_reps(n), in_reps(n);
  std::vector<double> frame_ms_level2, frame_ms_level1;
  for (int rep = 0; rep < o.reps; ++rep) {
    const RunResult r = all_g->run(make_request(g, frames));
    const std::vector<double> ms = layer_medians(r.profile, n);
    for (uint32_t i = 0; i < n; ++i) kernel[i].push_back(ms[i]);
    frame_ms_level2.push_back(profiler::summarize(r.profile).latency_median_ms);
    frame_ms_level1.push_back(
        profiler::summarize(level1->run(make_request(g, frames)).profile).latency_median_ms);
    for (Executor* e : {gb.get(), bg.get()}) {
      TransferTimes t{std::vector<double>(n, 0), std::vector<double>(n, 0)};
      collect_transfers(e->run(make_request(g, frames)).profile, t);
      for (uint32_t i = 0; i < n; ++i) {
        if (t.out_of_g[i] > 0) out_reps[i].push_back(t.out_of_g[i]);
        if (t.into_g[i] > 0) in_reps[i].push_back(t.into_g[i]);
      }
    }
  }

  const auto layers = graph::summarize_layers(g);
  std::cout << "  " << o.reps << " reps x " << frames
            << " frames, medians. kernel = the layer's kernels, enqueued and finished (kLayer);\n"
               "  out = its output G->B: map + memcpy; in = its input B->G: map + memcpy + unmap"
               " (kTransfer);\n  memcpy = plain memcpy of the same bytes in this process.\n";
  std::cout << "  layer  name           output            bytes        kernel ms  out ms   in ms"
               "    memcpy ms  (out+in)/kernel\n";
  double sum_kernel = 0, sum_out = 0, sum_in = 0;
  for (uint32_t i = 0; i < n; ++i) {
    // The tensor leaving layer i is its output; the one entering it is layer i-1's output.
    const double k = median(kernel[i]);
    const double out = out_reps[i].empty() ? 0 : median(out_reps[i]);
    const double in = i + 1 < n && !in_reps[i + 1].empty() ? median(in_reps[i + 1]) : 0;
    const graph::Node& last = g.node(g.layers()[i].nodes.back());
    const uint64_t bytes = g.tensor(last.outputs[0]).desc.byte_size();
    sum_kernel += k, sum_out += out, sum_in += in;
    std::cout << "  " << pad(std::to_string(i), 7) << pad(layers[i].name, 15)
              << pad(layers[i].output_shape, 18) << pad(size_label(bytes), 13)
              << pad(fmt("%.3f", k), 11) << pad(out > 0 ? fmt("%.3f", out) : "-", 9)
              << pad(in > 0 ? fmt("%.3f", in) : "-", 9)
              << pad(fmt("%.3f", memcpy_ms(bytes, 9)), 11)
              << (out > 0 && in > 0 ? fmt("%.3f", (out + in) / k) : "-") << "\n";
  }
  const double input_in = in_reps[0].empty() ? 0 : median(in_reps[0]);
  std::cout << "  network input " << g.tensor(g.inputs()[0]).desc.shape_string() << " B->G: "
            << fmt("%.3f", input_in) << " ms\n";
  std::cout << "  sums: kernel " << fmt("%.2f", sum_kernel) << " ms, out " << fmt("%.2f", sum_out)
            << " ms, in " << fmt("%.2f", sum_in) << " ms per frame; all-G frame latency "
            << fmt("%.2f", median(frame_ms_level2))
            << " ms with per-layer timing (level 2: clFinish after each layer), "
            << fmt("%.2f", median(frame_ms_level1)) << " ms without (level 1)\n";
}

// ---------------------------------------------------------------------------------------------
// Part B: conv / FC nodes vs CLBlast SGEMM of the same M x N x K

// The node alone: its activations become graph inputs, its constants are copied.
graph::Graph single_node_graph(const graph::Graph& g, const graph::Node& node) {
  graph::Graph s(g.name() + "/" + node.name);
  std::vector<graph::TensorId> inputs;
  for (graph::TensorId t : node.inputs) {
    if (t == graph::kNoTensor) {
      inputs.push_back(graph::kNoTensor);
      continue;
    }
    const graph::Tensor& src = g.tensor(t);
    inputs.push_back(src.is_constant ? s.add_constant(src.name, src.desc, src.data)
                                     : s.add_input(src.name, src.desc));
  }
  s.mark_output(s.add_node(node.name, node.op, inputs, node.attrs, 0));
  s.set_layer_name(0, node.name);
  s.validate();
  return s;
}

struct GemmShape {
  size_t m = 0, n = 0, k = 0, groups = 1;
  bool depthwise = false;
};

GemmShape gemm_shape(const graph::Graph& g, const graph::Node& node) {
  GemmShape s;
  const auto& w = g.tensor(node.inputs[1]).desc.shape;
  const auto& y = g.tensor(node.outputs[0]).desc.shape;
  if (node.op == graph::OpType::kFullyConnected) {
    s.m = static_cast<size_t>(w[0]);
    s.k = static_cast<size_t>(w[1]);
    s.n = static_cast<size_t>(y[0]);
    return s;
  }
  const auto& x = g.tensor(node.inputs[0]).desc.shape;
  s.groups = static_cast<size_t>(node.attrs.get_int("group"));
  s.depthwise = s.groups > 1 && static_cast<int64_t>(s.groups) == x[1] && y[1] % x[1] == 0;
  s.m = static_cast<size_t>(w[0]) / s.groups;
  s.k = static_cast<size_t>(w[1] * w[2] * w[3]);
  s.n = static_cast<size_t>(y[0] * y[2] * y[3]);
  return s;
}

struct NodeResult {
  std::string name;
  GemmShape shape;
  double gflop = 0;
  double co_up_ms = 0;
  double sgemm_ms = 0;  // 0: no SGEMM equivalent (depthwise)
};

std::vector<NodeResult> part_b_network(const Env& env, const Options& o, SgemmReference& sgemm,
                                       const std::string& name) {
  const graph::Graph g = build_network({name, "layers", o.image_size, 1, ""});
  std::vector<NodeResult> results;
  for (const graph::Node& node : g.nodes()) {
    if (node.op != graph::OpType::kConv && node.op != graph::OpType::kFullyConnected) continue;
    NodeResult r;
    r.name = node.name;
    r.shape = gemm_shape(g, node);
    r.gflop = 2.0 * static_cast<double>(graph::node_macs(g, node)) / 1e9;
    const graph::Graph one = single_node_graph(g, node);
    auto exec = make_executor(env, one, "G", ExecutionMode::kSwitch, 2);
    const RunRequest request = make_request(one, 1);
    exec->run(request);  // warm-up
    if (!r.shape.depthwise) sgemm.prepare(r.shape.m, r.shape.n, r.shape.k);
    // Enough calls per rep for ~50 ms of work, interleaved with the SGEMM rep by rep.
    std::vector<double> co_up, ref;
    for (int rep = 0; rep < o.reps; ++rep) {
      co_up.push_back(layer_medians(exec->run(make_request(one, 3)).profile, 1)[0]);
      if (!r.shape.depthwise) ref.push_back(sgemm.run(r.shape.groups) * 1e3);
    }
    r.co_up_ms = median(co_up);
    r.sgemm_ms = ref.empty() ? 0 : median(ref);
    results.push_back(r);
  }
  return results;
}

void part_b(const Env& env, const Options& o) {
  std::cout << "\n== B. conv / FC nodes on G vs CLBlast SGEMM of the same M x N x K\n";
  SgemmReference sgemm;
  std::cout << "  device: " << sgemm.device().summary() << "\n";
  std::cout << "  co_up = the node alone on G (profile level 2: im2col + GEMM(s) + bias/activation,"
               " finished); SGEMM = clblast::Gemm<float>\n  row-major, lds K/N/N, x groups,"
               " to clFinish. GFLOP/s = 2 MACs / time. " << o.reps
            << " reps interleaved, medians.\n";
  for (const std::string& name : o.networks) {
    const double t0 = now_s();
    const std::vector<NodeResult> results = part_b_network(env, o, sgemm, name);
    std::cout << "\n  " << name << " (" << fmt("%.1f", now_s() - t0) << " s)\n";
    std::cout << "  node                           M x N x K (x groups)      GFLOP   co_up ms"
                 "  GFLOP/s  SGEMM ms  GFLOP/s  co_up/SGEMM\n";
    double sum_co_up = 0, sum_ref = 0;
    std::vector<double> ratios;
    int below = 0;
    for (const NodeResult& r : results) {
      std::string shape = std::to_string(r.shape.m) + "x" + std::to_string(r.shape.n) + "x" +
                          std::to_string(r.shape.k);
      if (r.shape.groups > 1) shape += " x" + std::to_string(r.shape.groups);
      if (r.shape.depthwise) shape += " (dw)";
      const double gf = r.gflop / (r.co_up_ms / 1e3);
      std::cout << "  " << pad(r.name.substr(0, 30), 31) << pad(shape, 26)
                << pad(fmt("%.4f", r.gflop), 8) << pad(fmt("%.3f", r.co_up_ms), 10)
                << pad(fmt("%.2f", gf), 9);
      if (r.sgemm_ms > 0) {
        const double ref_gf = r.gflop / (r.sgemm_ms / 1e3);
        const double ratio = gf / ref_gf;
        ratios.push_back(ratio);
        if (ratio < 0.5) ++below;
        sum_co_up += r.co_up_ms;
        sum_ref += r.sgemm_ms;
        std::cout << pad(fmt("%.3f", r.sgemm_ms), 10) << pad(fmt("%.2f", ref_gf), 9)
                  << fmt("%.0f%%", 100 * ratio);
      } else {
        std::cout << "(depthwise: own direct kernel, no GEMM)";
      }
      std::cout << "\n";
    }
    if (!ratios.empty()) {
      std::cout << "  " << name << ": " << ratios.size() << " GEMM nodes, co_up/SGEMM median "
                << fmt("%.0f%%", 100 * median(ratios)) << ", min "
                << fmt("%.0f%%", 100 * *std::min_element(ratios.begin(), ratios.end()))
                << ", below 50%: " << below << "; summed time " << fmt("%.1f", sum_co_up)
                << " ms vs " << fmt("%.1f", sum_ref) << " ms ("
                << fmt("%.0f%%", 100 * sum_ref / sum_co_up) << ")\n";
    }
    std::cout << std::flush;
  }
}

// ---------------------------------------------------------------------------------------------
// Child processes (parts C and D)

// Runs this program again with `args`, `env_overrides` added to the environment; returns its
// exit status. Its output goes to ours.
int run_child(const std::vector<std::string>& args,
              const std::vector<std::pair<std::string, std::string>>& env_overrides) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [k, v] : env_overrides) replaced = replaced || k == key;
    if (!replaced) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : env_overrides) env_strings.push_back(k + "=" + v);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> argv_strings{self};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv_ptrs, env_ptrs;
  for (std::string& s : argv_strings) argv_ptrs.push_back(s.data());
  for (std::string& s : env_strings) env_ptrs.push_back(s.data());
  argv_ptrs.push_back(nullptr);
  env_ptrs.push_back(nullptr);
  std::cout << std::flush;
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv_ptrs.data(), env_ptrs.data()) != 0) {
    throw std::runtime_error("posix_spawn of " + self + " failed");
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> common_child_args(const Options& o) {
  std::vector<std::string> a{"--plugins=" + o.plugins, "--reps=" + std::to_string(o.reps)};
  if (o.quick) a.push_back("--quick");
  if (o.image_size > 0) a.push_back("--image-size=" + std::to_string(o.image_size));
  return a;
}

// ---------------------------------------------------------------------------------------------
// Part C: B alone vs a balanced B+G pipeline (child process, PoCL on the other core)

struct SplitCandidate {
  std::string order;
  double predicted_ms = 0;
  double balance = 0;
  double g_stage_ms = 0, b_stage_ms = 0;
};

// B's cost per byte crossing a B/G boundary: cpu-xnnpack's layout conversion (NHWC <-> NCHW, about
// 0.2-0.3 ns/byte on this host) plus the copy into the receiver slot.
constexpr double kBoundaryNsPerByte = 0.4;

// Candidate orders, scored by the slower stage, best first: the contiguous two-stage splits
// B^k G^(n-k) and G^k B^(n-k), and B^a G^b B^c with G inside (B runs both of its parts, so a
// small G share from the middle of the network can pay off where no prefix or suffix is small
// enough). B's stage includes kBoundaryNsPerByte for every byte crossing to or from G.
std::vector<SplitCandidate> predict_splits(const graph::Graph& g, const std::vector<double>& b_ms,
                                           const std::vector<double>& g_ms) {
  const size_t n = b_ms.size();
  std::vector<SplitCandidate> all;
  auto score = [&](std::string order) {
    double b = 0, gs = 0;
    for (size_t i = 0; i < n; ++i) {
      if (order[i] == 'G') {
        gs += g_ms[i];
      } else {
        b += b_ms[i];
      }
    }
    const Partition part = Partition::create(g, order);
    double bytes = 0;
    for (const Edge& e : part.edges()) {
      if (e.source == kGraphInput) continue;
      bytes += static_cast<double>(g.tensor(e.tensor).desc.byte_size() * e.destinations.size());
    }
    b += bytes * kBoundaryNsPerByte / 1e6;
    SplitCandidate c;
    c.order = std::move(order);
    c.predicted_ms = std::max(b, gs);
    c.balance = std::min(b, gs) / std::max(b, gs);
    c.g_stage_ms = gs;
    c.b_stage_ms = b;
    all.push_back(std::move(c));
  };
  for (size_t k = 1; k < n; ++k) {
    score(std::string(k, 'B') + std::string(n - k, 'G'));
    score(std::string(k, 'G') + std::string(n - k, 'B'));
  }
  for (size_t a = 1; a + 1 < n; ++a) {
    for (size_t b = 1; a + b < n; ++b) {
      score(std::string(a, 'B') + std::string(b, 'G') + std::string(n - a - b, 'B'));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const SplitCandidate& a, const SplitCandidate& b) {
    return a.predicted_ms < b.predicted_ms;
  });
  return all;
}

std::string compact_order(const std::string& order) {
  std::string out;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && order[j] == order[i]) ++j;
    out += std::string(1, order[i]) + "x" + std::to_string(j - i) + " ";
    i = j;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

// Which cores each thread of this process may run on, grouped ("core 1: 3 threads").
std::string thread_affinity_summary() {
  std::map<std::string, int> count;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(entry.path() / "status");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) {
        std::string cores = line.substr(line.find(':') + 1);
        cores.erase(0, cores.find_first_not_of(" \t"));
        ++count[cores];
      }
    }
  }
  std::string out;
  for (const auto& [cores, n] : count) {
    out += (out.empty() ? "" : ", ") + std::string("cores ") + cores + ": " + std::to_string(n) +
           " thread" + (n > 1 ? "s" : "");
  }
  return out;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

struct RunSpeed {
  double fps = 0;
  double cores = 0;  // process CPU time / wall time: the cores the run got (less = preempted)
};

// One run; `threads_seen`, when given, gets thread_affinity_summary() taken while the run's
// threads are alive (at the second frame's output).
RunSpeed speed_of(Executor& exec, const graph::Graph& g, uint64_t frames,
                  std::string* threads_seen = nullptr) {
  RunRequest request = make_request(g, frames);
  if (threads_seen) {
    request.on_output = [threads_seen](uint64_t frame, uint32_t, std::span<const float>) {
      if (frame == 1) *threads_seen = thread_affinity_summary();
    };
  }
  const double cpu0 = cpu_seconds(), wall0 = now_s();
  const double fps = profiler::summarize(exec.run(request).profile).throughput_fps;
  return {fps, (cpu_seconds() - cpu0) / (now_s() - wall0)};
}

int child_pipeline(const Options& o) {
  // The parent set POCL_MAX_PTHREAD_COUNT=1 and POCL_AFFINITY=1: PoCL's only worker thread is
  // pinned to core 0, so B takes core 1 and G's host thread shares core 0 with the worker.
  Env env{bench_platform(1, 0), PluginRegistry::load_directory(o.plugins)};
  auto env_or = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "(unset)");
  };
  std::cout << "  child: POCL_MAX_PTHREAD_COUNT=" << env_or("POCL_MAX_PTHREAD_COUNT")
            << " POCL_AFFINITY=" << env_or("POCL_AFFINITY")
            << "; B = core 1, L = core 0, G hosted on L\n";
  std::cout << "  network     units  B-only fps  B+G fps  ratio   cores      predicted balance  G share"
               "  order (B-only / G-only ms per frame)\n";
  bool printed_threads = false;
  for (const std::string& name : o.pipeline_networks) {
    // Op units give more split points; layer units where ops add none.
    const graph::Graph layers = build_network({name, "layers", o.image_size, 1, ""});
    const graph::Graph ops = build_network({name, "ops", o.image_size, 1, ""});
    const bool use_ops = ops.layer_count() > layers.layer_count();
    const graph::Graph& g = use_ops ? ops : layers;
    const uint32_t n = g.layer_count();
    const uint64_t profile_frames = o.quick ? 2 : 3;
    auto b_prof = make_executor(env, g, std::string(n, 'B'), ExecutionMode::kSwitch, 2);
    auto g_prof = make_executor(env, g, std::string(n, 'G'), ExecutionMode::kSwitch, 2);
    const std::vector<double> b_ms = layer_medians(b_prof->run(make_request(g, profile_frames)).profile, n);
    const std::vector<double> g_ms = layer_medians(g_prof->run(make_request(g, profile_frames)).profile, n);
    g_prof.reset();
    double b_total = 0, g_total = 0;
    for (uint32_t i = 0; i < n; ++i) b_total += b_ms[i], g_total += g_ms[i];
    // Screen a few splits with one short run each: the best predicted ones, and the best ones
    // whose G stage is predicted at most 60 % of the B stage (a G stage near the B stage becomes
    // the bottleneck at the first slowdown: the G host thread and PoCL share a core with other
    // tenants). The fastest then goes against B-only over all reps (choosing on separate runs
    // keeps the max-of-noise out of the ratio).
    const std::vector<SplitCandidate> all = predict_splits(g, b_ms, g_ms);
    std::vector<SplitCandidate> cands;
    const size_t per_kind = o.quick ? 1 : 3;
    for (const SplitCandidate& c : all) {
      // Even the "best predicted" ones keep G at most 80 % of B: a G stage predicted level with
      // B measured 0.94x B alone when another tenant briefly took a core.
      if (cands.size() < per_kind && c.g_stage_ms <= 0.8 * c.b_stage_ms) cands.push_back(c);
    }
    if (cands.empty()) cands.push_back(all.front());
    size_t margin = 0;
    for (const SplitCandidate& c : all) {
      if (margin < per_kind && c.g_stage_ms <= 0.6 * c.b_stage_ms &&
          std::none_of(cands.begin(), cands.end(),
                       [&](const SplitCandidate& x) { return x.order == c.order; })) {
        cands.push_back(c);
        ++margin;
      }
    }
    auto b_only = make_executor(env, g, std::string(n, 'B'), ExecutionMode::kPipeline, 1);
    const uint64_t frames =
        o.quick ? 4 : std::clamp<uint64_t>(static_cast<uint64_t>(1500 / b_total), 8, 30);
    size_t best = 0;
    double best_fps = 0;
    std::unique_ptr<Executor> best_exec;
    for (size_t i = 0; i < cands.size(); ++i) {
      auto e = make_executor(env, g, cands[i].order, ExecutionMode::kPipeline, 1);
      speed_of(*e, g, 2);
      std::string threads;
      // Two screening runs each: one run's noise should not pick the candidate.
      const double fps = (speed_of(*e, g, frames, &threads).fps + speed_of(*e, g, frames).fps) / 2;
      if (!printed_threads) {
        std::cout << "  threads during a B+G run (allowed cores): " << threads << "\n";
        printed_threads = true;
      }
      if (fps > best_fps) best = i, best_fps = fps, best_exec = std::move(e);
    }
    speed_of(*b_only, g, 2);
    std::vector<double> b_fps, p_fps, ratio, b_cores, p_cores;
    for (int rep = 0; rep < o.reps; ++rep) {
      const RunSpeed b = speed_of(*b_only, g, frames);
      const RunSpeed p = speed_of(*best_exec, g, frames);
      b_fps.push_back(b.fps), b_cores.push_back(b.cores);
      p_fps.push_back(p.fps), p_cores.push_back(p.cores);
      ratio.push_back(p.fps / b.fps);
    }
    const std::string& order = cands[best].order;
    double g_share = 0;
    for (uint32_t i = 0; i < n; ++i) g_share += order[i] == 'G' ? b_ms[i] : 0;
    std::cout << "  " << pad(name, 12) << pad(use_ops ? "ops" : "layers", 7)
              << pad(fmt("%.2f", median(b_fps)), 12) << pad(fmt("%.2f", median(p_fps)), 9)
              << pad(fmt("%.3fx", median(ratio)), 8)
              << pad(fmt("%.2f", median(b_cores)) + "/" + fmt("%.2f", median(p_cores)), 11)
              << pad(fmt("%.2f", cands[best].balance), 19)
              << pad(fmt("%.1f%%", 100 * g_share / b_total), 9) << compact_order(order) << " ("
              << fmt("%.1f", b_total) << " / " << fmt("%.1f", g_total) << ")\n"
              << std::flush;
  }
  return 0;
}

void part_c(const Options& o) {
  std::cout << "\n== C. B alone vs a balanced B+G pipeline, PoCL limited to the other core\n";
  std::cout << "  load average " << fmt("%.2f", load_average()) << "; " << o.reps
            << " reps interleaved, medians; ratio = B+G fps / B-only fps of the same rep;\n"
               "  cores = CPU time / wall time, B-only/B+G (B-only can use 1, B+G 2; less = other"
               " tenants took the rest)\n";
  std::vector<std::string> args = common_child_args(o);
  args.push_back("--child=pipeline");
  std::string nets;
  for (const std::string& n : o.pipeline_networks) nets += (nets.empty() ? "" : ",") + n;
  args.push_back("--pipeline-networks=" + nets);
  const int status = run_child(args, {{"POCL_MAX_PTHREAD_COUNT", "1"}, {"POCL_AFFINITY", "1"}});
  if (status != 0) throw std::runtime_error("part C child failed with status " + std::to_string(status));
}

// ---------------------------------------------------------------------------------------------
// Part D: program-binary cache, first vs later setup

int child_setup(const Options& o) {
  const double t0 = now_s();
  Env env{bench_platform(0, 1), PluginRegistry::load_directory(o.plugins)};
  const double load_s = now_s() - t0;
  const std::string name = o.networks.at(0);
  const graph::Graph g = build_network({name, "layers", o.image_size, 1, ""});
  auto exec = make_executor(env, g, std::string(g.layer_count(), 'G'), ExecutionMode::kSwitch, 0);
  std::ofstream(o.result_file) << static_cast<double>(exec->setup_ns()) / kNsPerMs << " "
                               << load_s * 1e3 << "\n";
  return 0;
}

void part_d(const Options& o) {
  const std::string name = o.quick ? "mobilenet" : "googlenet";
  std::cout << "\n== D. program-binary cache: " << name << " all on G, Executor setup in fresh"
               " processes\n";
  std::vector<double> first, later;
  const int cold_runs = o.quick ? 1 : 2;
  const int warm_runs = o.quick ? 1 : 3;
  for (int c = 0; c < cold_runs; ++c) {
    // A new XDG_CACHE_HOME: co_up's cache (co_up/opencl) and PoCL's (pocl) both start empty.
    char dir_template[] = "/tmp/co_up_bench_opencl_XXXXXX";
    const char* dir = mkdtemp(dir_template);
    if (!dir) throw std::runtime_error("mkdtemp failed");
    const std::string result = std::string(dir) + "/setup.txt";
    std::vector<std::string> args = common_child_args(o);
    args.insert(args.end(), {"--child=setup", "--networks=" + name, "--result-file=" + result});
    for (int run = 0; run <= warm_runs; ++run) {
      if (run_child(args, {{"XDG_CACHE_HOME", dir}}) != 0) {
        throw std::runtime_error("part D child failed");
      }
      double setup_ms = 0;
      std::ifstream(result) >> setup_ms;
      (run == 0 ? first : later).push_back(setup_ms);
      std::cout << "  " << (run == 0 ? "first (empty caches)" : "later               ") << "  "
                << fmt("%9.1f", setup_ms) << " ms\n";
    }
    std::filesystem::remove_all(dir);
  }
  std::cout << "  median first " << fmt("%.1f", median(first)) << " ms, later "
            << fmt("%.1f", median(later)) << " ms: " << fmt("%.1fx", median(first) / median(later))
            << " faster (target >= 5x)\n";
}

// ---------------------------------------------------------------------------------------------

int run(const Options& o) {
  if (!std::filesystem::is_directory(o.plugins)) {
    throw InputError("plugin directory '" + o.plugins + "' does not exist (use --plugins=DIR)");
  }
  if (o.child == "pipeline") return child_pipeline(o);
  if (o.child == "setup") return child_setup(o);
  if (!o.child.empty()) throw InputError("unknown --child='" + o.child + "'");

  const bool needs_g_here = o.parts.find_first_of("ab") != std::string::npos;
  std::optional<Env> env;
  if (needs_g_here) {
    env.emplace(Env{bench_platform(0, 1), PluginRegistry::load_directory(o.plugins)});
  }
  std::string error;
  if (opencl::enumerate_devices(&error).empty()) {
    std::cout << "co_up_bench_opencl: skipped: no OpenCL device (" << error << ")\n";
    return kExitSkipped;
  }
  std::cout << "co_up_bench_opencl: parts " << o.parts << ", " << o.reps
            << " reps, image size " << (o.image_size ? std::to_string(o.image_size) : "default")
            << ", load average " << fmt("%.2f", load_average()) << "\n";
  const double t0 = now_s();
  if (o.parts.find('a') != std::string::npos) part_a(*env, o);
  if (o.parts.find('b') != std::string::npos) part_b(*env, o);
  if (o.parts.find('c') != std::string::npos) part_c(o);
  if (o.parts.find('d') != std::string::npos) part_d(o);
  std::cout << "\ndone in " << fmt("%.0f", now_s() - t0) << " s, load average "
            << fmt("%.2f", load_average()) << "\n";
  return 0;
}

}  // namespace
}  // namespace co_up::bench

int main(int argc, char** argv) {
  return co_up::bench::bench_main("co_up_bench_opencl", [&] {
    return co_up::bench::run(co_up::bench::parse_options(argc, argv));
  });
}
