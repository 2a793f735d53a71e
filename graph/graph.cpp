#include "graph/graph.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.h"

namespace co_up::graph {

size_t dtype_size(DataType dtype) {
  switch (dtype) {
    case DataType::kF32: return 4;
    case DataType::kF16: return 2;
    case DataType::kI8: return 1;
    case DataType::kU8: return 1;
    case DataType::kI32: return 4;
    case DataType::kI64: return 8;
  }
  return 0;
}

const char* dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kF32: return "f32";
    case DataType::kF16: return "f16";
    case DataType::kI8: return "int8";
    case DataType::kU8: return "uint8";
    case DataType::kI32: return "int32";
    case DataType::kI64: return "int64";
  }
  return "?";
}

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kAny: return "any";
    case Layout::kNchw: return "NCHW";
    case Layout::kNhwc: return "NHWC";
  }
  return "?";
}

int64_t TensorDesc::element_count() const {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return count;
}

std::string TensorDesc::shape_string() const {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << ']';
  return out.str();
}

namespace {

[[noreturn]] void fail(const std::string& node_name, OpType op, const std::string& what) {
  throw InputError("node '" + node_name + "' (" + std::string(op_type_name(op)) + "): " + what);
}

int64_t pooled_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin,
                      int64_t pad_end, int64_t dilation, bool ceil_mode) {
  const int64_t effective = dilation * (kernel - 1) + 1;
  const int64_t span = in + pad_begin + pad_end - effective;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX/Caffe: the last window must start inside the input or the leading padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

void require_rank(const std::string& name, OpType op, const TensorDesc& d, size_t rank) {
  if (d.shape.size() != rank) {
    fail(name, op, "expects a rank-" + std::to_string(rank) + " input, got " + d.shape_string());
  }
}

// numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Rank-N ops can make outputs larger than any input (broadcasting, MatMul): bound them before the
// element count can overflow.
void require_bounded(const std::string& name, OpType op, const std::vector<int64_t>& shape) {
  constexpr int64_t kMaxElements = int64_t{1} << 31;
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d <= 0 || d > kMaxElements || count > kMaxElements / d) {
      TensorDesc desc;
      desc.shape = shape;
      fail(name, op, "output " + desc.shape_string() + " is empty or has more than 2^31 elements");
    }
    count *= d;
  }
}

std::string ints_string(const std::vector<int64_t>& v) {
  TensorDesc d;
  d.shape = v;
  return d.shape_string();
}

}  // namespace

TensorDesc infer_output(const std::string& name, OpType op,
                        const std::vector<const TensorDesc*>& inputs, const Attributes& attrs) {
  auto input = [&](size_t i) -> const TensorDesc& {
    if (i >= inputs.size() || inputs[i] == nullptr) {
      fail(name, op, "input " + std::to_string(i) + " is missing");
    }
    return *inputs[i];
  };
  const TensorDesc& x = input(0);
  TensorDesc out = x;
  out.quant = {};
  switch (op) {
    case OpType::kInput:
      fail(name, op, "Input nodes are created with Graph::add_input");
    case OpType::kConv: {
      require_rank(name, op, x, 4);
      const TensorDesc& w = input(1);
      const auto& strides = attrs.get_ints("strides");
      const auto& pads = attrs.get_ints("pads");
      const auto& dilations = attrs.get_ints("dilations");
      const int64_t group = attrs.get_int("group");
      if (w.shape.size() != 4) fail(name, op, "weights must be [M, C/group, kH, kW]");
      if (group <= 0 || x.shape[1] % group != 0 || w.shape[0] % group != 0 ||
          w.shape[1] * group != x.shape[1]) {
        fail(name, op, "input channels " + std::to_string(x.shape[1]) + ", weights " +
                           w.shape_string() + " and group " + std::to_string(group) +
                           " do not fit");
      }
      if (inputs.size() > 2 && inputs[2] != nullptr && inputs[2]->element_count() != w.shape[0]) {
        fail(name, op, "bias has " + std::to_string(inputs[2]->element_count()) +
                           " values for " + std::to_string(w.shape[0]) + " output channels");
      }
      const int64_t oh = pooled_extent(x.shape[2], w.shape[2], strides[0], pads[0], pads[2],
                                       dilations[0], false);
      const int64_t ow = pooled_extent(x.shape[3], w.shape[3], strides[1], pads[1], pads[3],
                                       dilations[1], false);
      if (oh <= 0 || ow <= 0) fail(name, op, "input " + x.shape_string() + " is too small");
      out.shape = {x.shape[0], w.shape[0], oh, ow};
      return out;
    }
    case OpType::kFullyConnected: {
      const TensorDesc& w = input(1);
      int64_t k = 1;
      for (size_t i = 1; i < x.shape.size(); ++i) k *= x.shape[i];
      if (w.shape.size() != 2 || w.shape[1] != k) {
        fail(name, op, "weights " + w.shape_string() + " do not fit input " + x.shape_string() +
                           " (expected [M, " + std::to_string(k) + "])");
      }
      out.shape = {x.shape[0], w.shape[0]};
      out.layout = Layout::kAny;
      return out;
    }
    case OpType::kMaxPool:
    case OpType::kAveragePool: {
      require_rank(name, op, x, 4);
      const auto& kernel = attrs.get_ints("kernel_shape");
      const auto& strides = attrs.get_ints("strides");
      const auto& pads = attrs.get_ints("pads");
      const bool ceil_mode = attrs.get_int("ceil_mode") != 0;
      const int64_t oh = pooled_extent(x.shape[2], kernel[0], strides[0], pads[0], pads[2], 1,
                                       ceil_mode);
      const int64_t ow = pooled_extent(x.shape[3], kernel[1], strides[1], pads[1], pads[3], 1,
                                       ceil_mode);
      if (oh <= 0 || ow <= 0) fail(name, op, "input " + x.shape_string() + " is too small");
      out.shape = {x.shape[0], x.shape[1], oh, ow};
      return out;
    }
    case OpType::kGlobalAveragePool:
    case OpType::kGlobalMaxPool:
      require_rank(name, op, x, 4);
      out.shape = {x.shape[0], x.shape[1], 1, 1};
      return out;
    case OpType::kRelu:
    case OpType::kClip:
    case OpType::kSigmoid:
    case OpType::kHardSwish:
    case OpType::kHardSigmoid:
    case OpType::kSiLU:
    case OpType::kIdentity:
    case OpType::kSoftmax:
      return out;
    case OpType::kLrn:
      require_rank(name, op, x, 4);
      return out;
    case OpType::kBatchNormalization:
      require_rank(name, op, x, 4);
      for (size_t i = 1; i <= 4; ++i) {
        if (input(i).element_count() != x.shape[1]) {
          fail(name, op, "parameter " + std::to_string(i) + " must have one value per channel");
        }
      }
      return out;
    case OpType::kConcat: {
      const int64_t axis = attrs.get_int("axis");
      if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size())) {
        fail(name, op, "axis " + std::to_string(axis) + " is out of range");
      }
      out.shape[axis] = 0;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const TensorDesc& in = input(i);
        for (size_t d = 0; d < x.shape.size(); ++d) {
          if (static_cast<int64_t>(d) != axis &&
              (in.shape.size() != x.shape.size() || in.shape[d] != x.shape[d])) {
            fail(name, op, "inputs " + x.shape_string() + " and " + in.shape_string() +
                               " differ outside axis " + std::to_string(axis));
          }
        }
        out.shape[axis] += in.shape[axis];
      }
      return out;
    }
    case OpType::kAdd:
    case OpType::kSub:
    case OpType::kMul:
    case OpType::kDiv:
    case OpType::kPow: {
      const auto shape = broadcast_shapes(x.shape, input(1).shape);
      if (!shape) {
        fail(name, op, "operands " + x.shape_string() + " and " + input(1).shape_string() +
                           " do not broadcast (numpy rules)");
      }
      require_bounded(name, op, *shape);
      if (*shape != x.shape) {
        out.shape = *shape;
        out.layout = input(1).shape == *shape ? input(1).layout : Layout::kAny;
      }
      return out;
    }
    case OpType::kSqrt:
    case OpType::kErf:
    case OpType::kTanh:
    case OpType::kExp:
    case OpType::kGelu:
      return out;
    case OpType::kMatMul: {
      const TensorDesc& b = input(1);
      if (x.shape.size() < 2 || b.shape.size() < 2) {
        fail(name, op, "operands " + x.shape_string() + " and " + b.shape_string() +
                           " must be at least 2-D");
      }
      const int64_t m = x.shape[x.shape.size() - 2], k = x.shape.back();
      const int64_t kb = b.shape[b.shape.size() - 2], n = b.shape.back();
      const auto batch = broadcast_shapes({x.shape.begin(), x.shape.end() - 2},
                                          {b.shape.begin(), b.shape.end() - 2});
      if (k != kb || !batch) {
        fail(name, op, "operands " + x.shape_string() + " and " + b.shape_string() +
                           " do not fit a matrix product");
      }
      out.shape = *batch;
      out.shape.push_back(m);
      out.shape.push_back(n);
      require_bounded(name, op, out.shape);
      out.layout = Layout::kAny;
      return out;
    }
    case OpType::kTranspose: {
      const auto& perm = attrs.get_ints("perm");
      std::vector<bool> seen(x.shape.size(), false);
      if (perm.size() != x.shape.size()) fail(name, op, "perm " + ints_string(perm) + " does not fit " + x.shape_string());
      for (size_t i = 0; i < perm.size(); ++i) {
        if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(perm.size()) || seen[perm[i]]) {
          fail(name, op, "perm " + ints_string(perm) + " is not a permutation");
        }
        seen[perm[i]] = true;
        out.shape[i] = x.shape[perm[i]];
      }
      out.layout = Layout::kAny;
      return out;
    }
    case OpType::kReduceMean:
    case OpType::kReduceSum: {
      const auto& axes = attrs.get_ints("axes");
      const bool keep = attrs.get_int("keepdims") != 0;
      std::vector<bool> reduce(x.shape.size(), false);
      for (size_t i = 0; i < axes.size(); ++i) {
        if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(x.shape.size()) || (i > 0 && axes[i] <= axes[i - 1])) {
          fail(name, op, "axes " + ints_string(axes) + " must be sorted, distinct and within rank " + std::to_string(x.shape.size()));
        }
        reduce[axes[i]] = true;
      }
      out.shape.clear();
      for (size_t d = 0; d < x.shape.size(); ++d) {
        if (!reduce[d]) out.shape.push_back(x.shape[d]);
        else if (keep) out.shape.push_back(1);
      }
      if (out.shape.empty()) out.shape.push_back(1);
      out.layout = out.shape.size() == 4 ? x.layout : Layout::kAny;
      return out;
    }
    case OpType::kGather: {
      const int64_t axis = attrs.get_int("axis");
      const auto& indices = attrs.get_ints("indices");
      const auto& ishape = attrs.get_ints("indices_shape");
      if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size())) fail(name, op, "axis " + std::to_string(axis) + " is out of range");
      int64_t count = 1;
      for (int64_t d : ishape) count *= d;
      if (count != static_cast<int64_t>(indices.size())) fail(name, op, "indices do not fit indices_shape");
      for (int64_t i : indices) {
        if (i < 0 || i >= x.shape[axis]) fail(name, op, "index " + std::to_string(i) + " is out of range");
      }
      out.shape.assign(x.shape.begin(), x.shape.begin() + axis);
      out.shape.insert(out.shape.end(), ishape.begin(), ishape.end());
      out.shape.insert(out.shape.end(), x.shape.begin() + axis + 1, x.shape.end());
      if (out.shape.empty()) out.shape.push_back(1);
      out.layout = Layout::kAny;
      return out;
    }
    case OpType::kSlice: {
      const auto& starts = attrs.get_ints("starts");
      const auto& ends = attrs.get_ints("ends");
      const auto& steps = attrs.get_ints("steps");
      if (starts.size() != x.shape.size() || ends.size() != x.shape.size() || steps.size() != x.shape.size()) {
        fail(name, op, "starts, ends and steps need one entry per axis of " + x.shape_string());
      }
      for (size_t d = 0; d < x.shape.size(); ++d) {
        if (steps[d] < 1 || starts[d] < 0 || starts[d] >= ends[d] || ends[d] > x.shape[d]) {
          fail(name, op, "slice [" + std::to_string(starts[d]) + ":" + std::to_string(ends[d]) + ":" +
                             std::to_string(steps[d]) + "] of axis " + std::to_string(d) + " of " +
                             x.shape_string() + " is empty or out of range");
        }
        out.shape[d] = (ends[d] - starts[d] + steps[d] - 1) / steps[d];
      }
      return out;
    }
    case OpType::kLayerNormalization: {
      const int64_t axis = attrs.get_int("axis");
      if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size())) fail(name, op, "axis " + std::to_string(axis) + " is out of range");
      int64_t norm = 1;
      for (size_t d = axis; d < x.shape.size(); ++d) norm *= x.shape[d];
      for (size_t i = 1; i < inputs.size(); ++i) {
        if (inputs[i] != nullptr && inputs[i]->element_count() != norm) {
          fail(name, op, (i == 1 ? "scale " : "bias ") + inputs[i]->shape_string() + " does not match the " +
                             std::to_string(norm) + " normalised values");
        }
      }
      return out;
    }
    case OpType::kLeakyRelu:
      attrs.get_float("alpha");
      return out;
    case OpType::kResize: {
      const auto& sizes = attrs.get_ints("sizes");
      const auto& scales = attrs.get_floats("scales");
      const std::string& mode = attrs.get_string("mode");
      const std::string& transform = attrs.get_string("coordinate_transformation_mode");
      const std::string& nearest = attrs.get_string("nearest_mode");
      const size_t rank = x.shape.size();
      if (rank < 2 || sizes.size() != rank || scales.size() != rank) {
        fail(name, op, "sizes and scales need one entry per axis of " + x.shape_string() + " (rank >= 2)");
      }
      if (mode != "nearest" && mode != "linear") fail(name, op, "mode '" + mode + "' is not nearest or linear");
      if (transform != "asymmetric" && transform != "half_pixel" && transform != "pytorch_half_pixel" &&
          transform != "align_corners") {
        fail(name, op, "coordinate_transformation_mode '" + transform + "' is not supported");
      }
      if (nearest != "floor" && nearest != "ceil" && nearest != "round_prefer_floor" && nearest != "round_prefer_ceil") {
        fail(name, op, "nearest_mode '" + nearest + "' is not supported");
      }
      for (size_t d = 0; d < rank; ++d) {
        if (sizes[d] < 1 || !(scales[d] > 0.0f)) fail(name, op, "sizes and scales must be positive");
        if (d + 2 < rank && (sizes[d] != x.shape[d] || scales[d] != 1.0f)) {
          fail(name, op, "resizes axis " + std::to_string(d) + " of " + x.shape_string() + "; only the last two axes are resized");
        }
      }
      out.shape = sizes;
      require_bounded(name, op, out.shape);
      return out;
    }
    case OpType::kPad: {
      const auto& pads = attrs.get_ints("pads");
      const std::string& mode = attrs.get_string("mode");
      attrs.get_float("value");
      const size_t rank = x.shape.size();
      if (pads.size() != 2 * rank) fail(name, op, "pads " + ints_string(pads) + " need 2 entries per axis of " + x.shape_string());
      if (mode != "constant" && mode != "reflect" && mode != "edge") fail(name, op, "mode '" + mode + "' is not constant, reflect or edge");
      for (size_t d = 0; d < rank; ++d) {
        const int64_t begin = pads[d], end = pads[d + rank];
        if (begin < 0 || end < 0 || begin > (int64_t{1} << 24) || end > (int64_t{1} << 24)) {
          fail(name, op, "pads " + ints_string(pads) + " must be >= 0");
        }
        if (mode == "reflect" && (begin >= x.shape[d] || end >= x.shape[d])) {
          fail(name, op, "reflect pads " + ints_string(pads) + " must be smaller than the dims of " + x.shape_string());
        }
        out.shape[d] = x.shape[d] + begin + end;
      }
      require_bounded(name, op, out.shape);
      return out;
    }
    case OpType::kChannelScale: {
      require_rank(name, op, x, 4);
      const TensorDesc& s = input(1);
      if (s.shape != std::vector<int64_t>{x.shape[0], x.shape[1], 1, 1}) {
        fail(name, op, "scale " + s.shape_string() + " must be [N,C,1,1] of input " +
                           x.shape_string());
      }
      return out;
    }
    case OpType::kChannelShuffle: {
      require_rank(name, op, x, 4);
      const int64_t groups = attrs.get_int("groups");
      if (groups < 1 || x.shape[1] % groups != 0) {
        fail(name, op, "groups " + std::to_string(groups) + " does not divide the " +
                           std::to_string(x.shape[1]) + " channels");
      }
      return out;
    }
    case OpType::kFlatten: {
      const int64_t axis = attrs.get_int("axis");
      int64_t outer = 1;
      int64_t inner = 1;
      for (size_t d = 0; d < x.shape.size(); ++d) {
        (static_cast<int64_t>(d) < axis ? outer : inner) *= x.shape[d];
      }
      out.shape = {outer, inner};
      out.layout = Layout::kAny;
      return out;
    }
    case OpType::kReshape: {
      out.shape = attrs.get_ints("shape");
      if (out.element_count() != x.element_count()) {
        fail(name, op, "cannot reshape " + x.shape_string() + " to " + out.shape_string());
      }
      out.layout = out.shape.size() == 4 ? x.layout : Layout::kAny;
      return out;
    }
  }
  fail(name, op, "unknown operator");
}

TensorId Graph::add_input(const std::string& name, TensorDesc desc) {
  for (int64_t d : desc.shape) {
    if (d <= 0) {
      throw InputError("input '" + name + "' has shape " + desc.shape_string() +
                       "; every dimension must be positive");
    }
  }
  const auto tensor_id = static_cast<TensorId>(tensors_.size());
  const auto node_id = static_cast<NodeId>(nodes_.size());
  tensors_.push_back(Tensor{tensor_id, name, std::move(desc), node_id, false, {}});
  nodes_.push_back(Node{node_id, name, OpType::kInput, {}, {}, {tensor_id}, 0});
  inputs_.push_back(tensor_id);
  return tensor_id;
}

TensorId Graph::add_constant(const std::string& name, TensorDesc desc, std::vector<float> data) {
  if (static_cast<int64_t>(data.size()) != desc.element_count()) {
    throw InputError("constant '" + name + "' has " + std::to_string(data.size()) +
                     " values but shape " + desc.shape_string() + " needs " +
                     std::to_string(desc.element_count()));
  }
  const auto id = static_cast<TensorId>(tensors_.size());
  tensors_.push_back(Tensor{id, name, std::move(desc), kNoNode, true, std::move(data)});
  return id;
}

TensorId Graph::add_node(const std::string& name, OpType op, std::vector<TensorId> inputs,
                         Attributes attrs, uint32_t layer) {
  std::vector<const TensorDesc*> descs;
  for (TensorId t : inputs) descs.push_back(t == kNoTensor ? nullptr : &tensors_.at(t).desc);
  TensorDesc out_desc = infer_output(name, op, descs, attrs);
  const auto node_id = static_cast<NodeId>(nodes_.size());
  const auto tensor_id = static_cast<TensorId>(tensors_.size());
  tensors_.push_back(Tensor{tensor_id, name, std::move(out_desc), node_id, false, {}});
  nodes_.push_back(Node{node_id, name, op, std::move(attrs), std::move(inputs), {tensor_id}, layer});
  return tensor_id;
}

void Graph::mark_output(TensorId tensor) { outputs_.push_back(tensor); }

void Graph::mark_outputs_as_exits() {
  if (outputs_.size() < 2) {
    throw InputError("graph '" + name_ + "' has " + std::to_string(outputs_.size()) +
                     " output(s); a multi-exit network needs one per exit, at least two");
  }
  for (size_t k = 1; k < outputs_.size(); ++k) {
    const Tensor& before = tensors_.at(outputs_[k - 1]);
    const Tensor& exit = tensors_.at(outputs_[k]);
    if (exit.producer <= before.producer) {
      throw InputError("exit " + std::to_string(k) + " '" + exit.name + "' is computed before exit " +
                       std::to_string(k - 1) + " '" + before.name +
                       "'; list exits in stage order (the order the network computes them)");
    }
    if (exit.desc.element_count() != before.desc.element_count()) {
      throw InputError("exit " + std::to_string(k) + " '" + exit.name + "' has shape " +
                       exit.desc.shape_string() + " but exit " + std::to_string(k - 1) + " '" +
                       before.name + "' has " + before.desc.shape_string() +
                       "; every exit must score the same classes");
    }
  }
  outputs_are_exits_ = true;
}

void Graph::reorder_outputs(const std::vector<TensorId>& outputs) {
  if (!std::is_permutation(outputs.begin(), outputs.end(), outputs_.begin(), outputs_.end())) {
    throw InputError("graph '" + name_ + "': the outputs to reorder are not its " +
                     std::to_string(outputs_.size()) + " outputs");
  }
  outputs_ = outputs;
}

void Graph::set_layer_name(uint32_t layer, std::string name) {
  if (layer_names_.size() <= layer) layer_names_.resize(layer + 1);
  layer_names_[layer] = std::move(name);
}

uint32_t Graph::layer_count() const {
  uint32_t count = 0;
  for (const Node& n : nodes_) count = std::max(count, n.layer + 1);
  return count;
}

std::vector<LayerUnit> Graph::layers() const {
  std::vector<LayerUnit> units(layer_count());
  for (uint32_t i = 0; i < units.size(); ++i) {
    units[i].name = i < layer_names_.size() && !layer_names_[i].empty()
                        ? layer_names_[i]
                        : "layer" + std::to_string(i);
  }
  for (const Node& n : nodes_) units[n.layer].nodes.push_back(n.id);
  return units;
}

std::vector<NodeId> Graph::consumers(TensorId tensor) const {
  std::vector<NodeId> result;
  for (const Node& n : nodes_) {
    if (std::find(n.inputs.begin(), n.inputs.end(), tensor) != n.inputs.end()) {
      result.push_back(n.id);
    }
  }
  return result;
}

void Graph::erase_passthrough_nodes_impl(const std::vector<bool>& erase) {
  // Replacement map for tensors produced by erased nodes, resolved transitively.
  std::vector<TensorId> replace(tensors_.size());
  for (TensorId t = 0; t < replace.size(); ++t) replace[t] = t;
  for (const Node& n : nodes_) {
    if (!erase[n.id]) continue;
    if (n.outputs.size() != 1 || n.inputs.empty()) {
      throw std::logic_error("node '" + n.name + "' is not a pass-through node");
    }
    replace[n.outputs[0]] = replace[n.inputs[0]];
  }
  auto resolve = [&](TensorId t) { return t == kNoTensor ? t : replace[t]; };
  std::vector<Node> kept;
  for (Node& n : nodes_) {
    if (erase[n.id]) continue;
    for (TensorId& t : n.inputs) t = resolve(t);
    n.id = static_cast<NodeId>(kept.size());
    for (TensorId t : n.outputs) tensors_[t].producer = n.id;
    kept.push_back(std::move(n));
  }
  for (TensorId& t : outputs_) t = resolve(t);
  for (Tensor& t : tensors_) {
    if (t.producer != kNoNode && replace[t.id] != t.id) t.producer = kNoNode;  // now dead
  }
  nodes_ = std::move(kept);
}

void Graph::validate() const {
  std::vector<bool> available(tensors_.size(), false);
  for (const Tensor& t : tensors_) available[t.id] = t.is_constant;
  uint32_t previous_layer = 0;
  std::vector<bool> layer_closed;
  for (const Node& n : nodes_) {
    for (TensorId t : n.inputs) {
      if (t != kNoTensor && !available.at(t)) {
        throw std::logic_error("node '" + n.name + "' reads tensor '" + tensors_.at(t).name +
                               "' before it is produced");
      }
    }
    for (TensorId t : n.outputs) available.at(t) = true;
    if (n.layer != previous_layer) {
      if (layer_closed.size() <= previous_layer) layer_closed.resize(previous_layer + 1);
      layer_closed[previous_layer] = true;
      if (n.layer < layer_closed.size() && layer_closed[n.layer]) {
        throw std::logic_error("layer unit " + std::to_string(n.layer) + " is not contiguous");
      }
      previous_layer = n.layer;
    }
  }
  for (TensorId t : outputs_) {
    if (!available.at(t)) throw std::logic_error("graph output is never produced");
  }
  // --data finds constants by name, so two constants must never share one.
  std::set<std::string> constant_names;
  for (const Tensor& t : tensors_) {
    if (t.is_constant && !constant_names.insert(t.name).second) {
      throw std::logic_error("two constants are named '" + t.name + "'");
    }
  }
}

int64_t node_macs(const Graph& graph, const Node& node) {
  const TensorDesc& out = graph.tensor(node.outputs.at(0)).desc;
  switch (node.op) {
    case OpType::kConv: {
      const TensorDesc& w = graph.tensor(node.inputs.at(1)).desc;
      return out.element_count() * w.shape[1] * w.shape[2] * w.shape[3];
    }
    case OpType::kFullyConnected: {
      const TensorDesc& w = graph.tensor(node.inputs.at(1)).desc;
      return out.element_count() * w.shape[1];
    }
    case OpType::kMatMul:
      return out.element_count() * graph.tensor(node.inputs.at(0)).desc.shape.back();
    default:
      return 0;
  }
}

std::vector<LayerSummary> summarize_layers(const Graph& graph) {
  std::vector<LayerSummary> result;
  for (const LayerUnit& unit : graph.layers()) {
    LayerSummary summary;
    summary.index = static_cast<uint32_t>(result.size());
    summary.name = unit.name;
    for (NodeId id : unit.nodes) {
      const Node& n = graph.node(id);
      if (n.op == OpType::kInput) continue;
      if (!summary.ops.empty()) summary.ops += "+";
      summary.ops += op_type_name(n.op);
      if (n.attrs.has("activation") && n.attrs.get_string("activation") != "none") {
        summary.ops += "(" + n.attrs.get_string("activation") + ")";
      }
      summary.macs += node_macs(graph, n);
      summary.output_shape = graph.tensor(n.outputs.at(0)).desc.shape_string();
    }
    result.push_back(std::move(summary));
  }
  return result;
}

}  // namespace co_up::graph
