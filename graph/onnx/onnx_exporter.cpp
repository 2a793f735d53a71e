#include "graph/onnx/onnx_exporter.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "onnx/onnx_pb.h"

namespace co_up::graph {
namespace {

// ONNX 1.9's IR version, released with opset 14: converters pinned to older onnx packages
// (rknn-toolkit2 ships several) refuse a newer IR version although nothing here needs one.
constexpr int64_t kIrVersion = 7;
// protobuf cannot serialize a message of 2 GB or more.
constexpr uint64_t kMaxModelBytes = (uint64_t{1} << 31) - (uint64_t{1} << 20);

int32_t onnx_elem_type(DataType dtype) {
  switch (dtype) {
    case DataType::kF32: return onnx::TensorProto::FLOAT;
    case DataType::kF16: return onnx::TensorProto::FLOAT16;
    case DataType::kI8: return onnx::TensorProto::INT8;
    case DataType::kU8: return onnx::TensorProto::UINT8;
    case DataType::kI32: return onnx::TensorProto::INT32;
    case DataType::kI64: return onnx::TensorProto::INT64;
  }
  return onnx::TensorProto::UNDEFINED;
}

class Exporter {
 public:
  Exporter(const Graph& graph, const OnnxExportRegion& region) : graph_(graph), region_(region) {}

  onnx::ModelProto run();

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("exporting '" + region_.name + "' of graph '" + graph_.name() + "' to ONNX: " + what);
  }
  [[noreturn]] void fail_node(const Node& n, const std::string& what) const {
    fail("node '" + n.name + "' (" + std::string(op_type_name(n.op)) + "): " + what);
  }

  // A name no other value or node of the model has yet: `wanted`, else `wanted_<n>`.
  std::string unique(const std::string& wanted, std::set<std::string>& used);
  // The model's name for an IR tensor the node reads: region input, earlier output or constant.
  std::string input_name(const Node& n, TensorId t);
  // Names the IR tensor `t` as the output of the node being written.
  std::string define(TensorId t);
  std::string add_float_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                    const float* values, size_t count);
  std::string add_int64_initializer(const std::string& name, const std::vector<int64_t>& values);
  onnx::NodeProto& add_node(const std::string& op_type, const std::string& name,
                            const std::vector<std::string>& inputs, const std::string& output);
  void add_value_info(onnx::ValueInfoProto* info, const std::string& name, const TensorDesc& desc);

  void export_node(const Node& n);
  // Writes `op_type` computing IR tensor n.outputs[0], followed by the fused activation.
  onnx::NodeProto& add_with_activation(const Node& n, const std::string& op_type,
                                       const std::vector<std::string>& inputs);

  const Graph& graph_;
  const OnnxExportRegion& region_;
  onnx::GraphProto* onnx_graph_ = nullptr;
  std::map<TensorId, std::string> names_;  // IR tensor -> model value, once available
  std::set<std::string> value_names_;
  std::set<std::string> node_names_;
  uint64_t initializer_bytes_ = 0;
};

void set_attr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void set_attr(onnx::NodeProto& node, const std::string& name, double value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(value));
}

void set_attr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

std::string Exporter::unique(const std::string& wanted, std::set<std::string>& used) {
  const std::string base = wanted.empty() ? "value" : wanted;
  std::string name = base;
  for (int suffix = 1; used.count(name) != 0; ++suffix) name = base + "_" + std::to_string(suffix);
  used.insert(name);
  return name;
}

std::string Exporter::add_float_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                            const float* values, size_t count) {
  initializer_bytes_ += count * sizeof(float);
  if (initializer_bytes_ > kMaxModelBytes) {
    fail("the weights exceed 2 GB, more than an ONNX file holds without external data (export a "
         "smaller partition)");
  }
  onnx::TensorProto* t = onnx_graph_->add_initializer();
  const std::string unique_name = unique(name, value_names_);
  t->set_name(unique_name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  // raw_data is little-endian; so are the hosts co_up runs on (x86-64, aarch64).
  t->set_raw_data(reinterpret_cast<const char*>(values), count * sizeof(float));
  return unique_name;
}

std::string Exporter::add_int64_initializer(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = onnx_graph_->add_initializer();
  const std::string unique_name = unique(name, value_names_);
  t->set_name(unique_name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
  return unique_name;
}

std::string Exporter::input_name(const Node& n, TensorId t) {
  if (auto it = names_.find(t); it != names_.end()) return it->second;
  const Tensor& tensor = graph_.tensor(t);
  if (!tensor.is_constant) {
    fail_node(n, "reads '" + tensor.name +
                     "', which is neither a region input nor computed earlier in the region");
  }
  std::string name = add_float_initializer(tensor.name, tensor.desc.shape, tensor.data.data(), tensor.data.size());
  names_[t] = name;
  return name;
}

std::string Exporter::define(TensorId t) {
  std::string name = unique(graph_.tensor(t).name, value_names_);
  names_[t] = name;
  return name;
}

onnx::NodeProto& Exporter::add_node(const std::string& op_type, const std::string& name,
                                    const std::vector<std::string>& inputs, const std::string& output) {
  onnx::NodeProto* node = onnx_graph_->add_node();
  node->set_op_type(op_type);
  node->set_name(unique(name, node_names_));
  // Optional inputs are "" in the middle and left out at the end.
  size_t count = inputs.size();
  while (count > 0 && inputs[count - 1].empty()) --count;
  for (size_t i = 0; i < count; ++i) node->add_input(inputs[i]);
  node->add_output(output);
  return *node;
}

void Exporter::add_value_info(onnx::ValueInfoProto* info, const std::string& name, const TensorDesc& desc) {
  info->set_name(name);
  onnx::TypeProto::Tensor* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx_elem_type(desc.dtype));
  onnx::TensorShapeProto* shape = type->mutable_shape();
  for (int64_t d : desc.shape) shape->add_dim()->set_dim_value(d);
}

onnx::NodeProto& Exporter::add_with_activation(const Node& n, const std::string& op_type,
                                               const std::vector<std::string>& inputs) {
  const TensorId out = n.outputs.at(0);
  const std::string activation = n.attrs.has("activation") ? n.attrs.get_string("activation") : "none";
  if (activation == "none") return add_node(op_type, n.name, inputs, define(out));
  if (activation != "relu" && activation != "relu6") {
    fail_node(n, "fused activation '" + activation + "' has no ONNX export (none, relu, relu6)");
  }
  const std::string preact = unique(graph_.tensor(out).name + "/preact", value_names_);
  // The Relu/Clip is added after the producer, whose reference stays valid: protobuf's repeated
  // message fields keep elements at stable addresses.
  onnx::NodeProto& producer = add_node(op_type, n.name, inputs, preact);
  if (activation == "relu") {
    add_node("Relu", n.name + "/relu", {preact}, define(out));
  } else {
    const float lo = 0.0f, hi = 6.0f;
    const std::string min = add_float_initializer(n.name + "/relu6_min", {}, &lo, 1);
    const std::string max = add_float_initializer(n.name + "/relu6_max", {}, &hi, 1);
    add_node("Clip", n.name + "/relu6", {preact, min, max}, define(out));
  }
  return producer;
}

void Exporter::export_node(const Node& n) {
  if (n.outputs.size() != 1) fail_node(n, "has " + std::to_string(n.outputs.size()) + " outputs, expected 1");
  std::vector<std::string> inputs;
  for (TensorId t : n.inputs) inputs.push_back(t == kNoTensor ? std::string() : input_name(n, t));
  if (inputs.empty() || inputs[0].empty()) fail_node(n, "has no data input");
  const TensorId out = n.outputs[0];
  auto simple = [&](const char* op_type) -> onnx::NodeProto& {
    return add_node(op_type, n.name, inputs, define(out));
  };
  switch (n.op) {
    case OpType::kInput:
      return;
    case OpType::kConv: {
      const std::vector<int64_t>& w = graph_.tensor(n.inputs.at(1)).desc.shape;
      onnx::NodeProto& conv = add_with_activation(n, "Conv", inputs);
      set_attr(conv, "kernel_shape", std::vector<int64_t>{w.at(2), w.at(3)});
      set_attr(conv, "strides", n.attrs.get_ints("strides"));
      set_attr(conv, "pads", n.attrs.get_ints("pads"));
      set_attr(conv, "dilations", n.attrs.get_ints("dilations"));
      set_attr(conv, "group", n.attrs.get_int("group"));
      return;
    }
    case OpType::kFullyConnected: {
      // Gemm takes [N, K]; the IR flattens any other rank itself (graph/op.h).
      if (graph_.tensor(n.inputs[0]).desc.shape.size() != 2) {
        const std::string flat = unique(graph_.tensor(out).name + "/flatten", value_names_);
        set_attr(add_node("Flatten", n.name + "/flatten", {inputs[0]}, flat), "axis", int64_t{1});
        inputs[0] = flat;
      }
      onnx::NodeProto& gemm = add_with_activation(n, "Gemm", inputs);
      set_attr(gemm, "transB", int64_t{1});  // W is [M, K]
      return;
    }
    case OpType::kMaxPool:
    case OpType::kAveragePool: {
      onnx::NodeProto& pool = simple(n.op == OpType::kMaxPool ? "MaxPool" : "AveragePool");
      set_attr(pool, "kernel_shape", n.attrs.get_ints("kernel_shape"));
      set_attr(pool, "strides", n.attrs.get_ints("strides"));
      set_attr(pool, "pads", n.attrs.get_ints("pads"));
      set_attr(pool, "ceil_mode", n.attrs.get_int("ceil_mode"));
      if (n.op == OpType::kAveragePool) {
        set_attr(pool, "count_include_pad", n.attrs.get_int("count_include_pad"));
      }
      return;
    }
    case OpType::kGlobalAveragePool: simple("GlobalAveragePool"); return;
    case OpType::kGlobalMaxPool: simple("GlobalMaxPool"); return;
    case OpType::kRelu: simple("Relu"); return;
    case OpType::kSigmoid: simple("Sigmoid"); return;
    case OpType::kHardSwish: simple("HardSwish"); return;
    case OpType::kIdentity: simple("Identity"); return;
    case OpType::kClip: {
      const auto lo = static_cast<float>(n.attrs.get_float("min"));
      const auto hi = static_cast<float>(n.attrs.get_float("max"));
      inputs.resize(1);
      inputs.push_back(add_float_initializer(n.name + "/min", {}, &lo, 1));
      inputs.push_back(add_float_initializer(n.name + "/max", {}, &hi, 1));
      simple("Clip");
      return;
    }
    case OpType::kLrn: {
      onnx::NodeProto& lrn = simple("LRN");
      set_attr(lrn, "size", n.attrs.get_int("size"));
      set_attr(lrn, "alpha", n.attrs.get_float("alpha"));
      set_attr(lrn, "beta", n.attrs.get_float("beta"));
      set_attr(lrn, "bias", n.attrs.get_float("bias"));
      return;
    }
    case OpType::kBatchNormalization:
      set_attr(simple("BatchNormalization"), "epsilon", n.attrs.get_float("epsilon"));
      return;
    case OpType::kConcat:
      set_attr(simple("Concat"), "axis", n.attrs.get_int("axis"));
      return;
    case OpType::kAdd:
      add_with_activation(n, "Add", inputs);
      return;
    case OpType::kSoftmax:
      set_attr(simple("Softmax"), "axis", n.attrs.get_int("axis"));
      return;
    case OpType::kFlatten:
      set_attr(simple("Flatten"), "axis", n.attrs.get_int("axis"));
      return;
    case OpType::kChannelScale:
      simple("Mul");  // ONNX broadcasts S[N,C,1,1] over H and W
      return;
    case OpType::kHardSigmoid: {
      onnx::NodeProto& hs = simple("HardSigmoid");
      set_attr(hs, "alpha", n.attrs.get_float("alpha"));
      set_attr(hs, "beta", n.attrs.get_float("beta"));
      return;
    }
    case OpType::kSiLU: {
      const std::string gate = unique(graph_.tensor(out).name + "/sigmoid", value_names_);
      add_node("Sigmoid", n.name + "/sigmoid", {inputs[0]}, gate);
      add_node("Mul", n.name, {inputs[0], gate}, define(out));
      return;
    }
    case OpType::kChannelShuffle: {
      // The pattern the importer recognises: Reshape -> Transpose(0,2,1,3,4) -> Reshape.
      const std::vector<int64_t>& d = graph_.tensor(n.inputs[0]).desc.shape;
      const int64_t g = n.attrs.get_int("groups");
      const std::string split = unique(graph_.tensor(out).name + "/groups", value_names_);
      const std::string swapped = unique(graph_.tensor(out).name + "/transposed", value_names_);
      add_node("Reshape", n.name + "/split",
               {inputs[0], add_int64_initializer(n.name + "/split_shape", {d[0], g, d[1] / g, d[2], d[3]})},
               split);
      set_attr(add_node("Transpose", n.name + "/transpose", {split}, swapped), "perm",
               std::vector<int64_t>{0, 2, 1, 3, 4});
      add_node("Reshape", n.name, {swapped, add_int64_initializer(n.name + "/shape", d)}, define(out));
      return;
    }
    case OpType::kReshape:
      inputs.resize(1);
      inputs.push_back(add_int64_initializer(n.name + "/shape", n.attrs.get_ints("shape")));
      simple("Reshape");
      return;
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
    case OpType::kPow:
    case OpType::kSqrt:
    case OpType::kErf:
    case OpType::kTanh:
    case OpType::kExp:
    case OpType::kMatMul:
      simple(std::string(op_type_name(n.op)).c_str());
      return;
    case OpType::kTranspose:
      set_attr(simple("Transpose"), "perm", n.attrs.get_ints("perm"));
      return;
    case OpType::kReduceMean:
    case OpType::kReduceSum:
    case OpType::kGather:
    case OpType::kSlice:
    case OpType::kLayerNormalization:
    case OpType::kGelu:
    case OpType::kLeakyRelu:
    case OpType::kResize:
    case OpType::kPad:
      break;  // not exported yet: the message below names the op
  }
  fail_node(n, "has no ONNX export");
}

onnx::ModelProto Exporter::run() {
  if (region_.nodes.empty()) fail("the region has no nodes");
  if (region_.outputs.empty()) fail("the region has no outputs");
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("co_up");
  model.set_producer_version("0.1.0");
  model.set_doc_string("'" + region_.name + "': a region of co_up graph '" + graph_.name() + "'");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxExportOpset);
  onnx_graph_ = model.mutable_graph();
  onnx_graph_->set_name(region_.name);

  for (TensorId t : region_.inputs) {
    const Tensor& tensor = graph_.tensor(t);
    if (tensor.is_constant) fail("region input '" + tensor.name + "' is a constant");
    if (names_.count(t) != 0) fail("region input '" + tensor.name + "' is listed twice");
    add_value_info(onnx_graph_->add_input(), define(t), tensor.desc);
  }
  for (NodeId id : region_.nodes) export_node(graph_.node(id));
  for (TensorId t : region_.outputs) {
    auto it = names_.find(t);
    if (it == names_.end()) {
      fail("region output '" + graph_.tensor(t).name + "' is not computed by the region's nodes");
    }
    add_value_info(onnx_graph_->add_output(), it->second, graph_.tensor(t).desc);
  }
  return model;
}

}  // namespace

std::string export_onnx_bytes(const Graph& graph, const OnnxExportRegion& region) {
  const onnx::ModelProto model = Exporter(graph, region).run();
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw InputError("exporting '" + region.name + "' to ONNX: protobuf serialization failed");
  }
  return bytes;
}

void export_onnx_file(const Graph& graph, const OnnxExportRegion& region,
                      const std::filesystem::path& path) {
  const std::string bytes = export_onnx_bytes(graph, region);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw InputError("cannot write '" + path.string() + "': " + std::strerror(errno) +
                     " (choose a writable directory)");
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    throw InputError("cannot write '" + path.string() + "': " + std::strerror(errno) +
                     " (disk full?)");
  }
}

}  // namespace co_up::graph
