// ABI glue of the cpu-xnnpack backend: factory (XNNPACK initialised) -> device (options, pinned
// pthreadpool) -> compiled sub-graph (validated nodes, XNNPACK operators created and set up once,
// weights packed by XNNPACK at compile, NHWC activations in one arena where tensors not alive
// together share memory).
//
// Layout: the ABI speaks NCHW; inside a sub-graph every 4-D activation is NHWC, the layout
// XNNPACK's kernels want. The plugin declares NHWC in boundary_layouts, so between two such
// sub-graphs (B and L, both cpu-xnnpack) the runtime passes NHWC and nothing is transposed;
// elsewhere conversions happen only at the sub-graph boundary: outputs in
// compiled_map (timed by the runtime as transfer), inputs in compiled_bind_input (the runtime's
// usual path; not timed by the runtime today) or, after map + copy, in compiled_unmap. The only
// other layout change is a Flatten/Reshape of a 4-D tensor with H*W > 1 (AlexNet's pool5 -> fc6):
// the flattened vector must be in NCHW order, as the graph defines it.
//
// Statuses, option parsing and node decoding are backends/common's (see plugin_status.h), so all
// backends accept the same graphs with the same messages.
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <xnnpack.h>

#include "arena_plan.h"
#include "co_up/plugin_abi.h"
#include "node_decode.h"
#include "op_shapes.h"
#include "plugin_adapter.h"
#include "plugin_options.h"
#include "plugin_status.h"
#include "run_hooks.h"
#include "subgraph_desc.h"
#include "subgraph_plan.h"
#include "xnn_kernels.h"
#include "xnn_steps.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {
namespace {

using backends::element_at;
using backends::fail;
using backends::NodePlan;
using backends::Op;

constexpr const char* kBackendName = "cpu-xnnpack";
constexpr const char* kBackendVersion = "1.0.0";

// What cpu-xnnpack's statuses and decoding messages say about it.
constexpr backends::StatusOrigin kStatusOrigin = {
    kBackendName,
    {sizeof(co_up_status), CO_UP_STATUS_OUT_OF_MEMORY,
     "cpu-xnnpack: out of memory (free memory or use smaller sub-graphs)"},
    "out of memory (free memory or split the sub-graph)"};
// Beyond the base ops, the CNN forms have steps in xnn_steps.cpp, the rank-N ops in
// xnn_tensor_steps.cpp.
constexpr bool implements(Op op) { return backends::is_cnn_form(op) || op == Op::kTensorOp; }
constexpr backends::DecodeRules kDecodeRules = {kBackendName, "packs it", /*nhwc_boundaries=*/true,
                                                implements};

// Online CPUs (/sys/devices/system/cpu/online), or 0..nprocs-1 when that file is unreadable.
std::vector<int> online_cpus() {
  std::vector<int> cpus;
  if (FILE* f = std::fopen("/sys/devices/system/cpu/online", "r")) {
    char line[4096] = {};
    const bool ok = std::fgets(line, sizeof(line), f) != nullptr;
    std::fclose(f);
    const char* p = line;
    while (ok && *p >= '0' && *p <= '9') {
      char* next = nullptr;
      const long first = std::strtol(p, &next, 10);
      long last = first;
      if (*next == '-') last = std::strtol(next + 1, &next, 10);
      for (long c = first; c <= last; ++c) cpus.push_back(static_cast<int>(c));
      p = *next == ',' ? next + 1 : next;
    }
  }
  if (cpus.empty()) {
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c) {
      cpus.push_back(static_cast<int>(c));
    }
  }
  return cpus;
}

std::string cores_string(const std::vector<int>& cores) {
  std::string s;
  for (int c : cores) {
    if (!s.empty()) s.push_back(',');
    s.append(std::to_string(c));
  }
  return s;
}

}  // namespace
}  // namespace co_up::xnnpack

// ---------------------------------------------------------------------------------------------
// The opaque ABI handles.

using co_up::xnnpack::CpuPool;
using co_up::backends::NodePlan;

struct co_up_factory {
  // Cores held by live devices, by processor letter: two letters must not share a core.
  std::mutex mutex;
  std::vector<std::pair<co_up_device*, std::pair<char, std::vector<int>>>> claims;
};

struct co_up_device {
  co_up_factory* factory = nullptr;
  char processor = '?';
  std::vector<int> cores;
  // Declared last: workers are joined before the options they were made from go away.
  std::unique_ptr<CpuPool> pool;
};

struct co_up_compiled {
  struct Step {
    uint32_t layer = 0;
    co_up::xnnpack::F32Step work;
  };
  // A sub-graph input or output as the runtime sees it (NCHW, or NHWC on an NHWC boundary) and
  // as the kernels hold it.
  struct Port {
    uint32_t tensor = 0;
    bool convert = false;                // 4-D: NCHW staging <-> NHWC tensor
    int64_t batch = 1, channels = 1, plane = 1;
    co_up::xnnpack::Buffer<float> staging;      // NCHW copy when `convert`
    bool pending = false;                // input mapped, not converted yet
    float* internal = nullptr;           // where the kernels hold it (own storage or io_memory)
    bool external = false;               // in the runtime's io_memory: never mapped or bound
    int64_t count = 0;                   // its elements
  };

  co_up_device* device = nullptr;
  // Activations in the internal layout (NHWC when 4-D): inputs, outputs and constants in their
  // own storage (per tensor, else empty), the others in the arena, where tensors that are not
  // alive at the same step share memory.
  std::vector<co_up::xnnpack::Buffer<float>> storage;
  co_up::xnnpack::Buffer<float> arena;
  std::vector<Port> inputs;
  std::vector<Port> outputs;
  std::vector<Step> steps;
  // Set at the first input map or bind of a frame, ended when its run starts: the pool's
  // workers, asleep since the last frame, wake while the runtime writes the input, not during
  // layer 0. A deadline, not a Warm: when no run follows (a failed frame, a caller that maps and
  // stops) the workers go back to sleep once it passes.
  std::optional<std::chrono::steady_clock::time_point> input_warm_until;
};

namespace co_up::xnnpack {
namespace {

// Where a compiled sub-graph's activations live (internal layout; constants are not stored:
// XNNPACK packs the weights it needs at operator creation, and the own kernels keep what they
// fold).
struct ActivationPlan {
  // Memory of its own: the sub-graph's inputs and outputs, which the runtime fills and reads
  // between runs, and constants read as activations.
  std::vector<bool> own;
  // Everything else that a step reads or writes shares one arena with the tensors that are not
  // alive at the same step (arena_plan.h); bytes 0 for the rest.
  std::vector<backends::TensorLifetime> lifetimes;
  // A tensor written over another one (in place), whose memory it then uses; else NO_TENSOR.
  std::vector<uint32_t> same_as;
};

ActivationPlan plan_activations(const co_up_subgraph_desc& graph, const backends::SubgraphPlan& subgraph,
                                const StepFusions& fusions) {
  const uint32_t tensor_count = graph.tensor_count;
  const std::vector<NodePlan>& plans = subgraph.nodes;
  // Step n writes fusions.writes[n] and reads its activation inputs (a convolution's, fully
  // connected or batch normalisation's first only: it packs the others) and a fused residual; a
  // tensor lives from its first to its last step.
  constexpr uint32_t kUnused = std::numeric_limits<uint32_t>::max();
  ActivationPlan plan{std::vector<bool>(tensor_count, false),
                      std::vector<backends::TensorLifetime>(tensor_count, {0, kUnused, 0}),
                      std::vector<uint32_t>(tensor_count, CO_UP_NO_TENSOR)};
  auto& lifetimes = plan.lifetimes;
  auto use = [&](uint32_t t, uint32_t step) {
    lifetimes[t].first_step = std::min(lifetimes[t].first_step, step);
    lifetimes[t].last_step = std::max(lifetimes[t].last_step, step);
  };
  for (uint32_t n = 0; n < plans.size(); ++n) {
    const NodePlan& p = plans[n];
    if (fusions.writes[n] == CO_UP_NO_TENSOR) continue;  // an empty step
    use(fusions.writes[n], n);
    const bool packs = p.op == Op::kConv || p.op == Op::kFullyConnected || p.op == Op::kBatchNormalization;
    for (size_t i = 0; i < (packs ? 1 : p.inputs.size()); ++i) {
      if (p.inputs[i] != CO_UP_NO_TENSOR) use(p.inputs[i], n);
    }
    for (uint32_t t : fusions.extra_reads[n]) use(t, n);
    if (fusions.fused[n] && fusions.fused[n]->residual != CO_UP_NO_TENSOR) use(fusions.fused[n]->residual, n);
  }
  for (uint32_t t = 0; t < tensor_count; ++t) {
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    const bool used = lifetimes[t].first_step != kUnused;
    plan.own[t] = subgraph.is_input[t] || subgraph.is_output[t] || (used && d.data);
    if (plan.own[t] || !used) {
      lifetimes[t] = {};  // not in the arena (e.g. a convolution's result fused away)
      continue;
    }
    const int64_t count = backends::element_count(d);
    lifetimes[t].bytes = count * static_cast<int64_t>(sizeof(float));
  }
  // In place: a convolution with a fused residual that is the residual's last reader writes its
  // result over it (the kernel reads each residual line of a tile before it stores that line).
  // The layer then streams one tensor less through memory: ResNet50's 64 -> 256 + Add at 56x56
  // -12 %, 128 -> 512 + Add at 28x28 -7 %. Not when the residual is also the convolution's
  // input (Add(Conv(a), a)): tiles would read input pixels that other tiles already overwrote.
  // The residual's lifetime grows by its successor's.
  auto root = [&](uint32_t t) { return plan.same_as[t] == CO_UP_NO_TENSOR ? t : plan.same_as[t]; };
  for (uint32_t n = 0; n < plans.size(); ++n) {
    const auto& write = fusions.fused[n];
    if (!write || write->residual == CO_UP_NO_TENSOR) continue;
    const uint32_t r = root(write->residual);
    const uint32_t o = write->tensor;
    if (r != root(plans[n].inputs[0]) && lifetimes[r].bytes > 0 &&
        lifetimes[r].bytes == lifetimes[o].bytes && lifetimes[r].last_step == n &&
        lifetimes[o].first_step == n) {
      lifetimes[r].last_step = lifetimes[o].last_step;
      lifetimes[o] = {};
      plan.same_as[o] = r;  // r is a root, so same_as always names one
    }
  }
  return plan;
}

// Where the runtime's io_memory (ABI 1.3) puts tensors: per tensor, the first float of its own
// elements there (nullptr: none) and the floats between its pixels.
struct ExternalTensors {
  std::vector<float*> at;
  std::vector<int64_t> pixel_stride;
};

ExternalTensors external_tensors(const co_up_subgraph_desc& graph) {
  ExternalTensors e{std::vector<float*>(graph.tensor_count, nullptr), std::vector<int64_t>(graph.tensor_count, 0)};
  for (const co_up_io_memory& m : backends::io_memory_of(graph)) {
    const uint32_t t = m.direction == CO_UP_IO_INPUT ? graph.inputs[m.index] : graph.outputs[m.index];
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    if (d.rank != 4 || d.layout != CO_UP_LAYOUT_NHWC || d.dtype != CO_UP_DTYPE_F32) {
      fail(CO_UP_STATUS_UNSUPPORTED, "io_memory for tensor '" + backends::tensor_name(graph, t) +
                                         "': only 4-D f32 NHWC tensors can live in runtime memory");
    }
    e.at[t] = static_cast<float*>(m.host_ptr) + m.channel_offset;
    e.pixel_stride[t] = m.pixel_stride == 0 ? d.dims[1] : static_cast<int64_t>(m.pixel_stride);
  }
  return e;
}

// The io_memory channel slices as step fusions: a Conv output written into its slice, and a
// Concat whose inputs lie in their slices already (or are Conv results written there now) not run,
// its output being the slices' memory. Throws UNSUPPORTED for a slice it cannot honour.
void fuse_external_slices(const co_up_subgraph_desc& graph, const backends::SubgraphPlan& plan,
                          StepFusions& fusions, ExternalTensors& external) {
  const std::vector<NodePlan>& nodes = plan.nodes;
  const auto node_count = static_cast<uint32_t>(nodes.size());
  std::vector<uint32_t> uses(graph.tensor_count, 0), producer(graph.tensor_count, node_count);
  for (uint32_t n = 0; n < node_count; ++n) {
    for (uint32_t t : nodes[n].inputs) {
      if (t != CO_UP_NO_TENSOR) ++uses[t];
    }
    producer[nodes[n].output] = n;
  }
  auto refuse = [&](uint32_t t, const std::string& why) {
    fail(CO_UP_STATUS_UNSUPPORTED, "io_memory slice for tensor '" + backends::tensor_name(graph, t) + "': " + why);
  };
  auto write_conv_into = [&](uint32_t n, uint32_t tensor, int64_t offset, int64_t stride) {
    if (nodes[n].op != Op::kConv || fusions.fused[n] || fusions.writes[n] != nodes[n].output) {
      refuse(nodes[n].output, "not the result of a convolution without other fusions");
    }
    fusions.fused[n] = StepFusions::Write{tensor, offset, stride, CO_UP_NO_TENSOR, nodes[n].conv.activation};
    fusions.writes[n] = tensor;
  };
  for (uint32_t t = 0; t < graph.tensor_count; ++t) {
    const int64_t channels = element_at(graph.tensors, t).rank == 4 ? element_at(graph.tensors, t).dims[1] : 0;
    if (!external.at[t] || external.pixel_stride[t] == channels) continue;
    if (plan.is_output[t]) {
      if (uses[t] != 0 || producer[t] == node_count) refuse(t, "read inside the sub-graph or not computed here");
      write_conv_into(producer[t], t, 0, external.pixel_stride[t]);
      continue;
    }
    // An input slice: its one reader must be a channel Concat.
    uint32_t concat = node_count;
    for (uint32_t n = 0; n < node_count; ++n) {
      if (std::find(nodes[n].inputs.begin(), nodes[n].inputs.end(), t) != nodes[n].inputs.end()) concat = n;
    }
    if (uses[t] != 1 || concat == node_count || nodes[concat].op != Op::kConcat || nodes[concat].out_dims.size() != 4 ||
        nodes[concat].in_dims[1] == nodes[concat].out_dims[1]) {
      refuse(t, "not read by exactly one channel Concat");
    }
    const NodePlan& c = nodes[concat];
    if (fusions.writes[concat] == CO_UP_NO_TENSOR) continue;  // done for an earlier input
    int64_t offset = 0;
    // The whole output starts where this input's slice starts minus its offset.
    for (size_t i = 0; i < c.inputs.size() && c.inputs[i] != t; ++i) offset += c.concat_axis[i];
    float* base = external.at[t] - offset;
    const int64_t stride = c.out_dims[1];
    offset = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const uint32_t in = c.inputs[i];
      if (external.at[in]) {
        if (external.at[in] != base + offset || external.pixel_stride[in] != stride || !plan.is_input[in]) {
          refuse(in, "not the Concat's slice of one buffer");
        }
      } else if (uses[in] == 1 && !plan.is_output[in] && producer[in] < node_count) {
        write_conv_into(producer[in], c.output, offset, stride);
      } else {
        refuse(in, "a Concat input beside it is neither a slice nor a private convolution result");
      }
      offset += c.concat_axis[i];
    }
    if (external.at[c.output] && external.at[c.output] != base) refuse(c.output, "its Concat output lives elsewhere");
    external.at[c.output] = base;
    external.pixel_stride[c.output] = stride;
    fusions.writes[concat] = CO_UP_NO_TENSOR;  // written in place by the producers
  }
}

std::unique_ptr<co_up_compiled> compile(co_up_device* device, const co_up_subgraph_desc& graph) {
  auto c = std::make_unique<co_up_compiled>();
  c->device = device;
  const uint32_t tensor_count = graph.tensor_count;
  std::vector<float*> buffers(tensor_count, nullptr);
  auto port = [&](uint32_t t) {
    co_up_compiled::Port port;
    port.tensor = t;
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    // An NHWC boundary (between two NHWC backends) is already in the internal layout.
    if (d.rank == 4 && d.layout != CO_UP_LAYOUT_NHWC && d.dims[2] * d.dims[3] > 1 && d.dims[1] > 1) {
      port.convert = true;
      port.batch = d.dims[0];
      port.channels = d.dims[1];
      port.plane = d.dims[2] * d.dims[3];
      port.staging = Buffer<float>(port.batch * port.channels * port.plane);
    }
    port.internal = buffers[t];
    port.count = backends::element_count(d);
    return port;
  };

  const backends::SubgraphPlan subgraph = backends::plan_subgraph(kDecodeRules, graph);
  const std::vector<bool>& is_input = subgraph.is_input;
  StepFusions fusions = plan_step_fusions(graph, subgraph);
  ExternalTensors external = external_tensors(graph);
  fuse_external_slices(graph, subgraph, fusions, external);
  const ActivationPlan memory = plan_activations(graph, subgraph, fusions);
  c->storage.resize(tensor_count);
  for (uint32_t t = 0; t < tensor_count; ++t) {
    if (!memory.own[t] || external.at[t]) continue;
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    const int64_t count = backends::element_count(d);
    c->storage[t] = Buffer<float>(count);
    buffers[t] = c->storage[t].data();
    if (d.data && !is_input[t]) {
      // A constant read as an activation (e.g. Add with a constant): copy in internal layout.
      if (d.rank == 4) {
        CpuPool inline_pool(1, {}, Schedule::kStatic);
        nchw_to_nhwc(static_cast<const float*>(d.data), c->storage[t].data(), d.dims[0], d.dims[1],
                     d.dims[2] * d.dims[3], inline_pool);
      } else {
        std::memcpy(c->storage[t].data(), d.data, static_cast<size_t>(count) * sizeof(float));
      }
    }
  }
  const backends::ArenaPlan arena = backends::plan_arena(memory.lifetimes);
  if (arena.bytes > 0) {
    c->arena = Buffer<float>(arena.bytes / static_cast<int64_t>(sizeof(float)));
    for (uint32_t t = 0; t < tensor_count; ++t) {
      if (arena.offsets[t] >= 0) buffers[t] = c->arena.data() + arena.offsets[t] / static_cast<int64_t>(sizeof(float));
    }
    // Runtime memory over the arena: a Concat output found above has an arena offset too (unused).
    for (uint32_t t = 0; t < tensor_count; ++t) {
      if (external.at[t]) buffers[t] = external.at[t];
    }
    for (uint32_t t = 0; t < tensor_count; ++t) {
      if (memory.same_as[t] != CO_UP_NO_TENSOR) buffers[t] = buffers[memory.same_as[t]];
    }
  }
  for (uint32_t t = 0; t < tensor_count; ++t) {
    if (external.at[t]) buffers[t] = external.at[t];
  }
  for (uint32_t i = 0; i < graph.input_count; ++i) c->inputs.push_back(port(graph.inputs[i]));
  for (uint32_t i = 0; i < graph.output_count; ++i) c->outputs.push_back(port(graph.outputs[i]));
  for (auto* ports : {&c->inputs, &c->outputs}) {
    for (co_up_compiled::Port& p : *ports) p.external = external.at[p.tensor] != nullptr;
  }
  std::vector<F32Step> work = build_f32_steps(graph, subgraph, fusions, buffers, *device->pool);
  for (uint32_t n = 0; n < graph.node_count; ++n) {
    c->steps.push_back({element_at(graph.nodes, n).layer, std::move(work[n])});
  }
  return c;
}

void convert_input(co_up_compiled& c, co_up_compiled::Port& in) {
  if (in.convert && in.pending) {
    nchw_to_nhwc(in.staging.data(), in.internal, in.batch, in.channels, in.plane,
                 *c.device->pool);
  }
  in.pending = false;
}

void run(co_up_compiled& c, const co_up_run_hooks* hooks) {
  const backends::LayerHooks layer_hooks(hooks);
  // The pool's workers poll from here to the last layer: layers that run on the caller alone
  // (longer than a worker's idle spin) would otherwise send them to sleep, and the next split
  // layer would wait for a wake-up.
  const CpuPool::Warm warm(*c.device->pool);
  if (c.input_warm_until) {
    c.device->pool->end_warm_until(*c.input_warm_until);
    c.input_warm_until.reset();
  }
  // An input mapped and written but never unmapped is still converted.
  for (auto& in : c.inputs) convert_input(c, in);
  for (size_t s = 0; s < c.steps.size(); ++s) {
    if (backends::starts_layer(c.steps, s)) layer_hooks.begin(c.steps[s].layer);
    c.steps[s].work.run(*c.device->pool);
    if (backends::ends_layer(c.steps, s)) layer_hooks.end(c.steps[s].layer);
  }
}

// Long enough for the runtime to write a frame's inputs and start the run (well under a
// millisecond for a 224x224 image); a bound, so that a run that never comes costs at most this
// much polling.
constexpr auto kInputWarmHold = std::chrono::milliseconds(20);

void warm_for_input(co_up_compiled& c) {
  const auto now = std::chrono::steady_clock::now();
  if (c.input_warm_until && now < *c.input_warm_until) return;  // this frame's hold still runs
  c.input_warm_until = now + kInputWarmHold;
  c.device->pool->warm_until(*c.input_warm_until);
}

// ---------------------------------------------------------------------------------------------
// The backend as backends::PluginAdapter builds the ABI table from it.

struct XnnBackend {
  static constexpr backends::PluginInfo kInfo = {
      kBackendName, kBackendVersion,
      "f32 CPU backend on XNNPACK (NEON / SSE / AVX kernels), NHWC inside a sub-graph, one pinned "
      "thread pool per cluster",
      CO_UP_BACKEND_CPU,
      1u << CO_UP_LAYOUT_NHWC,  // boundary_layouts: NHWC inside, so NHWC boundaries skip the transposes
      // external_io: NHWC ports in runtime memory, Conv outputs written into a Concat's slices
      CO_UP_EXTERNAL_IO_DENSE | CO_UP_EXTERNAL_IO_CHANNEL_SLICE,
  };
  static constexpr const backends::StatusOrigin& kStatusOrigin = xnnpack::kStatusOrigin;
  static constexpr const backends::DecodeRules& kDecodeRules = xnnpack::kDecodeRules;

  static std::unique_ptr<co_up_factory> create_factory(const co_up_option* options, uint32_t count);
  static std::unique_ptr<co_up_device> create_device(co_up_factory& factory,
                                                     const co_up_option* options, uint32_t count);
  static void release_device(co_up_device* device);
  static void refine_query(co_up_device& device, const co_up_subgraph_desc& graph,
                           uint32_t node_index, co_up_node_support& support);
  static std::unique_ptr<co_up_compiled> compile(co_up_device& device,
                                                 const co_up_subgraph_desc& graph) {
    return xnnpack::compile(&device, graph);
  }
  static void* map(co_up_compiled& c, int32_t direction, uint32_t index);
  static void unmap(co_up_compiled& c, int32_t direction, uint32_t index);
  static void bind_input(co_up_compiled& c, uint32_t index, const void* host_ptr);
  static void run(co_up_compiled& c, const co_up_run_hooks* hooks) { xnnpack::run(c, hooks); }
};

// XNNPACK's initialisation is process-wide and idempotent; it is never undone when a factory is
// released, since another factory of this plugin (another registry) may still use it.
std::unique_ptr<co_up_factory> XnnBackend::create_factory(const co_up_option*, uint32_t) {
  initialize_xnnpack("use cpu-reference");
  return std::make_unique<co_up_factory>();
}

std::unique_ptr<co_up_device> XnnBackend::create_device(co_up_factory& factory_ref,
                                                       const co_up_option* options,
                                                       uint32_t option_count) {
  co_up_factory* factory = &factory_ref;
  auto device = std::make_unique<co_up_device>();
  device->factory = factory;
  backends::CpuDeviceOptions parsed;
  Schedule schedule = Schedule::kDynamic;
  backends::for_each_option(options, option_count, [&](std::string_view key, std::string_view value) {
    if (backends::parse_cpu_device_option(key, value, parsed)) return;
    if (key == "schedule") {
      if (value != "static" && value != "dynamic") {
        fail(CO_UP_STATUS_INVALID_ARGUMENT,
             "option schedule='" + std::string(value) + "' must be 'static' or 'dynamic'");
      }
      schedule = value == "static" ? Schedule::kStatic : Schedule::kDynamic;
    }
  });
  device->processor = parsed.processor;
  device->cores = parsed.cores;
  const int threads = parsed.thread_count();
  const std::string who = std::string("processor ") + device->processor;
  const int core_count = static_cast<int>(device->cores.size());
  if (core_count > 0 && threads > core_count) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         who + ": option threads=" + std::to_string(threads) + " exceeds the " +
             std::to_string(core_count) + " CPU(s) in cores=" + cores_string(device->cores) +
             " (use threads <= number of cores)");
  }
  const std::vector<int> online = online_cpus();
  for (int core : device->cores) {
    if (std::find(online.begin(), online.end(), core) == online.end()) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           who + ": core " + std::to_string(core) + " in cores=" + cores_string(device->cores) +
               " does not exist on this machine (online: " + cores_string(online) +
               "); fix the platform's cores");
    }
  }
  std::lock_guard lock(factory->mutex);
  for (const auto& [other, claim] : factory->claims) {
    if (claim.first == device->processor) continue;  // the same processor (another executor)
    for (int core : device->cores) {
      if (std::find(claim.second.begin(), claim.second.end(), core) != claim.second.end()) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT,
             who + ": core " + std::to_string(core) + " also belongs to processor " +
                 claim.first + " (cores " + cores_string(claim.second) +
                 "); clusters must not share cores, each has its own pool");
      }
    }
  }
  try {
    device->pool = std::make_unique<CpuPool>(
        threads, parsed.pin ? std::span<const int>(device->cores) : std::span<const int>(),
        schedule);
  } catch (const std::runtime_error& e) {
    fail(CO_UP_STATUS_RUNTIME_ERROR, who + ": " + e.what());
  }
  factory->claims.push_back({device.get(), {device->processor, device->cores}});
  return device;
}

void XnnBackend::release_device(co_up_device* device) {
  {
    std::lock_guard lock(device->factory->mutex);
    auto& claims = device->factory->claims;
    claims.erase(std::remove_if(claims.begin(), claims.end(),
                                [&](const auto& c) { return c.first == device; }),
                 claims.end());
  }
  std::unique_ptr<co_up_device>{device};
}

// A node decode_node accepts may still be one an XNNPACK operator refuses at creation (its
// parameter checks are XNNPACK's own): the query builds the node's step once, on scratch
// buffers, and declines with XNNPACK's message, so that compile never fails on a node the query
// accepted. Conv and FullyConnected are answered by decoding alone: their parameters are fully
// validated there, and packing their weights again would double the weights' memory while
// planning.
void XnnBackend::refine_query(co_up_device& device, const co_up_subgraph_desc& graph,
                              uint32_t node_index, co_up_node_support& support) {
  const NodePlan p = backends::decode_node(kDecodeRules, graph, node_index);
  if (p.op == Op::kConv || p.op == Op::kFullyConnected) return;
  std::vector<Buffer<float>> scratch;
  std::vector<float*> buffers(graph.tensor_count, nullptr);
  auto provide = [&](uint32_t t) {
    if (t == CO_UP_NO_TENSOR || buffers[t] != nullptr) return;
    scratch.emplace_back(backends::element_count(element_at(graph.tensors, t)));
    buffers[t] = scratch.back().data();
  };
  for (uint32_t t : p.inputs) provide(t);
  provide(p.output);
  try {
    build_f32_step(graph, node_index, p, buffers, *device.pool);
  } catch (const backends::PluginError& e) {
    if (e.code() == CO_UP_STATUS_OUT_OF_MEMORY) throw;
    support.supported = 0;
    std::snprintf(support.reason, sizeof(support.reason), "%s", e.what());
  }
}

co_up_compiled::Port& port_at(co_up_compiled* compiled, int32_t direction, uint32_t index,
                              const char* call) {
  auto& list = direction == CO_UP_IO_INPUT ? compiled->inputs : compiled->outputs;
  backends::check_port(call, direction, index, list.size());
  // A port in runtime memory may be a channel slice: a dense map or bind would read or write
  // over its neighbours' channels. The runtime reads and writes it where it lies instead.
  if (list[index].external) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(call) + ": the " +
                                            (direction == CO_UP_IO_INPUT ? "input " : "output ") +
                                            std::to_string(index) + " lives in io_memory; use it there");
  }
  return list[index];
}

// Inputs: 4-D ones are written in NCHW into a staging buffer and converted at unmap (timed by the
// runtime as transfer). Outputs: 4-D ones are converted to NCHW here, at map.
void* XnnBackend::map(co_up_compiled& c, int32_t direction, uint32_t index) {
  co_up_compiled::Port& port = port_at(&c, direction, index, "compiled_map");
  float* internal = port.internal;
  if (!port.convert) return internal;
  if (direction == CO_UP_IO_INPUT) {
    warm_for_input(c);
    port.pending = true;
  } else {
    nhwc_to_nchw(internal, port.staging.data(), port.batch, port.channels, port.plane,
                 *c.device->pool);
  }
  return port.staging.data();
}

void XnnBackend::unmap(co_up_compiled& c, int32_t direction, uint32_t index) {
  co_up_compiled::Port& port = port_at(&c, direction, index, "compiled_unmap");
  if (direction == CO_UP_IO_INPUT) convert_input(c, port);
}

// Binding reads the runtime's buffer at once: 4-D inputs are converted NCHW -> NHWC straight from
// it into the operators' fixed input buffer (one pass, instead of the runtime's copy into the
// staging buffer plus a conversion); others are copied. The runtime must keep `host_ptr` valid
// only for this call, which is within what the ABI asks.
void XnnBackend::bind_input(co_up_compiled& c, uint32_t index, const void* host_ptr) {
  co_up_compiled* compiled = &c;
  co_up_compiled::Port& port = port_at(compiled, CO_UP_IO_INPUT, index, "compiled_bind_input");
  if (reinterpret_cast<uintptr_t>(host_ptr) % alignof(float) != 0) {
    fail(CO_UP_STATUS_UNSUPPORTED,
         "compiled_bind_input: host_ptr is not 4-byte aligned (map and copy instead)");
  }
  warm_for_input(*compiled);
  const auto* src = static_cast<const float*>(host_ptr);
  if (port.convert) {
    nchw_to_nhwc(src, port.internal, port.batch, port.channels, port.plane, *compiled->device->pool);
  } else {
    std::memcpy(port.internal, src, static_cast<size_t>(port.count) * sizeof(float));
  }
  port.pending = false;
}

constexpr co_up_plugin_api kApi = backends::PluginAdapter<XnnBackend>::api();

}  // namespace
}  // namespace co_up::xnnpack

extern "C" CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(
    uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return nullptr;
  return &co_up::xnnpack::kApi;
}
