#include "graph/onnx/onnx_importer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "core/error.h"
#include "core/io/input_file.h"
#include "graph/fusion.h"
#include "graph/onnx/onnx_constant.h"
#include "onnx/onnx_pb.h"

namespace co_up::graph {
namespace {

// Bounds on attribute values that reach shape arithmetic: real models stay far below, and a
// corrupt file cannot make the IR's shape inference overflow.
constexpr int64_t kMaxAttr = int64_t{1} << 20;
constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int64_t kMaxInputElements = int64_t{1} << 31;

using Pads = std::array<int64_t, 4>;  // top, left, bottom, right (the IR's order)

// What an ONNX value name stands for while importing.
struct Value {
  enum class Kind {
    kActivation,   // an IR tensor
    kConstant,     // known at load time
    kPad,             // zero Pad of `tensor` by `pads`, to be folded into the consumer; a
                      // consumer that cannot fold it reads `padded` (an IR Pad node, dropped
                      // at the end when nothing reads it)
    kChannelShuffle,  // Transpose(0,2,1,3,4) of `tensor` [N,C,H,W] viewed as [N,g,C/g,H,W]
                      // (g = `groups`): a ChannelShuffle once a Reshape brings it back to 4-D
  };
  Kind kind = Kind::kActivation;
  TensorId tensor = kNoTensor;
  std::shared_ptr<const OnnxConstant> constant;
  Pads pads{0, 0, 0, 0};
  TensorId padded = kNoTensor;
  int64_t groups = 0;
  std::string producer;  // node name, for messages
};

// The file's stem ("resnet50" for models/resnet50.onnx): exporters name every graph alike
// ("main_graph", "torch_jit"), and reports and messages should say which model ran.
std::string graph_name(const std::string& source) {
  const std::string stem = std::filesystem::path(source).stem().string();
  return stem.empty() ? "onnx" : stem;
}

const char* const kSupportedOps =
    "Conv, Gemm, MatMul, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, Relu, Clip, "
    "Sigmoid, HardSigmoid, HardSwish, LRN, BatchNormalization, Concat, Add, Sub, Mul, Div, Pow, "
    "Neg, Sqrt, Erf, Tanh, Exp, Softmax, Flatten, Reshape, Squeeze, Unsqueeze, Transpose, "
    "ReduceMean, ReduceSum, LayerNormalization, Gather (constant indices), Slice, Split, Pad "
    "(constant, reflect, edge), Resize (nearest, linear), LeakyRelu, Dropout, Identity, Cast (to "
    "float), Constant, and on constants Shape, ConstantOfShape, Equal, Mod, Not, Range, ScatterND, "
    "Where, Expand, Cast";

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string source, const OnnxImportOptions& options)
      : model_(model), source_(std::move(source)), options_(options),
        graph_(graph_name(source_)) {}

  Graph run();

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(source_ + ": " + what); }
  // Exits (docs/early_exits.md): the outputs OnnxImportOptions::exits lists, in that order, or
  // by convention outputs named exit0, exit1, ... in stage order (the final one may have any name).
  void mark_exits(const onnx::GraphProto& g) {
    std::vector<std::string> names;
    for (const onnx::ValueInfoProto& out : g.output()) names.push_back(out.name());
    if (!options_.exits.empty()) {
      std::vector<TensorId> order;
      for (const std::string& name : options_.exits) {
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) fail(options_.exits_origin + " lists exit '" + name + "', which is not a graph output");
        const TensorId t = graph_.outputs().at(static_cast<size_t>(it - names.begin()));
        if (std::find(order.begin(), order.end(), t) != order.end()) {
          fail(options_.exits_origin + " lists exit '" + name + "' twice");
        }
        order.push_back(t);
      }
      if (order.size() != names.size()) {
        fail(options_.exits_origin + " lists " + std::to_string(order.size()) + " exits but the model has " +
             std::to_string(names.size()) + " outputs; list every output, in stage order");
      }
      graph_.reorder_outputs(order);
      graph_.mark_outputs_as_exits();
      name_exits(options_.exits);
      return;
    }
    if (names.size() < 2) return;
    for (size_t k = 0; k + 1 < names.size(); ++k) {
      if (names[k] != "exit" + std::to_string(k)) return;
    }
    graph_.mark_outputs_as_exits();
    name_exits(names);
  }
  // The exit report names an exit by its tensor; give it the model's output name (exit0, ...),
  // not the producing node's.
  void name_exits(const std::vector<std::string>& names) {
    for (size_t k = 0; k < names.size(); ++k) graph_.mutable_tensor(graph_.outputs()[k]).name = names[k];
  }
  [[noreturn]] void fail_node(const onnx::NodeProto& n, const std::string& what) const {
    fail("node '" + node_name(n) + "' (" + n.op_type() + "): " + what);
  }
  std::string node_name(const onnx::NodeProto& n) const {
    if (!n.name().empty()) return n.name();
    return n.op_type() + "_" + std::to_string(node_index_) +
           (n.output_size() > 0 ? "(" + n.output(0) + ")" : "");
  }

  void check_opset();
  void add_input();
  void import_node(const onnx::NodeProto& n);

  // Attributes.
  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name,
                                   onnx::AttributeProto::AttributeType type) const;
  int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) const;
  double attr_float(const onnx::NodeProto& n, const std::string& name, double fallback) const;
  std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name,
                                 std::vector<int64_t> fallback) const;
  std::string attr_string(const onnx::NodeProto& n, const std::string& name,
                          const std::string& fallback) const;

  // Inputs and outputs.
  bool has_input(const onnx::NodeProto& n, int i) const {
    return i < n.input_size() && !n.input(i).empty();
  }
  const Value& value(const onnx::NodeProto& n, int i) const;
  TensorId activation(const onnx::NodeProto& n, int i) const;
  const OnnxConstant& constant(const onnx::NodeProto& n, int i, const char* what) const;
  bool is_constant(const onnx::NodeProto& n, int i) const {
    return value(n, i).kind == Value::Kind::kConstant;
  }
  void set_output(const onnx::NodeProto& n, int i, Value v);
  void set_activation(const onnx::NodeProto& n, TensorId t);
  void set_constant(const onnx::NodeProto& n, OnnxConstant c);
  void require_unused_outputs(const onnx::NodeProto& n, int from) const;

  // IR construction.
  TensorId emit(const onnx::NodeProto& n, OpType op, std::vector<TensorId> inputs, Attributes attrs);
  TensorId materialize(const std::string& name, const OnnxConstant& c, std::vector<int64_t> shape);
  const std::vector<int64_t>& shape_of(TensorId t) const { return graph_.tensor(t).desc.shape; }

  // Ops.
  void import_conv(const onnx::NodeProto& n);
  void import_gemm(const onnx::NodeProto& n, bool matmul);
  void import_pool(const onnx::NodeProto& n, OpType op);
  void import_elementwise_constant(const onnx::NodeProto& n);
  void import_softmax(const onnx::NodeProto& n);
  void import_reshape_like(const onnx::NodeProto& n);
  void import_pad(const onnx::NodeProto& n);
  void import_resize(const onnx::NodeProto& n);
  // Shape arithmetic over constants (the shifted-window mask of Swin): folded, never computed.
  void import_range(const onnx::NodeProto& n);
  void import_scatter_nd(const onnx::NodeProto& n);
  void import_clip(const onnx::NodeProto& n);
  void import_batch_norm(const onnx::NodeProto& n);
  void import_concat(const onnx::NodeProto& n);
  void import_constant_op(const onnx::NodeProto& n);
  // CNN patterns (graph/op.h's CNN forms): Mul of two computed tensors as SiLU, HardSwish or
  // ChannelScale, and Transpose of an activation as half a ChannelShuffle (false: not the pattern).
  bool import_cnn_mul(const onnx::NodeProto& n);
  bool import_channel_shuffle(const onnx::NodeProto& n);
  // The node producing activation `t` when it is an `op` node and its output, ONNX name `name`,
  // has the one reader being imported (no other reader, alias or graph output); else null.
  const Node* single_use_producer(TensorId t, const std::string& name, OpType op) const;
  void import_matmul(const onnx::NodeProto& n);
  void import_general_gemm(const onnx::NodeProto& n);
  void import_unary(const onnx::NodeProto& n, OpType op);
  void import_transpose(const onnx::NodeProto& n);
  void import_reduce(const onnx::NodeProto& n, OpType op);
  void import_gather(const onnx::NodeProto& n);
  void import_slice(const onnx::NodeProto& n);
  void import_split(const onnx::NodeProto& n);
  void import_layer_norm(const onnx::NodeProto& n);
  void import_where_expand(const onnx::NodeProto& n);
  TensorId operand(const onnx::NodeProto& n, int i);
  TensorId emit_named(const std::string& name, OpType op, std::vector<TensorId> inputs, Attributes attrs);
  bool fold_into_producer(const onnx::NodeProto& n, TensorId x, const OnnxConstant& c, bool multiply);
  Pads spatial_pads(const onnx::NodeProto& n, const std::vector<int64_t>& in_shape,
                    const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                    const std::vector<int64_t>& dilations);
  std::vector<int64_t> checked_attr_ints(const onnx::NodeProto& n, const std::string& name,
                                         std::vector<int64_t> fallback, size_t size, int64_t lo) const;

  const onnx::ModelProto& model_;
  std::string source_;
  const OnnxImportOptions& options_;
  Graph graph_;
  int64_t opset_ = 0;
  int node_index_ = 0;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, int> uses_;  // readers of each value name, graph outputs included
  std::set<std::string> constant_names_;
  // Nodes a fused pattern made unused (the Sigmoid of a SiLU, the Reshape of a ChannelShuffle),
  // dropped once the whole graph is imported.
  std::set<NodeId> dead_;
  // IR Pad nodes kept for readers that cannot fold a zero Pad; dropped when none reads them.
  std::vector<TensorId> pending_pads_;
};

// ---------------------------------------------------------------------------------------------
// Attributes

const onnx::AttributeProto* Importer::attr(const onnx::NodeProto& n, const std::string& name,
                                           onnx::AttributeProto::AttributeType type) const {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() != name) continue;
    // Old exporters leave `type` unset; infer it from the field that is filled in.
    onnx::AttributeProto::AttributeType actual = a.type();
    if (actual == onnx::AttributeProto::UNDEFINED) {
      if (a.has_i()) actual = onnx::AttributeProto::INT;
      else if (a.has_f()) actual = onnx::AttributeProto::FLOAT;
      else if (a.has_s()) actual = onnx::AttributeProto::STRING;
      else if (a.has_t()) actual = onnx::AttributeProto::TENSOR;
      else if (a.ints_size() > 0) actual = onnx::AttributeProto::INTS;
      else if (a.floats_size() > 0) actual = onnx::AttributeProto::FLOATS;
    }
    if (actual != type) {
      fail_node(n, "attribute '" + name + "' has type " + std::to_string(actual) + ", expected " +
                       std::to_string(type));
    }
    return &a;
  }
  return nullptr;
}

int64_t Importer::attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) const {
  const auto* a = attr(n, name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

double Importer::attr_float(const onnx::NodeProto& n, const std::string& name, double fallback) const {
  const auto* a = attr(n, name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::vector<int64_t> Importer::attr_ints(const onnx::NodeProto& n, const std::string& name,
                                         std::vector<int64_t> fallback) const {
  const auto* a = attr(n, name, onnx::AttributeProto::INTS);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

std::string Importer::attr_string(const onnx::NodeProto& n, const std::string& name,
                                  const std::string& fallback) const {
  const auto* a = attr(n, name, onnx::AttributeProto::STRING);
  return a ? a->s() : fallback;
}

std::vector<int64_t> Importer::checked_attr_ints(const onnx::NodeProto& n, const std::string& name,
                                                 std::vector<int64_t> fallback, size_t size,
                                                 int64_t lo) const {
  std::vector<int64_t> v = attr_ints(n, name, std::move(fallback));
  if (v.size() != size) {
    fail_node(n, "attribute '" + name + "' has " + std::to_string(v.size()) + " values, expected " +
                     std::to_string(size) + " (co_up imports 2-D convolutions and pools)");
  }
  for (int64_t x : v) {
    if (x < lo || x > kMaxAttr) {
      fail_node(n, "attribute '" + name + "' has value " + std::to_string(x) + " out of range");
    }
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Values

const Value& Importer::value(const onnx::NodeProto& n, int i) const {
  if (!has_input(n, i)) fail_node(n, "input " + std::to_string(i) + " is missing");
  auto it = values_.find(n.input(i));
  if (it == values_.end()) {
    fail_node(n, "reads '" + n.input(i) +
                     "', which no initializer, graph input or earlier node provides (nodes out of "
                     "order, or a truncated or corrupt file)");
  }
  return it->second;
}

TensorId Importer::activation(const onnx::NodeProto& n, int i) const {
  const Value& v = value(n, i);
  switch (v.kind) {
    case Value::Kind::kActivation:
      return v.tensor;
    case Value::Kind::kConstant:
      fail_node(n, "input '" + n.input(i) + "' is a constant; co_up needs a computed tensor here");
    case Value::Kind::kPad:
      return v.padded;
    case Value::Kind::kChannelShuffle:
      fail_node(n, "reads the 5-D output of Transpose '" + v.producer +
                       "'; co_up imports Reshape-Transpose-Reshape only as a whole channel shuffle");
  }
  fail_node(n, "bad value");
}

const OnnxConstant& Importer::constant(const onnx::NodeProto& n, int i, const char* what) const {
  const Value& v = value(n, i);
  if (v.kind != Value::Kind::kConstant) {
    fail_node(n, std::string(what) + " ('" + n.input(i) +
                     "') must be a constant (an initializer or computed from constants only)");
  }
  return *v.constant;
}

void Importer::set_output(const onnx::NodeProto& n, int i, Value v) {
  if (i >= n.output_size() || n.output(i).empty()) return;
  v.producer = node_name(n);
  values_[n.output(i)] = std::move(v);
}

void Importer::set_activation(const onnx::NodeProto& n, TensorId t) {
  Value v;
  v.tensor = t;
  set_output(n, 0, std::move(v));
}

void Importer::set_constant(const onnx::NodeProto& n, OnnxConstant c) {
  Value v;
  v.kind = Value::Kind::kConstant;
  v.constant = std::make_shared<const OnnxConstant>(std::move(c));
  set_output(n, 0, std::move(v));
}

void Importer::require_unused_outputs(const onnx::NodeProto& n, int from) const {
  for (int i = from; i < n.output_size(); ++i) {
    if (!n.output(i).empty() && uses_.count(n.output(i)) != 0) {
      fail_node(n, "output " + std::to_string(i) + " ('" + n.output(i) +
                       "') is used; co_up computes only the first output of " + n.op_type());
    }
  }
}

TensorId Importer::emit(const onnx::NodeProto& n, OpType op, std::vector<TensorId> inputs,
                        Attributes attrs) {
  if (op == OpType::kConv || op == OpType::kFullyConnected || op == OpType::kAdd) {
    if (!attrs.has("activation")) attrs.set("activation", std::string("none"));
  }
  try {
    return graph_.add_node(node_name(n), op, std::move(inputs), std::move(attrs), 0);
  } catch (const InputError& e) {
    fail(e.what());
  }
}

TensorId Importer::materialize(const std::string& name, const OnnxConstant& c,
                               std::vector<int64_t> shape) {
  std::string unique = name.empty() ? "const" : name;
  for (int k = 2; !constant_names_.insert(unique).second; ++k) unique = name + "#" + std::to_string(k);
  TensorDesc desc;
  desc.shape = std::move(shape);
  desc.layout = Layout::kAny;
  return graph_.add_constant(unique, std::move(desc), c.floats());
}

// ---------------------------------------------------------------------------------------------
// Model level

void Importer::check_opset() {
  bool found = false;
  for (const onnx::OperatorSetIdProto& op_set : model_.opset_import()) {
    if (op_set.domain().empty() || op_set.domain() == "ai.onnx") {
      opset_ = op_set.version();
      found = true;
    }
  }
  if (!found) fail("imports no opset of the default ONNX domain (ai.onnx): not a model co_up can read");
  if (opset_ < kOnnxMinOpset || opset_ > kOnnxMaxOpset) {
    fail("opset " + std::to_string(opset_) + " is not supported (co_up imports opsets " +
         std::to_string(kOnnxMinOpset) + "-" + std::to_string(kOnnxMaxOpset) +
         "; re-export with opset_version in that range, or convert with onnx.version_converter)");
  }
}

void Importer::add_input() {
  const onnx::GraphProto& g = model_.graph();
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : g.initializer()) initializers.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (initializers.count(in.name()) == 0) inputs.push_back(&in);
  }
  if (inputs.size() != 1) {
    fail("the model has " + std::to_string(inputs.size()) +
         " inputs (besides initializers); co_up runs models with exactly one input tensor");
  }
  const onnx::ValueInfoProto& in = *inputs[0];
  if (in.name().empty()) fail("the graph input has no name");
  if (!in.type().has_tensor_type()) fail("input '" + in.name() + "' is not a tensor");
  const onnx::TypeProto::Tensor& type = in.type().tensor_type();
  if (type.elem_type() != onnx::TensorProto::FLOAT) {
    fail("input '" + in.name() + "' has element type " + std::to_string(type.elem_type()) +
         "; co_up runs float32 models (element type 1)");
  }
  std::vector<int64_t> shape;
  std::string written;
  bool dynamic = false;
  std::string suggestion;
  if (type.has_shape()) {
    for (const onnx::TensorShapeProto::Dimension& d : type.shape().dim()) {
      const bool known = d.has_dim_value() && d.dim_value() > 0;
      dynamic = dynamic || !known;
      shape.push_back(known ? d.dim_value() : -1);
      if (!written.empty()) {
        written.push_back(',');
        suggestion.push_back(',');
      }
      if (known) {
        written.append(std::to_string(d.dim_value()));
        suggestion.append(std::to_string(d.dim_value()));
      } else {
        written.append(d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?");
        suggestion.push_back('1');
      }
    }
  }
  if (!options_.input_shape.empty()) {
    if (type.has_shape() && options_.input_shape.size() != shape.size()) {
      fail("--input-shape has " + std::to_string(options_.input_shape.size()) +
           " dimensions but input '" + in.name() + "' has rank " + std::to_string(shape.size()) +
           " ([" + written + "])");
    }
    shape = options_.input_shape;
  } else if (!type.has_shape()) {
    fail("input '" + in.name() + "' has no shape; give it with --input-shape=N,C,H,W");
  } else if (dynamic) {
    fail("input '" + in.name() + "' has a dynamic shape [" + written +
         "]; give a fixed one with --input-shape (for example --input-shape=" + suggestion + ")");
  }
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d <= 0 || d > kMaxDim) fail("input '" + in.name() + "' dimension " + std::to_string(d) + " is out of range");
    count *= d;
    if (count > kMaxInputElements) fail("input '" + in.name() + "' has more than 2^31 elements");
  }
  TensorDesc desc;
  desc.shape = shape;
  desc.layout = shape.size() == 4 ? Layout::kNchw : Layout::kAny;
  Value v;
  v.tensor = graph_.add_input(in.name(), std::move(desc));
  v.producer = in.name();
  values_[in.name()] = std::move(v);
}

Graph Importer::run() {
  const onnx::GraphProto& g = model_.graph();
  check_opset();
  for (const onnx::NodeProto& n : g.node()) {
    for (const std::string& name : n.input()) {
      if (!name.empty()) ++uses_[name];
    }
  }
  for (const onnx::ValueInfoProto& out : g.output()) ++uses_[out.name()];
  for (const onnx::TensorProto& t : g.initializer()) {
    Value v;
    v.kind = Value::Kind::kConstant;
    try {
      v.constant = std::make_shared<const OnnxConstant>(decode_tensor(t));
    } catch (const std::invalid_argument& e) {
      fail("initializer '" + t.name() + "': " + e.what());
    }
    v.producer = t.name();
    values_[t.name()] = std::move(v);
  }
  add_input();
  if (g.node_size() == 0) fail("the graph has no nodes");
  for (const onnx::NodeProto& n : g.node()) {
    import_node(n);
    ++node_index_;
  }
  if (g.output_size() == 0) fail("the graph has no outputs");
  for (const onnx::ValueInfoProto& out : g.output()) {
    auto it = values_.find(out.name());
    if (it == values_.end()) {
      fail("graph output '" + out.name() + "' is never computed (truncated or corrupt file?)");
    }
    const bool padded = it->second.kind == Value::Kind::kPad;
    if (it->second.kind != Value::Kind::kActivation && !padded) {
      fail("graph output '" + out.name() + "' is " +
           (it->second.kind == Value::Kind::kConstant ? "a constant" : "a Transpose output") +
           "; co_up needs computed outputs");
    }
    const TensorId tensor = padded ? it->second.padded : it->second.tensor;
    if (tensor == graph_.inputs().at(0)) {
      fail("graph output '" + out.name() + "' is the input itself; nothing to compute");
    }
    graph_.mark_output(tensor);
  }
  mark_exits(g);
  // Latest first: a Pad read only by a later, dropped Pad is dropped too.
  for (auto it = pending_pads_.rbegin(); it != pending_pads_.rend(); ++it) {
    const TensorId padded = *it;
    bool read = std::find(graph_.outputs().begin(), graph_.outputs().end(), padded) != graph_.outputs().end();
    for (const Node& node : graph_.nodes()) {
      read = read || (dead_.count(node.id) == 0 &&
                      std::find(node.inputs.begin(), node.inputs.end(), padded) != node.inputs.end());
    }
    if (!read) dead_.insert(graph_.tensor(padded).producer);
  }
  if (!dead_.empty()) {
    graph_.erase_passthrough_nodes([&](const Node& node) { return dead_.count(node.id) != 0; });
  }
  fuse_transformer_patterns(graph_);
  return std::move(graph_);
}

// ---------------------------------------------------------------------------------------------
// Nodes

void Importer::import_node(const onnx::NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    fail_node(n, "operator domain '" + n.domain() + "' is not supported (only the default ONNX domain)");
  }
  if (n.output_size() == 0) fail_node(n, "has no outputs");
  const std::string& op = n.op_type();
  try {
    if (op == "Conv") return import_conv(n);
    if (op == "Gemm") return import_general_gemm(n);
    if (op == "MatMul") return import_matmul(n);
    if (op == "MaxPool") return import_pool(n, OpType::kMaxPool);
    if (op == "AveragePool") return import_pool(n, OpType::kAveragePool);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      return set_activation(n, emit(n, op == "GlobalAveragePool" ? OpType::kGlobalAveragePool
                                                                  : OpType::kGlobalMaxPool,
                                    {activation(n, 0)}, {}));
    }
    if (op == "HardSigmoid") {
      return set_activation(n, emit(n, OpType::kHardSigmoid, {activation(n, 0)},
                                    {{"alpha", attr_float(n, "alpha", 0.2)},
                                     {"beta", attr_float(n, "beta", 0.5)}}));
    }
    if (op == "Relu" || op == "Sigmoid" || op == "HardSwish") {
      const OpType t = op == "Relu" ? OpType::kRelu : op == "Sigmoid" ? OpType::kSigmoid : OpType::kHardSwish;
      return set_activation(n, emit(n, t, {activation(n, 0)}, {}));
    }
    if (op == "Clip") return import_clip(n);
    if (op == "LRN") {
      const auto* size = attr(n, "size", onnx::AttributeProto::INT);
      if (size == nullptr || size->i() <= 0 || size->i() > kMaxAttr) fail_node(n, "needs a positive 'size'");
      return set_activation(n, emit(n, OpType::kLrn, {activation(n, 0)},
                                    {{"size", size->i()},
                                     {"alpha", attr_float(n, "alpha", 1e-4)},
                                     {"beta", attr_float(n, "beta", 0.75)},
                                     {"bias", attr_float(n, "bias", 1.0)}}));
    }
    if (op == "BatchNormalization") return import_batch_norm(n);
    if (op == "Concat") return import_concat(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") {
      return import_elementwise_constant(n);
    }
    if (op == "Neg") {
      if (is_constant(n, 0)) {
        return set_constant(n, fold_binary("Mul", constant(n, 0, "x"), OnnxConstant::from_floats({}, {-1.0f})));
      }
      const TensorId minus_one = materialize(node_name(n) + "/minus_one", OnnxConstant::from_floats({1}, {-1.0f}), {1});
      return set_activation(n, emit(n, OpType::kMul, {activation(n, 0), minus_one}, {}));
    }
    if (op == "Sqrt") return import_unary(n, OpType::kSqrt);
    if (op == "Erf") return import_unary(n, OpType::kErf);
    if (op == "Tanh") return import_unary(n, OpType::kTanh);
    if (op == "Exp") return import_unary(n, OpType::kExp);
    if (op == "ReduceMean") return import_reduce(n, OpType::kReduceMean);
    if (op == "ReduceSum") return import_reduce(n, OpType::kReduceSum);
    if (op == "LayerNormalization") return import_layer_norm(n);
    if (op == "Split") return import_split(n);
    if (op == "Equal") return set_constant(n, fold_binary(op, constant(n, 0, "a"), constant(n, 1, "b")));
    if (op == "Range") return import_range(n);
    if (op == "ScatterND") return import_scatter_nd(n);
    if (op == "Not") {
      const OnnxConstant& c = constant(n, 0, "x (co_up folds Not of constants only)");
      std::vector<int64_t> v = c.ints();
      for (int64_t& b : v) b = b == 0 ? 1 : 0;
      return set_constant(n, OnnxConstant::from_ints(c.shape, std::move(v)));
    }
    if (op == "Mod") {
      return set_constant(n, fold_binary(attr_int(n, "fmod", 0) != 0 ? "FMod" : "Mod",
                                         constant(n, 0, "a (co_up folds Mod of constants only)"), constant(n, 1, "b")));
    }
    if (op == "Where" || op == "Expand") return import_where_expand(n);
    if (op == "Softmax") return import_softmax(n);
    if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") {
      return import_reshape_like(n);
    }
    if (op == "Pad") return import_pad(n);
    if (op == "Resize" || op == "Upsample") return import_resize(n);
    if (op == "LeakyRelu") {
      const double alpha = attr_float(n, "alpha", 0.01);
      if (!std::isfinite(alpha)) fail_node(n, "alpha must be finite");
      return set_activation(n, emit(n, OpType::kLeakyRelu, {activation(n, 0)}, {{"alpha", alpha}}));
    }
    if (op == "Dropout" || op == "Identity") {
      if (op == "Dropout") require_unused_outputs(n, 1);
      if (op == "Dropout" && has_input(n, 2) && is_constant(n, 2) &&
          !constant(n, 2, "training_mode").ints().empty() && constant(n, 2, "training_mode").ints()[0] != 0 &&
          // A zero ratio drops nothing even in training mode (torchvision's Swin exports so).
          !(has_input(n, 1) && is_constant(n, 1) && constant(n, 1, "ratio").floats() == std::vector<float>{0.0f})) {
        fail_node(n, "training_mode is true; export the model in eval mode");
      }
      Value v = value(n, 0);
      return set_output(n, 0, std::move(v));
    }
    if (op == "Constant") return import_constant_op(n);
    if (op == "Shape") {
      const Value& v = value(n, 0);
      std::vector<int64_t> dims;
      if (v.kind == Value::Kind::kConstant) {
        dims = v.constant->shape;
      } else if (v.kind == Value::Kind::kChannelShuffle) {
        const std::vector<int64_t>& x = shape_of(v.tensor);
        dims = {x[0], x[1] / v.groups, v.groups, x[2], x[3]};
      } else {
        dims = shape_of(activation(n, 0));
      }
      const auto rank = static_cast<int64_t>(dims.size());
      int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      std::vector<int64_t> out(dims.begin() + start, dims.begin() + end);
      const auto size = static_cast<int64_t>(out.size());
      return set_constant(n, OnnxConstant::from_ints({size}, std::move(out)));
    }
    if (op == "Gather") return import_gather(n);
    if (op == "Slice") return import_slice(n);
    if (op == "Transpose") return import_transpose(n);
    if (op == "Cast") {
      const int64_t to = attr_int(n, "to", 0);
      const bool to_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE ||
                            to == onnx::TensorProto::FLOAT16;
      if (value(n, 0).kind == Value::Kind::kActivation) {
        if (to != onnx::TensorProto::FLOAT) {
          fail_node(n, "casts a computed tensor to element type " + std::to_string(to) +
                           "; co_up computes in float32 only (Cast to float, type 1, is supported)");
        }
        Value v = value(n, 0);
        return set_output(n, 0, std::move(v));
      }
      const OnnxConstant& c = constant(n, 0, "Cast input");
      return set_constant(n, to_float ? OnnxConstant::from_floats(c.shape, c.floats())
                                      : OnnxConstant::from_ints(c.shape, c.ints()));
    }
    if (op == "ConstantOfShape") {
      const std::vector<int64_t> shape = constant(n, 0, "shape").ints();
      const int64_t count = checked_count(shape);
      if (count > (int64_t{1} << 24)) fail_node(n, "is too large to fold");
      OnnxConstant fill = OnnxConstant::from_floats({}, {0.0f});
      if (const auto* a = attr(n, "value", onnx::AttributeProto::TENSOR)) fill = decode_tensor(a->t());
      if (fill.count() != 1) fail_node(n, "'value' must hold one element");
      if (fill.is_int) {
        return set_constant(n, OnnxConstant::from_ints(shape, std::vector<int64_t>(count, fill.i[0])));
      }
      return set_constant(n, OnnxConstant::from_floats(shape, std::vector<float>(count, fill.f[0])));
    }
  } catch (const std::logic_error& e) {  // invalid_argument from folding, out_of_range
    fail_node(n, e.what());
  }
  fail_node(n, "unsupported operator '" + op + "' (co_up imports " + kSupportedOps + ")");
}

void Importer::import_constant_op(const onnx::NodeProto& n) {
  if (const auto* a = attr(n, "value", onnx::AttributeProto::TENSOR)) return set_constant(n, decode_tensor(a->t()));
  if (const auto* a = attr(n, "value_float", onnx::AttributeProto::FLOAT)) {
    return set_constant(n, OnnxConstant::from_floats({}, {a->f()}));
  }
  if (const auto* a = attr(n, "value_floats", onnx::AttributeProto::FLOATS)) {
    return set_constant(n, OnnxConstant::from_floats({a->floats_size()}, {a->floats().begin(), a->floats().end()}));
  }
  if (const auto* a = attr(n, "value_int", onnx::AttributeProto::INT)) {
    return set_constant(n, OnnxConstant::from_ints({}, {a->i()}));
  }
  if (const auto* a = attr(n, "value_ints", onnx::AttributeProto::INTS)) {
    return set_constant(n, OnnxConstant::from_ints({a->ints_size()}, {a->ints().begin(), a->ints().end()}));
  }
  fail_node(n, "has no value co_up reads (value, value_float(s), value_int(s))");
}

Pads Importer::spatial_pads(const onnx::NodeProto& n, const std::vector<int64_t>& in_shape,
                            const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                            const std::vector<int64_t>& dilations) {
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> p = checked_attr_ints(n, "pads", {0, 0, 0, 0}, 4, 0);
    return {p[0], p[1], p[2], p[3]};
  }
  if (auto_pad == "VALID") return {0, 0, 0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    fail_node(n, "auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  Pads pads{};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t in = in_shape[2 + d];
    const int64_t out = (in + strides[d] - 1) / strides[d];
    const int64_t total = std::max<int64_t>((out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in, 0);
    const int64_t small = total / 2, large = total - small;
    pads[d] = auto_pad == "SAME_UPPER" ? small : large;
    pads[d + 2] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

void Importer::import_conv(const onnx::NodeProto& n) {
  const Value& xv = value(n, 0);
  Pads extra{0, 0, 0, 0};
  TensorId x;
  if (xv.kind == Value::Kind::kPad) {
    extra = xv.pads;
    x = xv.tensor;
  } else {
    x = activation(n, 0);
  }
  const OnnxConstant& w = constant(n, 1, "Conv weights");
  if (w.shape.size() != 4 || shape_of(x).size() != 4) {
    fail_node(n, "co_up imports 2-D convolutions only (NCHW input, weights [M, C/group, kH, kW])");
  }
  for (int64_t d : w.shape) {
    if (d <= 0) fail_node(n, "weights have an empty dimension");
  }
  const std::vector<int64_t> kernel = checked_attr_ints(n, "kernel_shape", {w.shape[2], w.shape[3]}, 2, 1);
  if (kernel[0] != w.shape[2] || kernel[1] != w.shape[3]) fail_node(n, "kernel_shape does not match the weights");
  const std::vector<int64_t> strides = checked_attr_ints(n, "strides", {1, 1}, 2, 1);
  const std::vector<int64_t> dilations = checked_attr_ints(n, "dilations", {1, 1}, 2, 1);
  const int64_t group = attr_int(n, "group", 1);
  if (group < 1 || group > kMaxDim) fail_node(n, "group " + std::to_string(group) + " is out of range");
  std::vector<int64_t> padded = shape_of(x);
  padded[2] += extra[0] + extra[2];
  padded[3] += extra[1] + extra[3];
  Pads pads = spatial_pads(n, padded, kernel, strides, dilations);
  for (size_t k = 0; k < 4; ++k) pads[k] += extra[k];
  std::vector<TensorId> inputs{x, materialize(n.input(1), w, w.shape)};
  if (has_input(n, 2)) {
    const OnnxConstant& b = constant(n, 2, "Conv bias");
    if (b.count() != w.shape[0]) fail_node(n, "bias has " + std::to_string(b.count()) + " values for " + std::to_string(w.shape[0]) + " filters");
    inputs.push_back(materialize(n.input(2), b, {w.shape[0]}));
  }
  set_activation(n, emit(n, OpType::kConv, std::move(inputs),
                         {{"strides", strides},
                          {"pads", std::vector<int64_t>(pads.begin(), pads.end())},
                          {"dilations", dilations},
                          {"group", group}}));
}

void Importer::import_gemm(const onnx::NodeProto& n, bool matmul) {
  const TensorId x = activation(n, 0);
  const OnnxConstant& b = constant(n, 1, matmul ? "MatMul right-hand side" : "Gemm B");
  if (shape_of(x).size() != 2) {
    fail_node(n, "input " + graph_.tensor(x).desc.shape_string() +
                     " is not 2-D; co_up maps Gemm/MatMul to FullyConnected over [N, K]");
  }
  if (b.shape.size() != 2 || b.shape[0] <= 0 || b.shape[1] <= 0) fail_node(n, "B must be a non-empty 2-D constant");
  if (!matmul && attr_int(n, "transA", 0) != 0) fail_node(n, "transA = 1 is not supported");
  const bool trans_b = !matmul && attr_int(n, "transB", 0) != 0;
  const double alpha = matmul ? 1.0 : attr_float(n, "alpha", 1.0);
  const double beta = matmul ? 1.0 : attr_float(n, "beta", 1.0);
  const int64_t m = trans_b ? b.shape[0] : b.shape[1];
  const int64_t k = trans_b ? b.shape[1] : b.shape[0];
  std::vector<float> src = b.floats();
  std::vector<float> weights(src.size());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const float v = trans_b ? src[r * k + c] : src[c * m + r];
      weights[r * k + c] = alpha == 1.0 ? v : static_cast<float>(v * alpha);
    }
  }
  std::vector<TensorId> inputs{x, materialize(n.input(1), OnnxConstant::from_floats({m, k}, std::move(weights)), {m, k})};
  if (!matmul && has_input(n, 2) && beta != 0.0) {
    const OnnxConstant& c = constant(n, 2, "Gemm C");
    std::vector<float> bias;
    const std::vector<float> cv = c.floats();
    if (cv.size() == 1) bias.assign(m, cv[0]);
    else if (static_cast<int64_t>(cv.size()) == m && c.shape.back() == m) bias = cv;
    else fail_node(n, "C of shape with " + std::to_string(cv.size()) + " values is not a per-output bias");
    for (float& v : bias) v = static_cast<float>(v * beta);
    inputs.push_back(materialize(n.input(2), OnnxConstant::from_floats({m}, std::move(bias)), {m}));
  }
  set_activation(n, emit(n, OpType::kFullyConnected, std::move(inputs), {}));
}

void Importer::import_pool(const onnx::NodeProto& n, OpType op) {
  const Value& xv = value(n, 0);
  Pads extra{0, 0, 0, 0};
  TensorId x;
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  const std::vector<int64_t> own = attr_ints(n, "pads", {});
  const bool own_pads_excluded =
      attr_int(n, "count_include_pad", 0) == 0 &&
      ((auto_pad != "NOTSET" && auto_pad != "VALID") ||
       std::any_of(own.begin(), own.end(), [](int64_t p) { return p != 0; }));
  if (xv.kind == Value::Kind::kPad && op == OpType::kAveragePool && !own_pads_excluded) {
    extra = xv.pads;
    x = xv.tensor;
  } else {  // a MaxPool pads with -inf, so it reads a zero Pad as a computed tensor
    x = activation(n, 0);
  }
  if (shape_of(x).size() != 4) fail_node(n, "co_up imports 2-D pools over NCHW tensors only");
  require_unused_outputs(n, 1);
  const std::vector<int64_t> kernel = checked_attr_ints(n, "kernel_shape", {}, 2, 1);
  const std::vector<int64_t> strides = checked_attr_ints(n, "strides", {1, 1}, 2, 1);
  const std::vector<int64_t> dilations = checked_attr_ints(n, "dilations", {1, 1}, 2, 1);
  if (dilations[0] != 1 || dilations[1] != 1) fail_node(n, "dilated pools are not supported");
  std::vector<int64_t> padded = shape_of(x);
  padded[2] += extra[0] + extra[2];
  padded[3] += extra[1] + extra[3];
  Pads pads = spatial_pads(n, padded, kernel, strides, dilations);
  const int64_t ceil_mode = attr_int(n, "ceil_mode", 0);
  int64_t count_include_pad = attr_int(n, "count_include_pad", 0);
  const bool own_pads = pads != Pads{0, 0, 0, 0};
  if (extra != Pads{0, 0, 0, 0}) {
    if (own_pads && count_include_pad == 0) {
      fail_node(n, "has its own padding excluded from the average and reads zero Pad '" + xv.producer +
                       "'; the two cannot be combined");
    }
    count_include_pad = 1;
    for (size_t k = 0; k < 4; ++k) pads[k] += extra[k];
  }
  Attributes attrs{{"kernel_shape", kernel},
                   {"strides", strides},
                   {"pads", std::vector<int64_t>(pads.begin(), pads.end())},
                   {"ceil_mode", ceil_mode != 0 ? int64_t{1} : int64_t{0}}};
  if (op == OpType::kAveragePool) attrs.set("count_include_pad", count_include_pad != 0 ? int64_t{1} : int64_t{0});
  set_activation(n, emit(n, op, {x}, std::move(attrs)));
}

void Importer::import_clip(const onnx::NodeProto& n) {
  double lo = -std::numeric_limits<float>::max();
  double hi = std::numeric_limits<float>::max();
  if (opset_ < 11) {
    lo = attr_float(n, "min", lo);
    hi = attr_float(n, "max", hi);
  } else {
    if (has_input(n, 1)) lo = constant(n, 1, "Clip min").floats().at(0);
    if (has_input(n, 2)) hi = constant(n, 2, "Clip max").floats().at(0);
  }
  if (is_constant(n, 0)) {
    OnnxConstant c = constant(n, 0, "x");
    std::vector<float> v = c.floats();
    for (float& f : v) f = static_cast<float>(std::clamp<double>(f, lo, hi));
    return set_constant(n, OnnxConstant::from_floats(c.shape, std::move(v)));
  }
  set_activation(n, emit(n, OpType::kClip, {activation(n, 0)}, {{"min", lo}, {"max", hi}}));
}

void Importer::import_batch_norm(const onnx::NodeProto& n) {
  require_unused_outputs(n, 1);
  if (attr_int(n, "training_mode", 0) != 0) fail_node(n, "training_mode = 1; export the model in eval mode");
  const TensorId x = activation(n, 0);
  if (shape_of(x).size() != 4) {
    fail_node(n, "input " + graph_.tensor(x).desc.shape_string() + " is not NCHW; co_up imports BatchNorm2d only");
  }
  const int64_t channels = shape_of(x)[1];
  std::vector<TensorId> inputs{x};
  static const char* const kWhat[] = {"", "scale", "bias", "mean", "variance"};
  for (int i = 1; i <= 4; ++i) {
    const OnnxConstant& c = constant(n, i, kWhat[i]);
    if (c.count() != channels) fail_node(n, std::string(kWhat[i]) + " must have one value per channel");
    inputs.push_back(materialize(n.input(i), c, {channels}));
  }
  set_activation(n, emit(n, OpType::kBatchNormalization, std::move(inputs),
                         {{"epsilon", attr_float(n, "epsilon", 1e-5)}}));
}

void Importer::import_concat(const onnx::NodeProto& n) {
  if (n.input_size() == 0) fail_node(n, "has no inputs");
  const auto* axis_attr = attr(n, "axis", onnx::AttributeProto::INT);
  if (axis_attr == nullptr) fail_node(n, "needs 'axis'");
  bool all_constant = true;
  for (int i = 0; i < n.input_size(); ++i) all_constant = all_constant && is_constant(n, i);
  if (all_constant) {
    std::vector<const OnnxConstant*> parts;
    for (int i = 0; i < n.input_size(); ++i) parts.push_back(&constant(n, i, "Concat input"));
    return set_constant(n, fold_concat(parts, axis_attr->i()));
  }
  std::vector<TensorId> inputs;
  for (int i = 0; i < n.input_size(); ++i) inputs.push_back(operand(n, i));
  const int64_t axis = normalize_axis(axis_attr->i(), static_cast<int64_t>(shape_of(inputs[0]).size()));
  set_activation(n, emit(n, OpType::kConcat, std::move(inputs), {{"axis", axis}}));
}

// Folds y = x (*|+) c into the Conv/FullyConnected producing x: c per output channel or scalar.
bool Importer::fold_into_producer(const onnx::NodeProto& n, TensorId x, const OnnxConstant& c, bool multiply) {
  const Tensor& t = graph_.tensor(x);
  if (t.producer == kNoNode) return false;
  const Node* producer_node = &graph_.node(t.producer);
  size_t channel_dim = 1;
  if (producer_node->op == OpType::kReshape) {
    // x[..., M] = Reshape(FullyConnected[rows, M]): a MatMul by a constant over rank > 2 (see
    // import_matmul); its bias Add folds like one after a 2-D Gemm, along the last dim.
    const Tensor& rows = graph_.tensor(producer_node->inputs[0]);
    if (rows.producer == kNoNode || graph_.node(rows.producer).op != OpType::kFullyConnected ||
        graph_.consumers(rows.id).size() != 1 || t.desc.shape.back() != rows.desc.shape.back()) {
      return false;
    }
    producer_node = &graph_.node(rows.producer);
    channel_dim = t.desc.shape.size() - 1;
  }
  const Node& producer = *producer_node;
  if (producer.op != OpType::kConv && producer.op != OpType::kFullyConnected) return false;
  const std::string& x_name = n.input(is_constant(n, 0) ? 1 : 0);
  if (uses_[x_name] != 1) return false;
  for (const auto& [name, v] : values_) {  // x read under another name (Identity alias)
    if (v.kind == Value::Kind::kActivation && v.tensor == x && name != x_name && uses_[name] > 0) return false;
  }
  const std::vector<int64_t>& shape = t.desc.shape;
  const int64_t channels = shape[channel_dim];
  // Broadcast c against the output: every non-channel dimension of c must be 1.
  if (c.shape.size() > shape.size()) return false;
  const size_t offset = shape.size() - c.shape.size();
  for (size_t d = 0; d < c.shape.size(); ++d) {
    const int64_t dim = c.shape[d];
    if (dim != 1 && !(d + offset == channel_dim && dim == channels)) return false;
  }
  std::vector<float> values = c.floats();
  if (values.empty()) return false;
  auto at = [&](int64_t m) { return values.size() == 1 ? values[0] : values[static_cast<size_t>(m)]; };
  const NodeId id = producer.id;
  if (graph_.node(id).inputs.size() < 3 || graph_.node(id).inputs[2] == kNoTensor) {
    const TensorId bias = materialize(graph_.node(id).name + "_bias", OnnxConstant::from_floats({channels}, std::vector<float>(channels, 0.0f)), {channels});
    Node& node = graph_.mutable_node(id);
    node.inputs.resize(3, kNoTensor);
    node.inputs[2] = bias;
  }
  std::vector<float>& bias = graph_.mutable_tensor(graph_.node(id).inputs[2]).data;
  if (multiply) {
    std::vector<float>& weights = graph_.mutable_tensor(graph_.node(id).inputs[1]).data;
    const size_t per_channel = weights.size() / static_cast<size_t>(channels);
    for (int64_t m = 0; m < channels; ++m) {
      for (size_t i = 0; i < per_channel; ++i) weights[m * per_channel + i] *= at(m);
      bias[m] *= at(m);
    }
  } else {
    for (int64_t m = 0; m < channels; ++m) bias[m] += at(m);
  }
  return true;
}

void Importer::import_elementwise_constant(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const bool c0 = is_constant(n, 0), c1 = is_constant(n, 1);
  if (c0 && c1) return set_constant(n, fold_binary(op, constant(n, 0, "a"), constant(n, 1, "b")));
  if (op == "Mul" && !c0 && !c1 && import_cnn_mul(n)) return;
  const OpType type = op == "Add" ? OpType::kAdd : op == "Sub" ? OpType::kSub : op == "Mul" ? OpType::kMul
                    : op == "Div" ? OpType::kDiv : OpType::kPow;
  if (!c0 && !c1) return set_activation(n, emit(n, type, {activation(n, 0), activation(n, 1)}, {}));
  // One constant operand: folded into the producing Conv / FullyConnected where it is a per-channel
  // or scalar x + c, x - c, x * c or x / c (no extra pass over the data), else an element-wise op.
  const int ci = c0 ? 0 : 1;
  const TensorId x = activation(n, 1 - ci);
  const OnnxConstant& c = constant(n, ci, "constant operand");
  if (op != "Pow" && !(ci == 0 && (op == "Sub" || op == "Div"))) {
    OnnxConstant folded = c;
    if (op == "Sub" || op == "Div") {
      std::vector<float> v = c.floats();
      for (float& f : v) f = op == "Sub" ? -f : 1.0f / f;
      folded = OnnxConstant::from_floats(c.shape, std::move(v));
    }
    if (fold_into_producer(n, x, folded, op == "Mul" || op == "Div")) {
      Value v;
      v.tensor = x;
      return set_output(n, 0, std::move(v));
    }
  }
  std::vector<int64_t> shape = c.shape;
  if (shape.empty()) shape = {1};
  const TensorId ct = materialize(n.input(ci), c, shape);
  set_activation(n, emit(n, type, ci == 0 ? std::vector<TensorId>{ct, x} : std::vector<TensorId>{x, ct}, {}));
}

const Node* Importer::single_use_producer(TensorId t, const std::string& name, OpType op) const {
  const NodeId id = graph_.tensor(t).producer;
  if (id == kNoNode || dead_.count(id) != 0 || graph_.node(id).op != op) return nullptr;
  auto it = uses_.find(name);
  if (it == uses_.end() || it->second != 1) return nullptr;
  for (const auto& [other, v] : values_) {  // t read under another name (an Identity alias)
    if (v.kind == Value::Kind::kActivation && v.tensor == t && other != name) {
      auto uses = uses_.find(other);
      if (uses != uses_.end() && uses->second > 0) return nullptr;
    }
  }
  return &graph_.node(id);
}

bool Importer::import_cnn_mul(const onnx::NodeProto& n) {
  const TensorId a = activation(n, 0), b = activation(n, 1);
  for (int i = 0; i < 2; ++i) {
    const TensorId gate = i == 0 ? a : b, x = i == 0 ? b : a;
    const NodeId gate_node = graph_.tensor(gate).producer;
    if (gate_node == kNoNode || graph_.node(gate_node).inputs.empty() ||
        graph_.node(gate_node).inputs[0] != x) {
      continue;  // a graph input, or a gate of another tensor
    }
    const Node& g = graph_.node(gate_node);
    // x * Sigmoid(x) = SiLU; x * HardSigmoid(x) = HardSwish when alpha = 1/6, beta = 1/2.
    if (g.op == OpType::kSigmoid) {
      if (single_use_producer(gate, n.input(i), OpType::kSigmoid)) dead_.insert(gate_node);
      set_activation(n, emit(n, OpType::kSiLU, {x}, {}));
      return true;
    }
    if (g.op == OpType::kHardSigmoid) {
      const double alpha = g.attrs.get_float("alpha"), beta = g.attrs.get_float("beta");
      if (std::fabs(alpha - 1.0 / 6.0) > 1e-6 || std::fabs(beta - 0.5) > 1e-6) {
        fail_node(n, "x * HardSigmoid(x) with alpha " + std::to_string(alpha) + ", beta " +
                         std::to_string(beta) + " is not HardSwish (alpha 1/6, beta 0.5)");
      }
      if (single_use_producer(gate, n.input(i), OpType::kHardSigmoid)) dead_.insert(gate_node);
      set_activation(n, emit(n, OpType::kHardSwish, {x}, {}));
      return true;
    }
  }
  // Squeeze-excite: X[N,C,H,W] * S[N,C,1,1], either order.
  const std::vector<int64_t>& sa = shape_of(a);
  const std::vector<int64_t>& sb = shape_of(b);
  if (sa.size() != 4 || sb.size() != 4 || sa[0] != sb[0] || sa[1] != sb[1]) return false;
  if (sb[2] == 1 && sb[3] == 1) {
    set_activation(n, emit(n, OpType::kChannelScale, {a, b}, {}));
    return true;
  }
  if (sa[2] == 1 && sa[3] == 1) {
    set_activation(n, emit(n, OpType::kChannelScale, {b, a}, {}));
    return true;
  }
  return false;
}

bool Importer::import_channel_shuffle(const onnx::NodeProto& n) {
  const TensorId v = activation(n, 0);
  const std::vector<int64_t> perm = attr_ints(n, "perm", {});
  const Node* reshape = single_use_producer(v, n.input(0), OpType::kReshape);
  const std::vector<int64_t>& view = shape_of(v);
  if (reshape != nullptr && perm == std::vector<int64_t>{0, 2, 1, 3, 4} && view.size() == 5) {
    const TensorId x = reshape->inputs.at(0);
    const std::vector<int64_t>& in = shape_of(x);
    if (in.size() == 4 && view[0] == in[0] && view[1] * view[2] == in[1] && view[3] == in[2] &&
        view[4] == in[3]) {
      dead_.insert(reshape->id);
      Value shuffle;
      shuffle.kind = Value::Kind::kChannelShuffle;
      shuffle.tensor = x;
      shuffle.groups = view[1];
      set_output(n, 0, std::move(shuffle));
      return true;
    }
  }
  return false;
}

void Importer::import_softmax(const onnx::NodeProto& n) {
  const TensorId x = activation(n, 0);
  const std::vector<int64_t>& shape = shape_of(x);
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t axis = normalize_axis(attr_int(n, "axis", opset_ >= 13 ? -1 : 1), rank);
  if (opset_ < 13) {
    // Before opset 13 Softmax flattens to [prod(d < axis), prod(d >= axis)]: the same as a
    // softmax over `axis` only when the dimensions after it are all 1.
    for (int64_t d = axis + 1; d < rank; ++d) {
      if (shape[d] != 1) {
        fail_node(n, "opset-" + std::to_string(opset_) + " Softmax over several axes (from " +
                         std::to_string(axis) + " of " + graph_.tensor(x).desc.shape_string() +
                         ") is not supported");
      }
    }
  }
  set_activation(n, emit(n, OpType::kSoftmax, {x}, {{"axis", axis}}));
}

void Importer::import_reshape_like(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const Value& xv = value(n, 0);
  const bool is_const = xv.kind == Value::Kind::kConstant;
  const bool shuffled = xv.kind == Value::Kind::kChannelShuffle && op == "Reshape";
  std::vector<int64_t> in;
  if (is_const) {
    in = xv.constant->shape;
  } else if (shuffled) {
    const std::vector<int64_t>& x = shape_of(xv.tensor);
    in = {x[0], x[1] / xv.groups, xv.groups, x[2], x[3]};
  } else {
    in = shape_of(activation(n, 0));
  }
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> out;
  if (op == "Flatten") {
    const int64_t axis = normalize_axis(attr_int(n, "axis", 1), rank, true);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[d];
    out = {outer, inner};
    if (!is_const) return set_activation(n, emit(n, OpType::kFlatten, {activation(n, 0)}, {{"axis", axis}}));
  } else if (op == "Reshape") {
    const std::vector<int64_t> target = constant(n, 1, "Reshape shape").ints();
    const bool allow_zero = attr_int(n, "allowzero", 0) != 0;
    int64_t known = 1, infer_at = -1;
    for (size_t d = 0; d < target.size(); ++d) {
      int64_t v = target[d];
      if (v == 0 && !allow_zero) {
        if (d >= in.size()) fail_node(n, "shape copies dimension " + std::to_string(d) + " the input lacks");
        v = in[d];
      }
      if (v == -1) {
        if (infer_at >= 0) fail_node(n, "shape has two -1 entries");
        infer_at = static_cast<int64_t>(d);
      } else if (v < 0 || v > kMaxDim * kMaxDim) {
        fail_node(n, "shape entry " + std::to_string(v) + " is invalid");
      } else {
        known *= v;
        if (known > kMaxInputElements) fail_node(n, "shape is too large");
      }
      out.push_back(v);
    }
    const int64_t total = checked_count(in);
    if (infer_at >= 0) {
      if (known == 0 || total % known != 0) fail_node(n, "cannot infer -1 in the shape");
      out[infer_at] = total / known;
    }
  } else {
    std::vector<int64_t> axes;
    if (opset_ >= 13 && has_input(n, 1)) axes = constant(n, 1, "axes").ints();
    else if (opset_ < 13) axes = attr_ints(n, "axes", {});
    if (op == "Squeeze") {
      std::vector<bool> drop(rank, false);
      for (int64_t a : axes) {
        const int64_t d = normalize_axis(a, rank);
        if (in[d] != 1) fail_node(n, "cannot squeeze a dimension of size " + std::to_string(in[d]));
        drop[d] = true;
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (axes.empty() ? in[d] != 1 : !drop[d]) out.push_back(in[d]);
      }
    } else {
      if (axes.empty() || axes.size() > 8) fail_node(n, "needs 1 to 8 axes");
      const auto out_rank = rank + static_cast<int64_t>(axes.size());
      std::vector<bool> inserted(out_rank, false);
      for (int64_t a : axes) {
        const int64_t d = normalize_axis(a, out_rank);
        if (inserted[d]) fail_node(n, "repeats an axis");
        inserted[d] = true;
      }
      size_t next = 0;
      for (int64_t d = 0; d < out_rank; ++d) out.push_back(inserted[d] ? 1 : in.at(next++));
    }
  }
  if (is_const) {
    OnnxConstant c = *xv.constant;
    if (checked_count(out) != c.count()) fail_node(n, "cannot reshape the constant");
    c.shape = out;
    return set_constant(n, std::move(c));
  }
  for (int64_t d : out) {
    if (d <= 0) fail_node(n, "the result has an empty dimension");
  }
  if (shuffled) {
    if (out != shape_of(xv.tensor)) {
      TensorDesc target;
      target.shape = out;
      fail_node(n, "reshapes the transposed channel groups to " + target.shape_string() +
                       ", not back to the input's " + graph_.tensor(xv.tensor).desc.shape_string() +
                       " (co_up imports this pattern only as a channel shuffle)");
    }
    return set_activation(n, emit(n, OpType::kChannelShuffle, {xv.tensor}, {{"groups", xv.groups}}));
  }
  set_activation(n, emit(n, OpType::kReshape, {activation(n, 0)}, {{"shape", out}}));
}

void Importer::import_pad(const onnx::NodeProto& n) {
  const std::string mode = attr_string(n, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    fail_node(n, "mode '" + mode + "' is not supported (co_up pads with constant, reflect or edge)");
  }
  std::vector<int64_t> pads;
  double fill = 0;
  if (opset_ >= 11) {
    pads = constant(n, 1, "pads").ints();
    if (has_input(n, 2)) {
      const std::vector<float> v = constant(n, 2, "constant_value").floats();
      fill = v.empty() ? 0.0 : v[0];
    }
    if (has_input(n, 3)) fail_node(n, "the 'axes' input is not supported");
  } else {
    pads = attr_ints(n, "pads", {});
    fill = attr_float(n, "value", 0.0);
  }
  if (!std::isfinite(fill)) fail_node(n, "constant_value must be finite");
  const Value& xv = value(n, 0);
  const TensorId x = activation(n, 0);  // the padded tensor of an earlier zero Pad
  const std::vector<int64_t> shape = shape_of(x);
  const auto rank = static_cast<int64_t>(shape.size());
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    fail_node(n, "pads has " + std::to_string(pads.size()) + " values, expected 2 * rank = " + std::to_string(2 * rank));
  }
  bool spatial_only = rank == 4, any = false;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t begin = pads[d], end = pads[d + rank];
    if (begin < 0 || end < 0) fail_node(n, "negative pads (cropping) are not supported");
    if (begin > kMaxAttr || end > kMaxAttr) fail_node(n, "pads are out of range");
    if (mode == "reflect" && (begin >= shape[d] || end >= shape[d])) {
      fail_node(n, "reflect pads of axis " + std::to_string(d) + " must be smaller than its size " + std::to_string(shape[d]));
    }
    any = any || begin != 0 || end != 0;
    if (d < 2 && (begin != 0 || end != 0)) spatial_only = false;
  }
  if (!any) {
    Value v = xv;
    return set_output(n, 0, std::move(v));
  }
  const TensorId padded = emit(n, OpType::kPad, {x},
                               {{"mode", mode}, {"pads", pads}, {"value", fill}});
  if (mode != "constant" || fill != 0.0 || !spatial_only) return set_activation(n, padded);
  // A zero Pad of H and W stays foldable into a following Conv or AveragePool.
  Value v;
  v.kind = Value::Kind::kPad;
  v.tensor = xv.kind == Value::Kind::kPad ? xv.tensor : x;
  v.pads = xv.kind == Value::Kind::kPad ? xv.pads : Pads{0, 0, 0, 0};
  v.pads[0] += pads[2];
  v.pads[1] += pads[3];
  v.pads[2] += pads[6];
  v.pads[3] += pads[7];
  v.padded = padded;
  pending_pads_.push_back(padded);
  set_output(n, 0, std::move(v));
}

void Importer::import_range(const onnx::NodeProto& n) {
  const OnnxConstant& start = constant(n, 0, "start (co_up folds Range of constants only)");
  const OnnxConstant& limit = constant(n, 1, "limit");
  const OnnxConstant& delta = constant(n, 2, "delta");
  if (start.count() != 1 || limit.count() != 1 || delta.count() != 1) fail_node(n, "start, limit and delta must be scalars");
  const double s0 = start.floats()[0], l0 = limit.floats()[0], d0 = delta.floats()[0];
  if (d0 == 0.0 || !std::isfinite(s0) || !std::isfinite(l0) || !std::isfinite(d0)) fail_node(n, "delta must be non-zero and all values finite");
  const double steps = std::max(std::ceil((l0 - s0) / d0), 0.0);
  if (steps > static_cast<double>(int64_t{1} << 24)) fail_node(n, "is too large to fold");
  const auto count = static_cast<int64_t>(steps);
  if (start.is_int && limit.is_int && delta.is_int) {
    std::vector<int64_t> v(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) v[static_cast<size_t>(k)] = start.i[0] + k * delta.i[0];
    return set_constant(n, OnnxConstant::from_ints({count}, std::move(v)));
  }
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) v[static_cast<size_t>(k)] = static_cast<float>(s0 + static_cast<double>(k) * d0);
  set_constant(n, OnnxConstant::from_floats({count}, std::move(v)));
}

void Importer::import_scatter_nd(const onnx::NodeProto& n) {
  const OnnxConstant& data = constant(n, 0, "data (co_up folds ScatterND of constants only)");
  const OnnxConstant& indices = constant(n, 1, "indices");
  const OnnxConstant& updates = constant(n, 2, "updates");
  if (attr_string(n, "reduction", "none") != "none") fail_node(n, "reduction is not supported");
  if (indices.shape.empty() || data.shape.empty()) fail_node(n, "indices and data must have rank >= 1");
  const auto k = static_cast<size_t>(indices.shape.back());
  if (k < 1 || k > data.shape.size()) fail_node(n, "index tuples do not fit the data's rank");
  int64_t slice = 1;
  for (size_t d = k; d < data.shape.size(); ++d) slice *= data.shape[d];
  const int64_t tuples = indices.count() / static_cast<int64_t>(k);
  if (updates.count() != tuples * slice) fail_node(n, "updates do not fit indices and data");
  const std::vector<int64_t> idx = indices.ints();
  auto target = [&](int64_t t) {
    int64_t offset = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t i = idx[static_cast<size_t>(t) * k + d];
      if (i < 0) i += data.shape[d];
      if (i < 0 || i >= data.shape[d]) fail_node(n, "index " + std::to_string(i) + " is out of range");
      offset = offset * data.shape[d] + i;
    }
    return offset * slice;
  };
  if (data.is_int) {
    std::vector<int64_t> out = data.i;
    const std::vector<int64_t> u = updates.ints();
    for (int64_t t = 0; t < tuples; ++t) std::copy_n(u.begin() + t * slice, slice, out.begin() + target(t));
    return set_constant(n, OnnxConstant::from_ints(data.shape, std::move(out)));
  }
  std::vector<float> out = data.f;
  const std::vector<float> u = updates.floats();
  for (int64_t t = 0; t < tuples; ++t) std::copy_n(u.begin() + t * slice, slice, out.begin() + target(t));
  set_constant(n, OnnxConstant::from_floats(data.shape, std::move(out)));
}

// Resize (opset 11+; torch's nn.Upsample and F.interpolate): nearest or (bi)linear over the last
// two axes with the coordinate transforms torch emits. Scales or sizes must be constants.
void Importer::import_resize(const onnx::NodeProto& n) {
  if (n.op_type() == "Upsample") {
    fail_node(n, "Upsample is deprecated since opset 10 and not imported (co_up imports opsets " +
                     std::to_string(kOnnxMinOpset) + "-" + std::to_string(kOnnxMaxOpset) +
                     "; re-export, torch writes Resize)");
  }
  const TensorId x = activation(n, 0);
  const std::vector<int64_t> in = shape_of(x);
  const auto rank = static_cast<int64_t>(in.size());
  std::string mode = attr_string(n, "mode", "nearest");
  const std::string transform = attr_string(n, "coordinate_transformation_mode", "half_pixel");
  const std::string nearest = attr_string(n, "nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear") {
    fail_node(n, "mode '" + mode + "' is not supported (co_up resizes with nearest or linear)");
  }
  if (transform != "asymmetric" && transform != "half_pixel" && transform != "pytorch_half_pixel" &&
      transform != "align_corners") {
    fail_node(n, "coordinate_transformation_mode '" + transform +
                     "' is not supported (asymmetric, half_pixel, pytorch_half_pixel, align_corners)");
  }
  if (mode == "nearest" && nearest != "floor" && nearest != "ceil" && nearest != "round_prefer_floor" &&
      nearest != "round_prefer_ceil") {
    fail_node(n, "nearest_mode '" + nearest + "' is not supported");
  }
  if (attr_int(n, "exclude_outside", 0) != 0) fail_node(n, "exclude_outside is not supported");
  if (rank < 2) fail_node(n, "resizes a " + std::to_string(rank) + "-D tensor; co_up resizes rank >= 2");
  auto present = [&](int i) { return has_input(n, i) && constant(n, i, i == 2 ? "scales" : "sizes").count() > 0; };
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  if (present(3)) {
    sizes = constant(n, 3, "sizes").ints();
    if (static_cast<int64_t>(sizes.size()) != rank) fail_node(n, "sizes has " + std::to_string(sizes.size()) + " values for rank " + std::to_string(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (sizes[d] < 1 || sizes[d] > kMaxDim) fail_node(n, "size " + std::to_string(sizes[d]) + " is out of range");
      scales.push_back(static_cast<float>(sizes[d]) / static_cast<float>(in[d]));
    }
  } else if (present(2)) {
    scales = constant(n, 2, "scales").floats();
    if (static_cast<int64_t>(scales.size()) != rank) fail_node(n, "scales has " + std::to_string(scales.size()) + " values for rank " + std::to_string(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (!(scales[d] > 0.0f) || scales[d] > 4096.0f) fail_node(n, "scale " + std::to_string(scales[d]) + " is out of range");
      const auto size = static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scales[d]));
      if (size < 1 || size > kMaxDim) fail_node(n, "scale " + std::to_string(scales[d]) + " gives an empty or huge axis");
      sizes.push_back(size);
    }
  } else {
    fail_node(n, "has neither scales nor sizes");
  }
  for (int64_t d = 0; d + 2 < rank; ++d) {
    if (sizes[d] != in[d]) fail_node(n, "resizes axis " + std::to_string(d) + "; co_up resizes only the last two axes (H, W)");
    scales[d] = 1.0f;
  }
  set_activation(n, emit(n, OpType::kResize, {x},
                         {{"mode", mode}, {"coordinate_transformation_mode", transform},
                          {"nearest_mode", nearest}, {"sizes", sizes}, {"scales", scales}}));
}

// ---------------------------------------------------------------------------------------------
// Rank-N tensor ops (transformers)

// Input i as an IR tensor: an activation, or a constant materialised for an op that takes it.
TensorId Importer::operand(const onnx::NodeProto& n, int i) {
  if (!is_constant(n, i)) return activation(n, i);
  const OnnxConstant& c = constant(n, i, "operand");
  std::vector<int64_t> shape = c.shape;
  if (shape.empty()) shape = {1};
  return materialize(n.input(i), c, shape);
}

// An IR node that no ONNX node names itself (a helper Reshape or Transpose of an import).
TensorId Importer::emit_named(const std::string& name, OpType op, std::vector<TensorId> inputs,
                              Attributes attrs) {
  if (op == OpType::kAdd && !attrs.has("activation")) attrs.set("activation", std::string("none"));
  try {
    return graph_.add_node(name, op, std::move(inputs), std::move(attrs), 0);
  } catch (const InputError& e) {
    fail(e.what());
  }
}

void Importer::import_matmul(const onnx::NodeProto& n) {
  if (is_constant(n, 0) && is_constant(n, 1)) fail_node(n, "both operands are constants (fold the model first)");
  const Value& av = value(n, 0);
  if (av.kind == Value::Kind::kActivation && is_constant(n, 1)) {
    const OnnxConstant& b = constant(n, 1, "MatMul right-hand side");
    const std::vector<int64_t> a_shape = shape_of(av.tensor);
    if (b.shape.size() == 2 && a_shape.size() == 2) return import_gemm(n, true);
    if (b.shape.size() == 2 && a_shape.size() > 2 && a_shape.back() == b.shape[0] && b.shape[1] > 0) {
      // x[..., K] @ W[K, N]: the packed FullyConnected over the rows, reshaped around it.
      const int64_t k = a_shape.back(), cols = b.shape[1];
      const int64_t rows = checked_count(a_shape) / k;
      const std::string name = node_name(n);
      const TensorId flat = emit_named(name + "#rows", OpType::kReshape, {av.tensor},
                                       {{"shape", std::vector<int64_t>{rows, k}}});
      std::vector<float> src = b.floats(), weights(src.size());
      for (int64_t r = 0; r < cols; ++r) {
        for (int64_t c = 0; c < k; ++c) weights[r * k + c] = src[c * cols + r];
      }
      const TensorId w = materialize(n.input(1), OnnxConstant::from_floats({cols, k}, std::move(weights)), {cols, k});
      const TensorId y = emit_named(name + "#fc", OpType::kFullyConnected, {flat, w}, {{"activation", std::string("none")}});
      std::vector<int64_t> out(a_shape.begin(), a_shape.end() - 1);
      out.push_back(cols);
      return set_activation(n, emit(n, OpType::kReshape, {y}, {{"shape", out}}));
    }
  }
  TensorId a = operand(n, 0), b = operand(n, 1);
  // numpy: a 1-D A is a row [1, K], a 1-D B a column [K, 1]; that dim is dropped from the result.
  const bool row = shape_of(a).size() == 1, column = shape_of(b).size() == 1;
  const std::string name = node_name(n);
  if (row) a = emit_named(name + "#row", OpType::kReshape, {a}, {{"shape", std::vector<int64_t>{1, shape_of(a)[0]}}});
  if (column) b = emit_named(name + "#column", OpType::kReshape, {b}, {{"shape", std::vector<int64_t>{shape_of(b)[0], 1}}});
  if (!row && !column) return set_activation(n, emit(n, OpType::kMatMul, {a, b}, {}));
  const TensorId y = emit_named(name + "#matmul", OpType::kMatMul, {a, b}, {});
  std::vector<int64_t> out = shape_of(y);
  if (column) out.pop_back();
  if (row) out.erase(out.end() - (column ? 1 : 2));
  if (out.empty()) out.push_back(1);
  set_activation(n, emit(n, OpType::kReshape, {y}, {{"shape", out}}));
}

void Importer::import_general_gemm(const onnx::NodeProto& n) {
  const bool trans_a = attr_int(n, "transA", 0) != 0, trans_b = attr_int(n, "transB", 0) != 0;
  if (!trans_a && !is_constant(n, 0) && is_constant(n, 1) && value(n, 0).kind == Value::Kind::kActivation &&
      shape_of(activation(n, 0)).size() == 2 && (!has_input(n, 2) || is_constant(n, 2))) {
    return import_gemm(n, false);  // the packed FullyConnected with folded alpha, beta and bias
  }
  const std::string name = node_name(n);
  const double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
  auto side = [&](int i, bool trans) {
    if (is_constant(n, i) && trans) {
      const OnnxConstant& c = constant(n, i, "Gemm operand");
      if (c.shape.size() != 2) fail_node(n, "operands must be 2-D");
      return materialize(n.input(i), fold_transpose(c, {1, 0}), {c.shape[1], c.shape[0]});
    }
    TensorId t = operand(n, i);
    if (shape_of(t).size() != 2) fail_node(n, "operands must be 2-D");
    if (trans) t = emit_named(name + "#trans" + std::to_string(i), OpType::kTranspose, {t}, {{"perm", std::vector<int64_t>{1, 0}}});
    return t;
  };
  const TensorId a = side(0, trans_a), b = side(1, trans_b);
  TensorId y = emit_named(name + "#matmul", OpType::kMatMul, {a, b}, {});
  if (alpha != 1.0) {
    y = emit_named(name + "#alpha", OpType::kMul, {y, materialize(name + "/alpha", OnnxConstant::from_floats({1}, {static_cast<float>(alpha)}), {1})}, {});
  }
  if (has_input(n, 2) && beta != 0.0) {
    TensorId c;
    if (is_constant(n, 2)) {
      OnnxConstant cc = constant(n, 2, "Gemm C");
      std::vector<float> v = cc.floats();
      for (float& f : v) f = static_cast<float>(f * beta);
      std::vector<int64_t> shape = cc.shape.empty() ? std::vector<int64_t>{1} : cc.shape;
      c = materialize(n.input(2), OnnxConstant::from_floats(shape, std::move(v)), shape);
    } else {
      c = activation(n, 2);
      if (beta != 1.0) {
        c = emit_named(name + "#beta", OpType::kMul, {c, materialize(name + "/beta", OnnxConstant::from_floats({1}, {static_cast<float>(beta)}), {1})}, {});
      }
    }
    y = emit_named(name + "#bias", OpType::kAdd, {y, c}, {});
  }
  Value v;
  v.tensor = y;
  set_output(n, 0, std::move(v));
}

void Importer::import_unary(const onnx::NodeProto& n, OpType op) {
  if (is_constant(n, 0)) {
    const OnnxConstant& c = constant(n, 0, "x");
    std::vector<float> v = c.floats();
    for (float& f : v) {
      f = op == OpType::kSqrt ? std::sqrt(f) : op == OpType::kErf ? std::erf(f)
        : op == OpType::kTanh ? std::tanh(f) : std::exp(f);
    }
    return set_constant(n, OnnxConstant::from_floats(c.shape, std::move(v)));
  }
  set_activation(n, emit(n, op, {activation(n, 0)}, {}));
}

void Importer::import_transpose(const onnx::NodeProto& n) {
  if (is_constant(n, 0)) {
    return set_constant(n, fold_transpose(constant(n, 0, "Transpose input"), attr_ints(n, "perm", {})));
  }
  if (import_channel_shuffle(n)) return;
  const TensorId x = activation(n, 0);
  const auto rank = static_cast<int64_t>(shape_of(x).size());
  std::vector<int64_t> perm = attr_ints(n, "perm", {});
  if (perm.empty()) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  for (int64_t& p : perm) {
    if (p < -rank || p >= rank) fail_node(n, "perm entry " + std::to_string(p) + " is out of range for rank " + std::to_string(rank));
    if (p < 0) p += rank;
  }
  set_activation(n, emit(n, OpType::kTranspose, {x}, {{"perm", perm}}));
}

void Importer::import_reduce(const onnx::NodeProto& n, OpType op) {
  const TensorId x = activation(n, 0);
  const auto rank = static_cast<int64_t>(shape_of(x).size());
  std::vector<int64_t> axes;
  const bool axes_input = op == OpType::kReduceSum ? opset_ >= 13 : opset_ >= 18;
  if (axes_input) {
    if (has_input(n, 1)) axes = constant(n, 1, "axes").ints();
  } else {
    axes = attr_ints(n, "axes", {});
  }
  if (axes.empty()) {
    if (axes_input && attr_int(n, "noop_with_empty_axes", 0) != 0) {
      Value v = value(n, 0);
      return set_output(n, 0, std::move(v));
    }
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) a = normalize_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) fail_node(n, "repeats an axis");
  set_activation(n, emit(n, op, {x}, {{"axes", axes}, {"keepdims", attr_int(n, "keepdims", 1) != 0 ? int64_t{1} : int64_t{0}}}));
}

void Importer::import_gather(const onnx::NodeProto& n) {
  const OnnxConstant& idx = constant(n, 1, "Gather indices (co_up gathers with constant indices only)");
  if (is_constant(n, 0)) {
    return set_constant(n, fold_gather(constant(n, 0, "Gather data"), idx, attr_int(n, "axis", 0)));
  }
  const TensorId x = activation(n, 0);
  const std::vector<int64_t>& shape = shape_of(x);
  const int64_t axis = normalize_axis(attr_int(n, "axis", 0), static_cast<int64_t>(shape.size()));
  std::vector<int64_t> indices = idx.ints();
  for (int64_t& i : indices) {
    if (i < -shape[axis] || i >= shape[axis]) fail_node(n, "index " + std::to_string(i) + " is out of range for dimension " + std::to_string(shape[axis]));
    if (i < 0) i += shape[axis];
  }
  set_activation(n, emit(n, OpType::kGather, {x}, {{"axis", axis}, {"indices", indices}, {"indices_shape", idx.shape}}));
}

void Importer::import_slice(const onnx::NodeProto& n) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ >= 10) {
    auto ints_or_empty = [&](int i, const char* what) {
      return has_input(n, i) ? constant(n, i, what).ints() : std::vector<int64_t>{};
    };
    starts = ints_or_empty(1, "starts");
    ends = ints_or_empty(2, "ends");
    axes = ints_or_empty(3, "axes");
    steps = ints_or_empty(4, "steps");
  } else {
    starts = attr_ints(n, "starts", {});
    ends = attr_ints(n, "ends", {});
    axes = attr_ints(n, "axes", {});
  }
  if (is_constant(n, 0)) return set_constant(n, fold_slice(constant(n, 0, "Slice data"), starts, ends, axes, steps));
  const TensorId x = activation(n, 0);
  const std::vector<int64_t>& shape = shape_of(x);
  const auto rank = static_cast<int64_t>(shape.size());
  if (starts.size() != ends.size() || (!axes.empty() && axes.size() != starts.size()) ||
      (!steps.empty() && steps.size() != starts.size())) {
    fail_node(n, "starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> b(rank, 0), e(shape), st(rank, 1);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t d = normalize_axis(axes.empty() ? static_cast<int64_t>(i) : axes[i], rank);
    if (seen[d]) fail_node(n, "repeats axis " + std::to_string(d));
    seen[d] = true;
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step < 1) fail_node(n, "step " + std::to_string(step) + " is not supported (co_up slices with positive steps)");
    int64_t s0 = starts[i], e0 = ends[i];
    if (s0 < 0) s0 += shape[d];
    if (e0 < 0) e0 += shape[d];
    b[d] = std::clamp<int64_t>(s0, 0, shape[d]);
    e[d] = std::clamp<int64_t>(e0, 0, shape[d]);
    st[d] = step;
    if (b[d] >= e[d]) fail_node(n, "the slice of axis " + std::to_string(d) + " is empty");
  }
  set_activation(n, emit(n, OpType::kSlice, {x}, {{"starts", b}, {"ends", e}, {"steps", st}}));
}

void Importer::import_split(const onnx::NodeProto& n) {
  const TensorId x = activation(n, 0);
  const std::vector<int64_t> shape = shape_of(x);  // a copy: emitting nodes grows the tensor list
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t axis = normalize_axis(attr_int(n, "axis", 0), rank);
  std::vector<int64_t> sizes;
  if (opset_ >= 13 && has_input(n, 1)) sizes = constant(n, 1, "split").ints();
  else if (opset_ < 13) sizes = attr_ints(n, "split", {});
  const int64_t parts = n.output_size();
  if (sizes.empty()) {
    const int64_t each = (shape[axis] + parts - 1) / parts;
    for (int64_t i = 0, left = shape[axis]; i < parts; ++i, left -= each) sizes.push_back(std::min(each, left));
  }
  if (static_cast<int64_t>(sizes.size()) != parts) fail_node(n, "has " + std::to_string(parts) + " outputs but " + std::to_string(sizes.size()) + " split sizes");
  int64_t at = 0;
  for (int64_t i = 0; i < parts; ++i) {
    if (sizes[i] < 1 || sizes[i] > shape[axis] || at + sizes[i] > shape[axis]) fail_node(n, "split sizes do not fit dimension " + std::to_string(shape[axis]));
    std::vector<int64_t> b(rank, 0), e(shape), st(rank, 1);
    b[axis] = at;
    e[axis] = at + sizes[i];
    at += sizes[i];
    if (n.output(static_cast<int>(i)).empty()) continue;
    Value v;
    v.tensor = emit_named(node_name(n) + "#" + std::to_string(i), OpType::kSlice, {x}, {{"starts", b}, {"ends", e}, {"steps", st}});
    set_output(n, static_cast<int>(i), std::move(v));
  }
  if (at != shape[axis]) fail_node(n, "split sizes add up to " + std::to_string(at) + ", not " + std::to_string(shape[axis]));
}

void Importer::import_layer_norm(const onnx::NodeProto& n) {
  require_unused_outputs(n, 1);
  const TensorId x = activation(n, 0);
  const auto rank = static_cast<int64_t>(shape_of(x).size());
  const int64_t axis = normalize_axis(attr_int(n, "axis", -1), rank);
  std::vector<int64_t> norm_shape(shape_of(x).begin() + axis, shape_of(x).end());
  std::vector<TensorId> inputs{x};
  for (int i = 1; i <= 2; ++i) {
    if (!has_input(n, i)) continue;
    const OnnxConstant& c = constant(n, i, i == 1 ? "Scale" : "B");
    if (c.count() != checked_count(norm_shape)) fail_node(n, std::string(i == 1 ? "Scale" : "B") + " does not match the normalised shape");
    inputs.push_back(materialize(n.input(i), c, norm_shape));
  }
  set_activation(n, emit(n, OpType::kLayerNormalization, std::move(inputs),
                         {{"axis", axis}, {"epsilon", attr_float(n, "epsilon", 1e-5)}}));
}

// Where(cond, a, b) and Expand(x, shape) over constants (shape arithmetic of exporters).
void Importer::import_where_expand(const onnx::NodeProto& n) {
  if (n.op_type() == "Expand") {
    const OnnxConstant& x = constant(n, 0, "Expand input (co_up expands only constants)");
    const std::vector<int64_t> shape = constant(n, 1, "shape").ints();
    if (checked_count(shape) > (int64_t{1} << 24)) fail_node(n, "is too large to fold");
    const OnnxConstant ones = x.is_int ? OnnxConstant::from_ints(shape, std::vector<int64_t>(checked_count(shape), 1))
                                       : OnnxConstant::from_floats(shape, std::vector<float>(checked_count(shape), 1.0f));
    return set_constant(n, fold_binary("Mul", x, ones));
  }
  const OnnxConstant& c = constant(n, 0, "Where condition (co_up selects only between constants)");
  const OnnxConstant& a = constant(n, 1, "Where X");
  const OnnxConstant& b = constant(n, 2, "Where Y");
  const OnnxConstant cond = c.is_int ? c : OnnxConstant::from_ints(c.shape, c.ints());
  const OnnxConstant one = OnnxConstant::from_ints({}, {1});
  if (a.is_int && b.is_int) {
    return set_constant(n, fold_binary("Add", fold_binary("Mul", cond, a), fold_binary("Mul", fold_binary("Sub", one, cond), b)));
  }
  const OnnxConstant fc = OnnxConstant::from_floats(cond.shape, cond.floats());
  const OnnxConstant fone = OnnxConstant::from_floats({}, {1.0f});
  set_constant(n, fold_binary("Add", fold_binary("Mul", fc, a), fold_binary("Mul", fold_binary("Sub", fone, fc), b)));
}

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw InputError("model file '" + path.string() + "' does not exist");
  }
  // protobuf parses at most 2 GB; the importer says so for a file of that size.
  return io::read_input_file(path, "model file", uint64_t{2} << 30);
}

}  // namespace

Graph import_onnx_bytes(std::string_view bytes, const std::string& source, const OnnxImportOptions& options) {
  if (bytes.empty()) throw InputError(source + ": the file is empty, not an ONNX model");
  if (bytes.size() >= static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw InputError(source + ": over 2 GB; co_up reads models with the weights inside (no external data)");
  }
  onnx::ModelProto model;
  if (!model.ParsePartialFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw InputError(source + ": not a valid ONNX model (the protobuf does not parse: truncated, "
                              "corrupt, or another kind of file)");
  }
  if (model.ir_version() <= 0 || !model.has_graph() || model.opset_import_size() == 0) {
    throw InputError(source + ": not an ONNX model (no ir_version, graph or opset_import)");
  }
  Importer importer(model, source, options);
  return importer.run();
}

Graph import_onnx_file(const std::filesystem::path& path, const OnnxImportOptions& options) {
  const std::string bytes = read_file(path);
  return import_onnx_bytes(bytes, path.string(), options);
}

std::vector<int64_t> parse_input_shape(const std::string& text) {
  std::vector<int64_t> shape;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v <= 0 || v > kMaxDim) {
      throw InputError("--input-shape='" + text +
                       "' must be positive integers separated by commas, e.g. 1,3,224,224");
    }
    shape.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return shape;
}

}  // namespace co_up::graph
