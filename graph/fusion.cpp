#include "graph/fusion.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/graph_rebuild.h"

namespace co_up::graph {
namespace {

// A pattern found: the nodes it replaces and the node that takes the place of the last one.
struct Fusion {
  NodeId terminal = kNoNode;
  std::vector<NodeId> interior;
  std::string name;
  OpType op = OpType::kIdentity;
  std::vector<TensorId> inputs;
  Attributes attrs;
  std::vector<float> ones;  // a LayerNormalization without Mul gets a scale of ones
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), consumers_(g.tensors().size()), is_output_(g.tensors().size(), false) {
    for (const Node& n : g.nodes()) {
      for (TensorId t : n.inputs) {
        if (t != kNoTensor) consumers_[t].push_back(n.id);
      }
    }
    for (TensorId t : g.outputs()) is_output_[t] = true;
  }

  std::vector<Fusion> find() {
    std::vector<Fusion> found;
    for (const Node& n : g_.nodes()) {
      if (n.op != OpType::kReduceMean || used_.count(n.id)) continue;
      if (auto f = match_layer_norm(n)) take(*f, found);
    }
    // Latest nodes first, so that the whole GELU chain is tried before its inner parts.
    for (auto it = g_.nodes().rbegin(); it != g_.nodes().rend(); ++it) {
      if (used_.count(it->id) || !is_elementwise(it->op)) continue;
      if (auto f = match_gelu(*it)) take(*f, found);
    }
    return found;
  }

 private:
  void take(const Fusion& f, std::vector<Fusion>& found) {
    used_.insert(f.terminal);
    for (NodeId id : f.interior) used_.insert(id);
    found.push_back(f);
  }

  static bool is_elementwise(OpType op) { return is_broadcast_binary_op(op) || is_unary_math_op(op); }

  const Node* producer(TensorId t) const {
    if (t == kNoTensor) return nullptr;
    const Tensor& tensor = g_.tensor(t);
    return tensor.is_constant || tensor.producer == kNoNode ? nullptr : &g_.node(tensor.producer);
  }
  // The one node that reads `t`, when `t` is no graph output and not read elsewhere.
  const Node* only_consumer(TensorId t) const {
    if (is_output_[t] || consumers_[t].size() != 1) return nullptr;
    const Node* n = &g_.node(consumers_[t][0]);
    return used_.count(n->id) ? nullptr : n;
  }
  std::optional<float> scalar(TensorId t) const {
    const Tensor& tensor = g_.tensor(t);
    if (!tensor.is_constant || tensor.data.size() != 1) return std::nullopt;
    return tensor.data[0];
  }
  // The constant operand of a binary node whose other operand is `x`.
  std::optional<float> scalar_other(const Node& n, TensorId x) const {
    if (n.inputs.size() != 2 || n.inputs[0] != x) return std::nullopt;
    return scalar(n.inputs[1]);
  }

  std::optional<Fusion> match_layer_norm(const Node& mean1) {
    const TensorId x = mean1.inputs[0];
    const auto rank = static_cast<int64_t>(g_.tensor(x).desc.shape.size());
    const auto& axes = mean1.attrs.get_ints("axes");
    if (mean1.attrs.get_int("keepdims") == 0 || axes.empty() || axes.back() != rank - 1) return std::nullopt;
    for (size_t i = 1; i < axes.size(); ++i) {
      if (axes[i] != axes[i - 1] + 1) return std::nullopt;
    }
    const Node* sub = only_consumer(mean1.outputs[0]);
    if (!sub || sub->op != OpType::kSub || sub->inputs[0] != x || sub->inputs[1] != mean1.outputs[0]) return std::nullopt;
    const TensorId d = sub->outputs[0];
    if (is_output_[d] || consumers_[d].size() != 2) return std::nullopt;
    const Node* pow = &g_.node(consumers_[d][0]);
    const Node* div = &g_.node(consumers_[d][1]);
    if (pow->op == OpType::kDiv) std::swap(pow, div);
    const bool squares = pow->op == OpType::kPow && scalar_other(*pow, d) == 2.0f;
    if (!squares || div->op != OpType::kDiv || div->inputs[0] != d) return std::nullopt;
    const Node* mean2 = only_consumer(pow->outputs[0]);
    if (!mean2 || mean2->op != OpType::kReduceMean || mean2->attrs.get_ints("axes") != axes ||
        mean2->attrs.get_int("keepdims") == 0) {
      return std::nullopt;
    }
    const Node* add_eps = only_consumer(mean2->outputs[0]);
    if (!add_eps || add_eps->op != OpType::kAdd || add_eps->attrs.get_string("activation") != "none") return std::nullopt;
    const auto eps = scalar_other(*add_eps, mean2->outputs[0]);
    const Node* sqrt = eps ? only_consumer(add_eps->outputs[0]) : nullptr;
    if (!sqrt || sqrt->op != OpType::kSqrt || only_consumer(sqrt->outputs[0]) != div || div->inputs[1] != sqrt->outputs[0]) {
      return std::nullopt;
    }
    Fusion f;
    f.name = mean1.name;
    f.op = OpType::kLayerNormalization;
    f.interior = {mean1.id, sub->id, pow->id, mean2->id, add_eps->id, sqrt->id};
    const Node* last = div;
    int64_t norm = 1;
    const auto& shape = g_.tensor(x).desc.shape;
    for (int64_t a : axes) norm *= shape[static_cast<size_t>(a)];
    auto per_value = [&](const Node* n, OpType op) -> TensorId {
      if (!n || n->op != op || n->inputs[0] != last->outputs[0]) return kNoTensor;
      if (op == OpType::kAdd && n->attrs.get_string("activation") != "none") return kNoTensor;
      const Tensor& c = g_.tensor(n->inputs[1]);
      if (!c.is_constant || static_cast<int64_t>(c.data.size()) != norm) return kNoTensor;
      // The constant must line up with the normalised axes: trailing dims equal to x's.
      const auto& cs = c.desc.shape;
      for (size_t i = 0; i < cs.size(); ++i) {
        const size_t xi = shape.size() - cs.size() + i;
        if (xi >= shape.size() || (cs[i] != shape[xi] && cs[i] != 1)) return kNoTensor;
      }
      return c.id;
    };
    TensorId scale = per_value(only_consumer(last->outputs[0]), OpType::kMul);
    if (scale != kNoTensor) {
      f.interior.push_back(last->id);
      last = only_consumer(last->outputs[0]);
    }
    TensorId bias = per_value(only_consumer(last->outputs[0]), OpType::kAdd);
    if (bias != kNoTensor) {
      f.interior.push_back(last->id);
      last = only_consumer(last->outputs[0]);
    }
    if (scale == kNoTensor) f.ones.assign(static_cast<size_t>(norm), 1.0f);
    f.terminal = last->id;
    f.inputs = {x, scale, bias};
    f.attrs = {{"axis", axes.front()}, {"epsilon", static_cast<double>(*eps)}};
    return f;
  }

  // Grows the chain of single-use element-wise nodes ending at `end` whose only non-scalar input
  // is one tensor x, and compares it with GELU on sample values.
  std::optional<Fusion> match_gelu(const Node& end) {
    constexpr size_t kMaxChain = 16;
    std::set<NodeId> chain{end.id};
    std::vector<NodeId> todo{end.id};
    TensorId x = kNoTensor;
    while (!todo.empty()) {
      const Node& n = g_.node(todo.back());
      todo.pop_back();
      for (TensorId t : n.inputs) {
        if (scalar(t)) continue;
        const Node* p = producer(t);
        const bool inner = p && is_elementwise(p->op) && !used_.count(p->id) && !is_output_[t] &&
                           std::all_of(consumers_[t].begin(), consumers_[t].end(),
                                       [&](NodeId c) { return chain.count(c) != 0; }) &&
                           t != x;
        if (inner && consumers_[t].size() == 1) {
          if (chain.insert(p->id).second) todo.push_back(p->id);
          if (chain.size() > kMaxChain) return std::nullopt;
          continue;
        }
        if (x != kNoTensor && x != t) return std::nullopt;
        x = t;
      }
    }
    if (x == kNoTensor || chain.size() < 3 || g_.tensor(x).is_constant ||
        g_.tensor(x).desc.shape != g_.tensor(end.outputs[0]).desc.shape) {
      return std::nullopt;
    }
    static constexpr double kSamples[] = {-3.0, -2.0, -1.3, -0.7, -0.2, 0.0, 0.4, 0.9, 1.6, 2.7};
    double err_erf = 0, err_tanh = 0;
    for (double v : kSamples) {
      const double got = evaluate(chain, x, end.outputs[0], v);
      const double erf_form = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      const double tanh_form = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
      err_erf = std::max(err_erf, std::fabs(got - erf_form));
      err_tanh = std::max(err_tanh, std::fabs(got - tanh_form));
    }
    // The forms differ by up to ~5e-4 in this range; float constants are good to ~1e-6.
    constexpr double kTolerance = 2e-5;
    if (std::min(err_erf, err_tanh) > kTolerance) return std::nullopt;
    Fusion f;
    f.terminal = end.id;
    f.name = end.name;
    f.op = OpType::kGelu;
    for (NodeId id : chain) {
      if (id != end.id) f.interior.push_back(id);
    }
    f.inputs = {x};
    f.attrs = {{"approximate", std::string(err_erf <= err_tanh ? "none" : "tanh")}};
    return f;
  }

  // The chain's value at `out` for x = v (every tensor of the chain is a scalar function of x).
  double evaluate(const std::set<NodeId>& chain, TensorId x, TensorId out, double v) const {
    std::map<TensorId, double> values{{x, v}};
    for (NodeId id : chain) {  // ids ascend in topological order
      const Node& n = g_.node(id);
      auto in = [&](size_t i) {
        const TensorId t = n.inputs[i];
        if (auto s = scalar(t)) return static_cast<double>(*s);
        return values.at(t);
      };
      double r = 0;
      switch (n.op) {
        case OpType::kAdd: r = in(0) + in(1); break;
        case OpType::kSub: r = in(0) - in(1); break;
        case OpType::kMul: r = in(0) * in(1); break;
        case OpType::kDiv: r = in(0) / in(1); break;
        case OpType::kPow: r = std::pow(in(0), in(1)); break;
        case OpType::kSqrt: r = std::sqrt(in(0)); break;
        case OpType::kErf: r = std::erf(in(0)); break;
        case OpType::kTanh: r = std::tanh(in(0)); break;
        case OpType::kExp: r = std::exp(in(0)); break;
        default: return NAN;
      }
      if (n.op == OpType::kAdd && n.attrs.get_string("activation") != "none") return NAN;
      values[n.outputs[0]] = r;
    }
    return values.at(out);
  }

  const Graph& g_;
  std::vector<std::vector<NodeId>> consumers_;
  std::vector<bool> is_output_;
  std::set<NodeId> used_;
};

}  // namespace

void fuse_transformer_patterns(Graph& graph) {
  const std::vector<Fusion> fusions = Matcher(graph).find();
  if (fusions.empty()) return;
  std::vector<const Fusion*> at_terminal(graph.nodes().size(), nullptr);
  std::vector<bool> skip(graph.nodes().size(), false);
  for (const Fusion& f : fusions) {
    at_terminal[f.terminal] = &f;
    for (NodeId id : f.interior) skip[id] = true;
  }
  GraphRebuild rebuild(graph);
  Graph& out = rebuild.out();
  for (const Node& n : graph.nodes()) {
    if (n.op == OpType::kInput) {
      rebuild.copy_input(n);
      continue;
    }
    if (skip[n.id]) continue;
    std::vector<TensorId> inputs;
    if (const Fusion* f = at_terminal[n.id]) {
      for (TensorId t : f->inputs) inputs.push_back(rebuild.mapped(t));
      if (!f->ones.empty()) {
        TensorDesc d;
        d.shape = {static_cast<int64_t>(f->ones.size())};
        d.layout = Layout::kAny;
        inputs[1] = out.add_constant(f->name + "/scale", d, f->ones);
      }
      while (!inputs.empty() && inputs.back() == kNoTensor) inputs.pop_back();
      rebuild.map(n.outputs[0], out.add_node(f->name, f->op, inputs, f->attrs, n.layer));
      continue;
    }
    // Unlike copy_node, the output takes the name and shape add_node gives it.
    rebuild.map(n.outputs[0], out.add_node(n.name, n.op, rebuild.mapped_inputs(n), n.attrs, n.layer));
  }
  graph = rebuild.finish();
}

}  // namespace co_up::graph
