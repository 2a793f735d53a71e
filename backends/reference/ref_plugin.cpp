// ABI glue of the cpu-reference backend: factory -> device (options, thread pool) -> compiled
// sub-graph (validated nodes, packed weights, one buffer per tensor).
//
// Statuses, option parsing and node decoding are backends/common's (see plugin_status.h): the
// same rules and messages as the other backends.
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "co_up/plugin_abi.h"
#include "node_decode.h"
#include "plugin_adapter.h"
#include "plugin_options.h"
#include "plugin_status.h"
#include "ref_cnn_kernels.h"
#include "ref_kernels.h"
#include "ref_resample_kernels.h"
#include "ref_tensor_kernels.h"
#include "ref_thread_pool.h"
#include "run_hooks.h"
#include "subgraph_desc.h"
#include "subgraph_plan.h"

namespace co_up::reference {
namespace {

using backends::element_at;
using backends::element_count;
using backends::fail;
using backends::NodePlan;
using backends::Op;

constexpr const char* kBackendName = "cpu-reference";
constexpr const char* kBackendVersion = "1.0.0";

// What cpu-reference's statuses and decoding messages say about it.
constexpr backends::StatusOrigin kStatusOrigin = {
    kBackendName,
    {sizeof(co_up_status), CO_UP_STATUS_OUT_OF_MEMORY,
     "cpu-reference: out of memory (free memory or use smaller sub-graphs)"},
    "out of memory (free memory or split the sub-graph)"};
// Beyond the base ops: the CNN forms and the rank-N tensor ops have steps in build_step.
constexpr bool implements(Op op) { return backends::is_cnn_form(op) || op == Op::kTensorOp; }
constexpr backends::DecodeRules kDecodeRules = {kBackendName, "packs it", false, implements};

}  // namespace
}  // namespace co_up::reference

// ---------------------------------------------------------------------------------------------
// The opaque ABI handles.

using co_up::backends::NodePlan;
using co_up::reference::ThreadPool;

struct co_up_factory {};

struct co_up_device {
  char processor = '?';
  std::vector<int> cores;
  // Declared last: workers are joined before the options they were made from go away.
  std::unique_ptr<ThreadPool> pool;
};

struct co_up_compiled {
  // One executable step per node; reads `tensors` through the pointer table of the run.
  struct Step {
    uint32_t layer = 0;
    std::function<void(const std::vector<float*>& tensors, ThreadPool* pool, float* scratch)> run;
  };

  co_up_device* device = nullptr;
  std::vector<uint32_t> inputs;   // tensor index per graph input
  std::vector<uint32_t> outputs;  // tensor index per graph output
  std::vector<bool> input_is_output;
  std::vector<co_up::reference::AlignedBuffer> storage;  // per tensor: activations and constants
  std::vector<float*> tensors;                          // per tensor: where it lives
  std::vector<int64_t> sizes;                           // per tensor: element count
  std::vector<const void*> bound;                       // per input: bind_input pointer or NULL
  std::vector<float*> run_tensors;                      // tensors with bindings applied
  co_up::reference::AlignedBuffer scratch;              // per-thread GEMM panels, shared by steps
  std::vector<Step> steps;
};

namespace co_up::reference {
namespace {

using StepFunction = std::function<void(const std::vector<float*>&, ThreadPool*, float*)>;

// The step of a rank-N op: plans (strides, shapes) are made here, once; runs only compute.
StepFunction build_tensor_step(const NodePlan& p) {
  using backends::TensorOp;
  const uint32_t in = p.inputs[0];
  const uint32_t out = p.output;
  const int64_t count = element_count(p.out_dims);
  switch (p.tensor_op) {
    case TensorOp::kAdd:
    case TensorOp::kSub:
    case TensorOp::kMul:
    case TensorOp::kDiv:
    case TensorOp::kPow: {
      static constexpr BinaryOp kBinary[] = {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul,
                                             BinaryOp::kDiv, BinaryOp::kPow};
      const BinaryOp op = kBinary[static_cast<int>(p.tensor_op) - static_cast<int>(TensorOp::kAdd)];
      const BroadcastPlan plan = plan_broadcast(p.in_dims, p.in1_dims, p.out_dims);
      const uint32_t b = p.inputs[1];
      const Activation act = p.activation;
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        broadcast_binary(op, plan, t[in], t[b], t[out], act, pool);
      };
    }
    case TensorOp::kSqrt:
    case TensorOp::kErf:
    case TensorOp::kTanh:
    case TensorOp::kExp:
    case TensorOp::kGelu: {
      const UnaryOp op = p.tensor_op == TensorOp::kSqrt  ? UnaryOp::kSqrt
                         : p.tensor_op == TensorOp::kErf ? UnaryOp::kErf
                         : p.tensor_op == TensorOp::kTanh ? UnaryOp::kTanh
                         : p.tensor_op == TensorOp::kExp ? UnaryOp::kExp
                         : p.gelu_tanh                   ? UnaryOp::kGeluTanh
                                                         : UnaryOp::kGelu;
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        unary(op, t[in], t[out], count, pool);
      };
    }
    case TensorOp::kMatMul: {
      const MatMulPlan plan = plan_matmul(p.in_dims, p.in1_dims);
      const uint32_t b = p.inputs[1];
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        matmul(plan, t[in], t[b], t[out], pool);
      };
    }
    case TensorOp::kTranspose:
    case TensorOp::kSlice: {
      const StridedCopyPlan plan = p.tensor_op == TensorOp::kTranspose
                                       ? plan_transpose(p.in_dims, p.ints)
                                       : plan_slice(p.in_dims, p.ints, p.ints2, p.out_dims);
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        strided_copy(plan, t[in], t[out], pool);
      };
    }
    case TensorOp::kReduceMean:
    case TensorOp::kReduceSum: {
      const ReducePlan plan = plan_reduce(p.in_dims, p.ints, p.tensor_op == TensorOp::kReduceMean);
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        reduce(plan, t[in], t[out], pool);
      };
    }
    case TensorOp::kGather: {
      int64_t outer = 1, inner = 1;
      const auto axis = static_cast<size_t>(p.axis);
      for (size_t d = 0; d < axis; ++d) outer *= p.in_dims[d];
      for (size_t d = axis + 1; d < p.in_dims.size(); ++d) inner *= p.in_dims[d];
      const int64_t axis_len = p.in_dims[axis];
      auto indices = std::make_shared<const std::vector<int64_t>>(p.ints);
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        gather(t[in], t[out], outer, axis_len, inner, *indices, pool);
      };
    }
    case TensorOp::kLayerNormalization: {
      int64_t outer = 1;
      for (size_t d = 0; d < static_cast<size_t>(p.axis); ++d) outer *= p.in_dims[d];
      const int64_t size = element_count(p.in_dims) / outer;
      const uint32_t scale = p.inputs[1], bias = p.inputs[2];
      const float epsilon = p.value0;
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        layer_norm(t[in], t[out], outer, size, t[scale], bias == CO_UP_NO_TENSOR ? nullptr : t[bias],
                   epsilon, pool);
      };
    }
    case TensorOp::kLeakyRelu: {
      const float alpha = p.value0;
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        leaky_relu(t[in], t[out], count, alpha, pool);
      };
    }
    case TensorOp::kResize: {
      auto plan = std::make_shared<const ResizePlan>(plan_resize(p.in_dims, p.out_dims, p.floats, p.resize));
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        resize(*plan, t[in], t[out], pool);
      };
    }
    case TensorOp::kPad: {
      auto plan = std::make_shared<const PadPlan>(plan_pad(p.in_dims, p.ints, p.pad_mode, p.value0));
      return [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        pad(*plan, t[in], t[out], pool);
      };
    }
  }
  return {};
}

// Builds the executable step of a validated node, copying or packing what it keeps of `graph`.
co_up_compiled::Step build_step(const co_up_subgraph_desc& graph, uint32_t index,
                                const NodePlan& p, int threads, size_t* scratch_floats) {
  co_up_compiled::Step step;
  step.layer = element_at(graph.nodes, index).layer;
  auto data = [&](uint32_t t) -> const float* {
    return t == CO_UP_NO_TENSOR ? nullptr
                                : static_cast<const float*>(element_at(graph.tensors, t).data);
  };
  const uint32_t out = p.output;
  const uint32_t in = p.inputs[0];
  const int64_t count = element_count(p.out_dims);
  switch (p.op) {
    case Op::kConv: {
      auto packed = std::make_shared<const PackedConv2d>(p.conv, data(p.inputs[1]), data(p.inputs[2]));
      *scratch_floats = std::max(*scratch_floats, packed->scratch_floats(threads));
      step.run = [packed, in, out](const std::vector<float*>& t, ThreadPool* pool, float* scratch) {
        packed->run(t[in], t[out], scratch, pool);
      };
      break;
    }
    case Op::kFullyConnected: {
      auto packed = std::make_shared<const PackedFullyConnected>(
          p.fc_out, p.fc_in, data(p.inputs[1]), data(p.inputs[2]), p.activation);
      const int64_t batch = p.in_dims[0];
      step.run = [packed, in, out, batch](const std::vector<float*>& t, ThreadPool* pool, float*) {
        packed->run(t[in], batch, t[out], pool);
      };
      break;
    }
    case Op::kMaxPool:
    case Op::kAveragePool: {
      const Pool2dShape shape = p.pool;
      const bool average = p.op == Op::kAveragePool;
      step.run = [shape, average, in, out](const std::vector<float*>& t, ThreadPool* pool, float*) {
        if (average) {
          average_pool2d(shape, t[in], t[out], pool);
        } else {
          max_pool2d(shape, t[in], t[out], pool);
        }
      };
      break;
    }
    case Op::kGlobalAveragePool:
    case Op::kGlobalMaxPool: {
      const int64_t planes = p.in_dims[0] * p.in_dims[1];
      const int64_t plane = p.in_dims[2] * p.in_dims[3];
      const bool average = p.op == Op::kGlobalAveragePool;
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        if (average) {
          global_average_pool(planes, plane, t[in], t[out], pool);
        } else {
          global_max_pool(planes, plane, t[in], t[out], pool);
        }
      };
      break;
    }
    case Op::kRelu:
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        relu(t[in], t[out], count, pool);
      };
      break;
    case Op::kClip: {
      const float lo = p.value0;
      const float hi = p.value1;
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        clip(t[in], t[out], count, lo, hi, pool);
      };
      break;
    }
    case Op::kSigmoid:
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        sigmoid(t[in], t[out], count, pool);
      };
      break;
    case Op::kHardSwish:
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        hard_swish(t[in], t[out], count, pool);
      };
      break;
    case Op::kLrn: {
      const auto d = p.in_dims;
      const int64_t size = p.size;
      const float alpha = p.value0, beta = p.value1, bias = p.value2;
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        lrn(t[in], t[out], d[0], d[1], d[2] * d[3], size, alpha, beta, bias, pool);
      };
      break;
    }
    case Op::kBatchNormalization: {
      const int64_t batch = p.in_dims[0];
      const int64_t channels = p.in_dims[1];
      const int64_t plane = count / (batch * channels);
      auto folded = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * channels));
      fold_batch_norm(channels, data(p.inputs[1]), data(p.inputs[2]), data(p.inputs[3]),
                      data(p.inputs[4]), p.value0, folded->data(), folded->data() + channels);
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        batch_norm(t[in], t[out], batch, channels, plane, folded->data(),
                   folded->data() + channels, pool);
      };
      break;
    }
    case Op::kConcat: {
      const std::vector<uint32_t> ins = p.inputs;
      const std::vector<int64_t> axis = p.concat_axis;
      const int64_t outer = p.outer, inner = p.inner;
      // DenseNet concatenates dozens of inputs per frame: the pointer list is made once and
      // refilled per run (the ABI runs a compiled sub-graph on one thread at a time).
      auto srcs = std::make_shared<std::vector<const float*>>(ins.size());
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        for (size_t i = 0; i < ins.size(); ++i) (*srcs)[i] = t[ins[i]];
        concat(*srcs, axis, outer, inner, t[out], pool);
      };
      break;
    }
    case Op::kAdd: {
      const uint32_t b = p.inputs[1];
      const Activation act = p.activation;
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        add(t[in], t[b], t[out], count, act, pool);
      };
      break;
    }
    case Op::kSoftmax: {
      const int64_t outer = p.outer, axis = p.axis_len, inner = p.inner;
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        softmax(t[in], t[out], outer, axis, inner, pool);
      };
      break;
    }
    case Op::kFlatten:
    case Op::kReshape:
    case Op::kIdentity:
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        copy(t[in], t[out], count, pool);
      };
      break;
    case Op::kChannelScale: {
      const uint32_t s = p.inputs[1];
      const int64_t batch = p.in_dims[0], channels = p.in_dims[1];
      const int64_t plane = p.in_dims[2] * p.in_dims[3];
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        channel_scale(t[in], t[s], t[out], batch, channels, plane, pool);
      };
      break;
    }
    case Op::kHardSigmoid: {
      const float alpha = p.value0, beta = p.value1;
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        hard_sigmoid(t[in], t[out], count, alpha, beta, pool);
      };
      break;
    }
    case Op::kSiLU:
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        silu(t[in], t[out], count, pool);
      };
      break;
    case Op::kChannelShuffle: {
      const int64_t batch = p.in_dims[0], channels = p.in_dims[1];
      const int64_t plane = p.in_dims[2] * p.in_dims[3], groups = p.groups;
      step.run = [=](const std::vector<float*>& t, ThreadPool* pool, float*) {
        channel_shuffle(t[in], t[out], batch, channels, plane, groups, pool);
      };
      break;
    }
    case Op::kTensorOp:
      step.run = build_tensor_step(p);
      break;
  }
  return step;
}

std::unique_ptr<co_up_compiled> compile(co_up_device* device, const co_up_subgraph_desc& graph) {
  auto c = std::make_unique<co_up_compiled>();
  c->device = device;
  const uint32_t tensor_count = graph.tensor_count;
  const backends::SubgraphPlan subgraph = backends::plan_subgraph(kDecodeRules, graph);
  const std::vector<NodePlan>& plans = subgraph.nodes;
  const std::vector<bool>& is_input = subgraph.is_input;
  c->inputs = subgraph.inputs;
  c->outputs = subgraph.outputs;

  // Tensors the steps reach through the pointer table; weights they pack are not among them.
  std::vector<bool> needed(tensor_count, false);
  for (uint32_t t : c->inputs) needed[t] = true;
  for (const NodePlan& plan : plans) {
    needed[plan.output] = true;
    const bool packs = plan.op == Op::kConv || plan.op == Op::kFullyConnected ||
                       plan.op == Op::kBatchNormalization;
    for (size_t i = 0; i < (packs ? 1 : plan.inputs.size()); ++i) {
      if (plan.inputs[i] != CO_UP_NO_TENSOR) needed[plan.inputs[i]] = true;
    }
  }

  // Storage: constants copied (their data is only valid during this call), activations allocated.
  c->storage.resize(tensor_count);
  c->tensors.assign(tensor_count, nullptr);
  c->sizes.assign(tensor_count, 0);
  for (uint32_t t = 0; t < tensor_count; ++t) {
    if (!needed[t]) continue;
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    const int64_t count = element_count(d);
    c->sizes[t] = count;
    c->storage[t] = AlignedBuffer(static_cast<size_t>(count));
    if (d.data && !is_input[t]) {
      std::memcpy(c->storage[t].data(), d.data, static_cast<size_t>(count) * sizeof(float));
    }
    c->tensors[t] = c->storage[t].data();
  }

  const int threads = device->pool->thread_count();
  size_t scratch_floats = 0;
  for (uint32_t n = 0; n < graph.node_count; ++n) {
    c->steps.push_back(build_step(graph, n, plans[n], threads, &scratch_floats));
  }
  c->scratch = AlignedBuffer(scratch_floats);
  c->bound.assign(c->inputs.size(), nullptr);
  for (uint32_t t : c->inputs) {
    bool also_output = false;
    for (uint32_t o : c->outputs) also_output = also_output || o == t;
    c->input_is_output.push_back(also_output);
  }
  c->run_tensors = c->tensors;
  return c;
}

void run(co_up_compiled& c, const co_up_run_hooks* hooks) {
  const backends::LayerHooks layer_hooks(hooks);
  // Bindings last for one run; clear them even when a step throws.
  struct ClearBindings {
    co_up_compiled& c;
    ~ClearBindings() {
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        c.bound[i] = nullptr;
        c.run_tensors[c.inputs[i]] = c.tensors[c.inputs[i]];
      }
    }
  } clear{c};
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.bound[i]) continue;
    const uint32_t t = c.inputs[i];
    // The kernels only read through this pointer; the const is restored by contract.
    c.run_tensors[t] = const_cast<float*>(static_cast<const float*>(c.bound[i]));
    if (c.input_is_output[i]) {
      std::memcpy(c.tensors[t], c.bound[i], static_cast<size_t>(c.sizes[t]) * sizeof(float));
      c.run_tensors[t] = c.tensors[t];
    }
  }
  ThreadPool* pool = c.device->pool.get();
  for (size_t s = 0; s < c.steps.size(); ++s) {
    if (backends::starts_layer(c.steps, s)) layer_hooks.begin(c.steps[s].layer);
    c.steps[s].run(c.run_tensors, pool, c.scratch.data());
    if (backends::ends_layer(c.steps, s)) layer_hooks.end(c.steps[s].layer);
  }
}

// ---------------------------------------------------------------------------------------------
// The backend as backends::PluginAdapter builds the ABI table from it.

struct RefBackend {
  static constexpr backends::PluginInfo kInfo = {
      kBackendName, kBackendVersion,
      "Portable multi-threaded f32 CPU backend (im2col-free packed GEMM), the reference for "
      "correctness",
      CO_UP_BACKEND_CPU,
      0,  // boundary_layouts: NCHW, the layout it computes in
  };
  static constexpr const backends::StatusOrigin& kStatusOrigin = reference::kStatusOrigin;
  static constexpr const backends::DecodeRules& kDecodeRules = reference::kDecodeRules;

  static std::unique_ptr<co_up_factory> create_factory(const co_up_option*, uint32_t) {
    return std::make_unique<co_up_factory>();
  }

  static std::unique_ptr<co_up_device> create_device(co_up_factory&, const co_up_option* options,
                                                     uint32_t option_count) {
    auto device = std::make_unique<co_up_device>();
    backends::CpuDeviceOptions parsed;
    backends::for_each_option(options, option_count, [&](std::string_view key, std::string_view value) {
      backends::parse_cpu_device_option(key, value, parsed);
    });
    device->processor = parsed.processor;
    device->cores = parsed.cores;
    const int threads = parsed.thread_count();
    const int core_count = static_cast<int>(device->cores.size());
    if (core_count > 0 && threads > core_count) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "option threads=" + std::to_string(threads) + " exceeds the " +
               std::to_string(core_count) + " CPU(s) in cores (use threads <= number of cores)");
    }
    try {
      device->pool = std::make_unique<ThreadPool>(
          threads, parsed.pin ? std::span<const int>(device->cores) : std::span<const int>());
    } catch (const std::runtime_error& e) {
      fail(CO_UP_STATUS_RUNTIME_ERROR, std::string("processor ") + device->processor + ": " + e.what());
    }
    return device;
  }

  static std::unique_ptr<co_up_compiled> compile(co_up_device& device,
                                                 const co_up_subgraph_desc& graph) {
    return reference::compile(&device, graph);
  }

  static void* map(co_up_compiled& compiled, int32_t direction, uint32_t index) {
    const auto& list = direction == CO_UP_IO_INPUT ? compiled.inputs : compiled.outputs;
    if ((direction != CO_UP_IO_INPUT && direction != CO_UP_IO_OUTPUT) || index >= list.size()) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "compiled_map: " + std::string(direction == CO_UP_IO_INPUT ? "input" : "output") +
               " index " + std::to_string(index) + " is out of range (" +
               std::to_string(list.size()) + ")");
    }
    return compiled.tensors[list[index]];
  }

  static void unmap(co_up_compiled& compiled, int32_t direction, uint32_t index) {
    const auto& list = direction == CO_UP_IO_INPUT ? compiled.inputs : compiled.outputs;
    if ((direction != CO_UP_IO_INPUT && direction != CO_UP_IO_OUTPUT) || index >= list.size()) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "compiled_unmap: index " + std::to_string(index) + " is out of range");
    }
  }

  static void bind_input(co_up_compiled& compiled, uint32_t index, const void* host_ptr) {
    if (index >= compiled.inputs.size()) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "compiled_bind_input: input index " + std::to_string(index) + " is out of range (" +
               std::to_string(compiled.inputs.size()) + ")");
    }
    if (reinterpret_cast<uintptr_t>(host_ptr) % alignof(float) != 0) {
      fail(CO_UP_STATUS_UNSUPPORTED,
           "compiled_bind_input: host_ptr is not 4-byte aligned (map and copy instead)");
    }
    compiled.bound[index] = host_ptr;
  }

  static void run(co_up_compiled& compiled, const co_up_run_hooks* hooks) {
    reference::run(compiled, hooks);
  }
};

constexpr co_up_plugin_api kApi = backends::PluginAdapter<RefBackend>::api();

}  // namespace
}  // namespace co_up::reference

extern "C" CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(
    uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return nullptr;
  return &co_up::reference::kApi;
}
