// rknn: the Rockchip NPU as a co_up accelerator (ARM-CO-UP §4.3's NPU node for RKNPU2 boards).
//
// A sub-graph mapped to this backend is one NPU node: compiled_create loads the model that the
// vendor converter made of that partition, `<graph>_<first>_<last>.rknn` in the processor's
// "model_dir", and checks its tensors against the partition; compiled_run converts the inputs to
// the model's type and layout (the terminal nodes), runs it through the RKNN API and converts the
// outputs back to f32 NCHW. The partition itself comes from `co_up --export-partitions=DIR`
// (ONNX), then rknn-toolkit2 (ONNX -> .rknn, with quantisation if wanted).
//
// Library: librknnrt.so through the dynamic linker's path, or $CO_UP_RKNN_LIBRARY, opened at
// factory_create (the plugin declines to load without it, saying why); the processor option
// "library" opens another one for that device.
//
// Device options (platform JSON "options" of the processor): "model_dir" (default: the working
// directory), "library". The runtime's "processor", "cores" and "threads" are accepted; the host
// thread that calls the RKNN API is pinned by the runtime itself.
//
// Terminal conversions run inside compiled_run, so co_up's profile counts them in the sub-graph's
// time (not as transfer); the layer hooks wrap only the RKNN calls (inputs_set .. outputs_get),
// once for the whole partition: layer_begin(first_layer), layer_end(last_layer).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "co_up/plugin_abi.h"
#include "plugin_adapter.h"
#include "plugin_options.h"
#include "plugin_status.h"
#include "rknn_api_types.h"
#include "rknn_marshal.h"
#include "rknn_runtime.h"
#include "run_hooks.h"
#include "subgraph_desc.h"

namespace co_up::rknn {
namespace {

using backends::element_at;
using backends::fail;

constexpr const char* kBackendName = "rknn";
constexpr const char* kBackendVersion = "1.0.0";

constexpr backends::StatusOrigin kStatusOrigin = {
    kBackendName,
    {sizeof(co_up_status), CO_UP_STATUS_OUT_OF_MEMORY, "rknn: out of memory"},
    "out of memory"};

std::string dims_text(const rknn_tensor_attr& attr) {
  std::string text = "[";
  for (uint32_t d = 0; d < attr.n_dims && d < RKNN_MAX_DIMS; ++d) {
    if (d > 0) text += ',';
    text += std::to_string(attr.dims[d]);
  }
  return text + "]";
}

const char* format_name(rknn_tensor_format fmt) {
  switch (fmt) {
    case RKNN_TENSOR_NCHW: return "NCHW";
    case RKNN_TENSOR_NHWC: return "NHWC";
    case RKNN_TENSOR_NC1HWC2: return "NC1HWC2";
    case RKNN_TENSOR_UNDEFINED: return "UNDEFINED";
  }
  return "?";
}

}  // namespace
}  // namespace co_up::rknn

// ---------------------------------------------------------------------------------------------
// The opaque ABI handles.

using co_up::rknn::RknnRuntime;

struct co_up_factory {
  std::shared_ptr<const RknnRuntime> runtime;
};

struct co_up_device {
  char processor = '?';
  std::shared_ptr<const RknnRuntime> runtime;
  std::filesystem::path model_dir = ".";
};

struct co_up_compiled {
  // One partition input or output and the model tensor it is bound to.
  struct Port {
    uint32_t model_index = 0;  // index in the RKNN model (may differ from the partition's)
    co_up::rknn::rknn_tensor_attr attr{};
    co_up::rknn::TensorLayout layout;
    std::vector<float> nchw;           // co_up's side: mapped by the runtime
    std::vector<unsigned char> packed;  // inputs: the model's type and layout, when not f32 NCHW
    const float* bound = nullptr;       // inputs: compiled_bind_input for the next run
  };

  ~co_up_compiled() {
    if (has_context) runtime->destroy(context);
  }

  std::shared_ptr<const RknnRuntime> runtime;  // outlives the context it made
  co_up::rknn::rknn_context context = 0;
  bool has_context = false;
  uint32_t first_layer = 0;
  uint32_t last_layer = 0;
  std::string model;  // the .rknn path, for messages
  std::vector<Port> inputs;
  std::vector<Port> outputs;
  // The per-run argument arrays of the RKNN calls, allocated once.
  std::vector<co_up::rknn::rknn_input> rknn_inputs;
  std::vector<co_up::rknn::rknn_output> rknn_outputs;
};

namespace co_up::rknn {
namespace {

void check_rknn(const co_up_compiled& c, int code, const char* call) {
  if (code != RKNN_SUCC) {
    fail(CO_UP_STATUS_RUNTIME_ERROR, std::string(call) + " failed for '" + c.model + "': " +
                                         rknn_error_name(code) + " (" + std::to_string(code) + ")");
  }
}

std::vector<char> read_model(const std::filesystem::path& path, const std::string& partition) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "converted model '" + path.string() + "' not found: make it with `co_up --export-partitions=DIR` (writes " +
             partition + ".onnx) and Rockchip's rknn-toolkit2 (" + partition + ".onnx -> " + partition +
             ".rknn), then set the processor's \"model_dir\" option to its directory");
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) fail(CO_UP_STATUS_RUNTIME_ERROR, "cannot read '" + path.string() + "'");
  if (bytes.empty()) fail(CO_UP_STATUS_INVALID_ARGUMENT, "converted model '" + path.string() + "' is empty");
  if (bytes.size() > UINT32_MAX) fail(CO_UP_STATUS_INVALID_ARGUMENT, "'" + path.string() + "' exceeds 4 GB");
  return bytes;
}

// Position in the model of each partition tensor: by name when the model kept every name (the
// converter usually does, and then the order cannot matter), else by position.
std::vector<uint32_t> match_ports(const std::vector<std::string>& partition,
                                  const std::vector<rknn_tensor_attr>& model) {
  std::vector<uint32_t> order(partition.size());
  std::vector<bool> taken(model.size(), false);
  for (size_t i = 0; i < partition.size(); ++i) {
    bool found = false;
    for (size_t m = 0; m < model.size() && !found; ++m) {
      const std::string_view name(model[m].name, strnlen(model[m].name, RKNN_MAX_NAME_LEN));
      if (!taken[m] && name == partition[i]) {
        order[i] = static_cast<uint32_t>(m);
        taken[m] = found = true;
      }
    }
    if (!found) {
      for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<uint32_t>(k);
      return order;
    }
  }
  return order;
}

// The layout of a model tensor bound to partition tensor `t`; throws naming both when the model
// was converted from something else.
TensorLayout layout_for(const co_up_tensor_desc& t, const rknn_tensor_attr& attr, bool is_input,
                        const std::string& model) {
  TensorLayout layout;
  layout.nchw_dims.assign(t.dims, t.dims + t.rank);
  const char* role = is_input ? "input" : "output";
  const std::string what = std::string("model ") + role + " " + std::to_string(attr.index) + " ('" +
                           std::string(attr.name, strnlen(attr.name, RKNN_MAX_NAME_LEN)) + "', " +
                           dims_text(attr) + " " + format_name(attr.fmt) + ") of '" + model + "'";
  if (attr.fmt == RKNN_TENSOR_NC1HWC2) {
    fail(CO_UP_STATUS_UNSUPPORTED, what + " is in the NPU's native NC1HWC2 layout, which only "
                                          "zero-copy I/O uses; convert the model with NCHW or NHWC I/O");
  }
  std::vector<int64_t> model_dims(attr.dims, attr.dims + std::min(attr.n_dims, RKNN_MAX_DIMS));
  const std::vector<int64_t>& d = layout.nchw_dims;
  if (attr.fmt == RKNN_TENSOR_NHWC && d.size() == 4) {
    layout.nhwc = true;
    if (model_dims != std::vector<int64_t>{d[0], d[2], d[3], d[1]}) model_dims.clear();
  } else if (model_dims != d) {
    model_dims.clear();
  }
  if (model_dims.empty()) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         what + " does not fit partition " + role + " '" + (t.name ? t.name : "?") + "' " +
             backends::dims_string(d) + " NCHW: the .rknn file was converted from another "
                                        "partition, model or image size (re-export and re-convert it)");
  }
  if (is_input) {
    layout.type = attr.type;
    try {
      (void)element_size(attr.type);
    } catch (const std::invalid_argument& e) {
      fail(CO_UP_STATUS_UNSUPPORTED, what + ": " + e.what());
    }
    if (attr.type == RKNN_TENSOR_INT8 || attr.type == RKNN_TENSOR_UINT8) {
      if (attr.qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC) {
        layout.scale = attr.scale;
        layout.zero_point = attr.zp;
      } else if (attr.qnt_type == RKNN_TENSOR_QNT_DFP) {
        layout.scale = std::ldexp(1.0f, -attr.fl);
      }
      if (!(layout.scale > 0.0f) || !std::isfinite(layout.scale)) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, what + " has quantisation scale " + std::to_string(layout.scale));
      }
    }
  }
  return layout;
}

std::vector<rknn_tensor_attr> query_attrs(co_up_compiled& c, rknn_query_cmd cmd, uint32_t count) {
  std::vector<rknn_tensor_attr> attrs(count);
  for (uint32_t i = 0; i < count; ++i) {
    attrs[i].index = i;
    check_rknn(c, c.runtime->query(c.context, cmd, &attrs[i], sizeof(rknn_tensor_attr)),
               cmd == RKNN_QUERY_INPUT_ATTR ? "rknn_query(RKNN_QUERY_INPUT_ATTR)"
                                            : "rknn_query(RKNN_QUERY_OUTPUT_ATTR)");
  }
  return attrs;
}

std::unique_ptr<co_up_compiled> compile(const co_up_device& device, const co_up_subgraph_desc& graph) {
  auto c = std::make_unique<co_up_compiled>();
  c->runtime = device.runtime;
  c->first_layer = graph.first_layer;
  c->last_layer = graph.last_layer;
  // The paper's naming: graph name and the first and last layer of the partition.
  const std::string partition = std::string(graph.graph_name ? graph.graph_name : "graph") + "_" +
                                std::to_string(graph.first_layer) + "_" +
                                std::to_string(graph.last_layer);
  const std::filesystem::path path = device.model_dir / (partition + ".rknn");
  c->model = path.string();
  std::vector<char> bytes = read_model(path, partition);

  check_rknn(*c, c->runtime->init(&c->context, bytes.data(), static_cast<uint32_t>(bytes.size()), 0, nullptr),
             "rknn_init");
  c->has_context = true;
  rknn_input_output_num io{};
  check_rknn(*c, c->runtime->query(c->context, RKNN_QUERY_IN_OUT_NUM, &io, sizeof io),
             "rknn_query(RKNN_QUERY_IN_OUT_NUM)");
  if (io.n_input != graph.input_count || io.n_output != graph.output_count) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "'" + c->model + "' has " + std::to_string(io.n_input) + " inputs and " +
             std::to_string(io.n_output) + " outputs, partition " + partition + " has " +
             std::to_string(graph.input_count) + " and " + std::to_string(graph.output_count) +
             " (re-export and re-convert it)");
  }
  const std::vector<rknn_tensor_attr> in_attrs = query_attrs(*c, RKNN_QUERY_INPUT_ATTR, io.n_input);
  const std::vector<rknn_tensor_attr> out_attrs = query_attrs(*c, RKNN_QUERY_OUTPUT_ATTR, io.n_output);

  auto bind_ports = [&](const uint32_t* indices, uint32_t count, const std::vector<rknn_tensor_attr>& attrs,
                        bool is_input, std::vector<co_up_compiled::Port>& ports) {
    std::vector<std::string> names;
    for (uint32_t i = 0; i < count; ++i) names.push_back(backends::tensor_name(graph, indices[i]));
    const std::vector<uint32_t> order = match_ports(names, attrs);
    for (uint32_t i = 0; i < count; ++i) {
      co_up_compiled::Port port;
      port.model_index = order[i];
      port.attr = attrs[order[i]];
      const co_up_tensor_desc& t = element_at(graph.tensors, indices[i]);
      if (t.dtype != CO_UP_DTYPE_F32) {
        fail(CO_UP_STATUS_UNSUPPORTED, "partition tensor '" + names[i] + "' is not f32");
      }
      port.layout = layout_for(t, port.attr, is_input, c->model);
      port.nchw.resize(static_cast<size_t>(port.layout.element_count()));
      if (is_input && (port.layout.nhwc || port.layout.type != RKNN_TENSOR_FLOAT32)) {
        port.packed.resize(port.layout.bytes());
      }
      ports.push_back(std::move(port));
    }
  };
  bind_ports(graph.inputs, graph.input_count, in_attrs, true, c->inputs);
  bind_ports(graph.outputs, graph.output_count, out_attrs, false, c->outputs);
  c->rknn_inputs.resize(c->inputs.size());
  c->rknn_outputs.resize(c->outputs.size());
  return c;
}

void run(co_up_compiled& c, const co_up_run_hooks* hooks) {
  const backends::LayerHooks layer_hooks(hooks);
  // Input terminal nodes: f32 NCHW -> the model's type and layout.
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    co_up_compiled::Port& in = c.inputs[i];
    const float* src = in.bound ? in.bound : in.nchw.data();
    in.bound = nullptr;  // a binding lasts one run
    rknn_input& arg = c.rknn_inputs[i];
    arg = {};
    arg.index = in.model_index;
    arg.pass_through = 0;
    arg.type = in.layout.type;
    arg.fmt = in.layout.nhwc ? RKNN_TENSOR_NHWC : RKNN_TENSOR_NCHW;
    arg.size = static_cast<uint32_t>(in.layout.bytes());
    if (in.packed.empty()) {
      // Already what the model takes; the runtime copies it during rknn_inputs_set.
      arg.buf = const_cast<float*>(src);
    } else {
      pack_input(src, in.layout, in.packed.data());
      arg.buf = in.packed.data();
    }
  }
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    co_up_compiled::Port& out = c.outputs[o];
    rknn_output& arg = c.rknn_outputs[o];
    arg = {};
    arg.want_float = 1;
    arg.index = out.model_index;
    if (!out.layout.nhwc) {
      // No layout change: the runtime writes straight into co_up's buffer.
      arg.is_prealloc = 1;
      arg.buf = out.nchw.data();
      arg.size = static_cast<uint32_t>(out.nchw.size() * sizeof(float));
    }
  }

  const auto n_in = static_cast<uint32_t>(c.rknn_inputs.size());
  const auto n_out = static_cast<uint32_t>(c.rknn_outputs.size());
  layer_hooks.begin(c.first_layer);
  check_rknn(c, c.runtime->inputs_set(c.context, n_in, c.rknn_inputs.data()), "rknn_inputs_set");
  check_rknn(c, c.runtime->run(c.context, nullptr), "rknn_run");
  check_rknn(c, c.runtime->outputs_get(c.context, n_out, c.rknn_outputs.data(), nullptr), "rknn_outputs_get");
  // From here the runtime holds output buffers until rknn_outputs_release, also on errors.
  struct ReleaseOutputs {
    co_up_compiled& c;
    bool done = false;
    ~ReleaseOutputs() {
      if (!done) c.runtime->outputs_release(c.context, static_cast<uint32_t>(c.rknn_outputs.size()), c.rknn_outputs.data());
    }
  } release{c};
  layer_hooks.end(c.last_layer);

  // Output terminal nodes: the runtime's f32 (NHWC or NCHW) -> co_up's NCHW.
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    co_up_compiled::Port& out = c.outputs[o];
    const rknn_output& arg = c.rknn_outputs[o];
    const size_t want = out.nchw.size() * sizeof(float);
    if (arg.buf == nullptr || arg.size != want) {
      fail(CO_UP_STATUS_RUNTIME_ERROR, "rknn_outputs_get gave " + std::to_string(arg.size) +
                                           " bytes for output " + std::to_string(out.model_index) + " of '" +
                                           c.model + "', expected " + std::to_string(want) + " (f32)");
    }
    if (arg.buf != out.nchw.data()) unpack_output(static_cast<const float*>(arg.buf), out.layout, out.nchw.data());
  }
  release.done = true;
  check_rknn(c, c.runtime->outputs_release(c.context, n_out, c.rknn_outputs.data()), "rknn_outputs_release");
}

// ---------------------------------------------------------------------------------------------
// The backend as backends::PluginAdapter builds the ABI table from it.

co_up_compiled::Port& port(co_up_compiled& compiled, int32_t direction, uint32_t index, const char* call) {
  auto& ports = direction == CO_UP_IO_INPUT ? compiled.inputs : compiled.outputs;
  backends::check_port(call, direction, index, ports.size());
  return ports[index];
}

struct RknnBackend {
  static constexpr backends::PluginInfo kInfo = {
      kBackendName, kBackendVersion,
      "Rockchip NPU through the RKNPU2 runtime (librknnrt.so): runs <graph>_<first>_<last>.rknn "
      "partitions converted by rknn-toolkit2",
      CO_UP_BACKEND_ACCELERATOR,
      0,  // boundary_layouts: NCHW only
  };
  static constexpr const backends::StatusOrigin& kStatusOrigin = rknn::kStatusOrigin;

  static std::unique_ptr<co_up_factory> create_factory(const co_up_option*, uint32_t) {
    const char* env = std::getenv(kLibraryEnvironment);
    auto factory = std::make_unique<co_up_factory>();
    factory->runtime = RknnRuntime::open(env != nullptr && *env != '\0' ? env : kDefaultLibrary);
    return factory;
  }

  static std::unique_ptr<co_up_device> create_device(co_up_factory& factory, const co_up_option* options,
                                                     uint32_t option_count) {
    auto device = std::make_unique<co_up_device>();
    device->runtime = factory.runtime;
    backends::for_each_option(options, option_count, [&](std::string_view key, std::string_view value) {
      if (key == "processor" && value.size() == 1) {
        device->processor = value[0];
      } else if (key == "model_dir") {
        if (value.empty()) fail(CO_UP_STATUS_INVALID_ARGUMENT, "option model_dir is empty (a directory of .rknn files)");
        device->model_dir = std::string(value);
      } else if (key == "library" && value != factory.runtime->library()) {
        try {
          device->runtime = RknnRuntime::open(std::string(value));
        } catch (const backends::PluginError& e) {
          // The factory's library loaded, so this is the processor option's fault.
          fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string("option library='") + std::string(value) + "': " + e.what());
        }
      }
    });
    return device;
  }

  static void answer_query(co_up_device&, const co_up_subgraph_desc* graph, uint32_t node_index,
                           co_up_node_support& support) {
    backends::check_graph(graph);
    if (node_index >= graph->node_count) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "device_query_node: node " + std::to_string(node_index) +
                                              " is out of range (" + std::to_string(graph->node_count) + ")");
    }
    // What the NPU runs is settled by the vendor converter, not here: every node is part of the
    // converted model, and a partition it cannot take fails at conversion (or at compile, when
    // the .rknn file does not fit the partition).
    support.supported = 1;
    std::snprintf(support.reason, sizeof support.reason,
                  "runs inside the converted RKNN model of the partition");
  }

  static std::unique_ptr<co_up_compiled> compile(co_up_device& device, const co_up_subgraph_desc& graph) {
    return rknn::compile(device, graph);
  }

  static void* map(co_up_compiled& compiled, int32_t direction, uint32_t index) {
    return port(compiled, direction, index, "compiled_map").nchw.data();
  }

  static void unmap(co_up_compiled& compiled, int32_t direction, uint32_t index) {
    port(compiled, direction, index, "compiled_unmap");
  }

  static void bind_input(co_up_compiled& compiled, uint32_t index, const void* host_ptr) {
    co_up_compiled::Port& in = port(compiled, CO_UP_IO_INPUT, index, "compiled_bind_input");
    if (reinterpret_cast<uintptr_t>(host_ptr) % alignof(float) != 0) {
      fail(CO_UP_STATUS_UNSUPPORTED, "compiled_bind_input: host_ptr is not 4-byte aligned (map and copy instead)");
    }
    in.bound = static_cast<const float*>(host_ptr);
  }

  static void run(co_up_compiled& compiled, const co_up_run_hooks* hooks) { rknn::run(compiled, hooks); }
};

constexpr co_up_plugin_api kApi = backends::PluginAdapter<RknnBackend>::api();

}  // namespace
}  // namespace co_up::rknn

extern "C" CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(uint32_t host_abi_major,
                                                                           uint32_t /*host_abi_minor*/) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return nullptr;
  return &co_up::rknn::kApi;
}
