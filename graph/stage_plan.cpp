#include "graph/stage_plan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/io/input_file.h"
#include "core/json_input.h"
#include "graph/graph_rebuild.h"

namespace co_up::graph {
namespace {

constexpr double kSumTolerance = 1e-6;

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::vector<std::string> split_on(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(sep, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

double parse_fraction(const std::string& where, const std::string& token) {
  double v = 0;
  const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (token.empty() || ec != std::errc() || end != token.data() + token.size() || !std::isfinite(v)) {
    throw InputError(where + ": '" + token + "' is not a number");
  }
  return v;
}

bool is_compute(OpType op) { return op == OpType::kConv || op == OpType::kFullyConnected; }

// For every compute node, the compute nodes whose outputs it reads through non-compute ops
// (pooling, Concat, Flatten, ...), and whether it reads the graph input that way.
struct ComputeInputs {
  std::set<NodeId> producers;
  bool reads_input = false;
};

ComputeInputs compute_inputs(const Graph& g, const Node& node) {
  ComputeInputs out;
  std::vector<TensorId> stack(node.inputs.begin(), node.inputs.end());
  std::set<TensorId> seen;
  while (!stack.empty()) {
    const TensorId t = stack.back();
    stack.pop_back();
    if (t == kNoTensor || !seen.insert(t).second) continue;
    const Tensor& tensor = g.tensor(t);
    if (tensor.is_constant) continue;
    if (tensor.producer == kNoNode) {
      out.reads_input = true;
      continue;
    }
    const Node& p = g.node(tensor.producer);
    if (p.op == OpType::kInput) {
      out.reads_input = true;
    } else if (is_compute(p.op)) {
      out.producers.insert(p.id);
    } else {
      stack.insert(stack.end(), p.inputs.begin(), p.inputs.end());
    }
  }
  return out;
}

}  // namespace

void validate_stage_plan(const StagePlan& plan, const std::string& where) {
  const size_t m = plan.p.size();
  if (m == 0) throw InputError(where + ": P has no stages (rows); give one row per stage");
  const size_t n = plan.p[0].size();
  if (n == 0) throw InputError(where + ": P row 1 has no layers; give one fraction per layer");
  for (size_t i = 0; i < m; ++i) {
    if (plan.p[i].size() != n) {
      throw InputError(where + ": P row " + std::to_string(i + 1) + " has " + std::to_string(plan.p[i].size()) +
                       " layers but row 1 has " + std::to_string(n) + "; every stage needs one fraction per layer");
    }
  }
  if (plan.reuse.size() != m) {
    throw InputError(where + ": P has " + std::to_string(m) + " stages (rows) but I has " +
                     std::to_string(plan.reuse.size()) + "; give I one row per stage");
  }
  for (size_t i = 0; i < m; ++i) {
    if (plan.reuse[i].size() != n) {
      throw InputError(where + ": I row " + std::to_string(i + 1) + " has " + std::to_string(plan.reuse[i].size()) +
                       " layers but P has " + std::to_string(n) + "; give I one entry per layer");
    }
  }
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const double v = plan.p[i][j];
      if (!(v > 0 && v <= 1)) {
        throw InputError(where + ": P[" + std::to_string(i + 1) + "][" + std::to_string(j + 1) + "] = " +
                         number_text(v) + " is outside (0, 1]; every stage computes part of every layer");
      }
    }
  }
  for (size_t j = 0; j < n; ++j) {
    double earlier = 0;
    for (size_t i = 0; i + 1 < m; ++i) earlier += plan.p[i][j];
    const std::string column = ": P column " + std::to_string(j + 1) + " (layer " + std::to_string(j + 1) + ")";
    if (plan.last_stage_computes_whole_layer(j)) {
      if (earlier > 1.0 + kSumTolerance) {
        throw InputError(where + column + ": the last stage computes the whole layer (1) but the earlier stages' "
                         "fractions sum to " + number_text(earlier) + ", more than the layer; make them sum to at most 1");
      }
      continue;
    }
    const double sum = earlier + plan.p[m - 1][j];
    if (std::abs(sum - 1.0) > kSumTolerance) {
      throw InputError(where + column + " sums to " + number_text(sum) +
                       ", not 1; a layer's fractions over the stages must sum to 1 (or the last stage's be 1: "
                       "it computes the whole layer)");
    }
  }
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const int v = plan.reuse[i][j];
      if (v != 0 && v != 1) {
        throw InputError(where + ": I[" + std::to_string(i + 1) + "][" + std::to_string(j + 1) + "] = " +
                         std::to_string(v) + " must be 0 or 1");
      }
      if (v == 1 && i + 1 == m) {
        throw InputError(where + ": I[" + std::to_string(i + 1) + "][" + std::to_string(j + 1) +
                         "] = 1 shares stage " + std::to_string(i + 1) +
                         "'s features with a later stage, but it is the last stage; its row must be all 0");
      }
    }
  }
}

StagePlan parse_stage_plan(const std::string& text) {
  const std::string where = "--stages";
  StagePlan plan;
  bool have_p = false, have_i = false;
  for (const std::string& part : split_on(text, ';')) {
    const size_t colon = part.find(':');
    const std::string key = colon == std::string::npos ? part : part.substr(0, colon);
    if (colon == std::string::npos || (key != "P" && key != "I")) {
      throw InputError(where + "='" + text + "': '" + part +
                       "' is neither P:... nor I:... (use P:0.5,0.5/0.5,0.5;I:1,1/0,0 — rows are stages)");
    }
    if ((key == "P" && have_p) || (key == "I" && have_i)) throw InputError(where + ": " + key + " is given twice");
    (key == "P" ? have_p : have_i) = true;
    for (const std::string& row : split_on(part.substr(colon + 1), '/')) {
      std::vector<double> values;
      for (const std::string& token : split_on(row, ',')) values.push_back(parse_fraction(where, token));
      if (key == "P") {
        plan.p.push_back(values);
        continue;
      }
      std::vector<int> bits;
      for (double v : values) {
        if (v != 0 && v != 1) throw InputError(where + ": I entry " + number_text(v) + " must be 0 or 1");
        bits.push_back(static_cast<int>(v));
      }
      plan.reuse.push_back(bits);
    }
  }
  if (!have_p || !have_i) {
    throw InputError(where + "='" + text + "' needs both P:... and I:... (e.g. P:0.5,0.5/0.5,0.5;I:1,1/0,0)");
  }
  validate_stage_plan(plan, where);
  return plan;
}

StagePlan read_stage_plan_file(const std::string& path) {
  const std::string where = "stage plan '" + path + "'";
  const nlohmann::json doc = parse_json(io::read_input_file(path, "stage plan", 1 << 20), where);
  if (!doc.is_object() || !doc.contains("P") || !doc.contains("I")) {
    throw InputError(where + ": expected an object with \"P\" and \"I\" (arrays of rows, one per stage)");
  }
  StagePlan plan;
  for (const char* key : {"P", "I"}) {
    const nlohmann::json& rows = doc.at(key);
    if (!rows.is_array()) throw InputError(where + ": \"" + key + "\" must be an array of rows");
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string row_where = json_index(json_key(where, key), i);
      if (!rows[i].is_array()) throw InputError(row_where + " must be an array (one entry per layer)");
      std::vector<double> p_row;
      std::vector<int> i_row;
      for (size_t j = 0; j < rows[i].size(); ++j) {
        const std::string at = json_index(row_where, j);
        if (key[0] == 'P') {
          p_row.push_back(json_number(rows[i][j], at, 0, 1));
        } else {
          i_row.push_back(static_cast<int>(json_integer(rows[i][j], at, 0, 1)));
        }
      }
      if (key[0] == 'P') {
        plan.p.push_back(p_row);
      } else {
        plan.reuse.push_back(i_row);
      }
    }
  }
  validate_stage_plan(plan, where);
  return plan;
}

std::vector<int64_t> stage_channels(const StagePlan& plan, size_t layer, int64_t width) {
  std::vector<int64_t> out(plan.stage_count());
  int64_t used = 0;
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    out[i] = std::llround(plan.p[i][layer] * static_cast<double>(width));
    used += out[i];
  }
  out.back() = plan.last_stage_computes_whole_layer(layer) ? width : width - used;
  return out;
}

StageStructure find_stages(const Graph& graph, const StagePlan& plan, const std::string& where) {
  const size_t m = plan.stage_count(), n = plan.layer_count();
  // The exits: graph outputs named exit0, exit1, ... (the multi-exit convention); an importer
  // that names output tensors after their producers keeps the file's output order, which the
  // convention makes the stage order.
  std::map<size_t, TensorId> exits;
  for (TensorId t : graph.outputs()) {
    const std::string& name = graph.tensor(t).name;
    size_t k = 0;
    if (name.rfind("exit", 0) == 0 && name.size() > 4 &&
        std::from_chars(name.data() + 4, name.data() + name.size(), k).ptr == name.data() + name.size()) {
      exits[k] = t;
    }
  }
  if (exits.empty()) {
    for (size_t k = 0; k < graph.outputs().size(); ++k) exits[k] = graph.outputs()[k];
  }
  const bool contiguous = !exits.empty() && exits.rbegin()->first + 1 == exits.size();
  if (!contiguous || exits.size() != m) {
    throw InputError(where + " has " + std::to_string(m) + " stages but the model has " +
                     std::to_string(exits.size()) + " exit output" + (exits.size() == 1 ? "" : "s") +
                     (contiguous ? "" : " not numbered exit0..exit" + std::to_string(exits.size() - 1)) +
                     "; a stage plan needs a multi-exit model with one exit per stage (outputs exit0, exit1, ...)");
  }
  // Stage of a node: the first exit whose computation needs it.
  constexpr uint32_t kUnassigned = kNoStage;
  std::vector<uint32_t> stage(graph.nodes().size(), kUnassigned);
  for (const auto& [k, out] : exits) {
    std::vector<TensorId> stack{out};
    while (!stack.empty()) {
      const TensorId t = stack.back();
      stack.pop_back();
      const NodeId producer = graph.tensor(t).producer;
      if (producer == kNoNode || stage[producer] != kUnassigned) continue;
      stage[producer] = static_cast<uint32_t>(k);
      for (TensorId in : graph.node(producer).inputs) {
        if (in != kNoTensor) stack.push_back(in);
      }
    }
  }
  // Compute ops per stage, in order: n layers, then the exit classifier.
  std::vector<std::vector<NodeId>> compute(m);
  for (const Node& node : graph.nodes()) {
    if (node.op == OpType::kInput) continue;
    if (node.outputs.size() != 1) {
      throw InputError(where + ": node '" + node.name + "' has " + std::to_string(node.outputs.size()) +
                       " outputs; stages are found in graphs of single-output nodes only");
    }
    if (stage[node.id] == kUnassigned) {
      throw InputError(where + ": node '" + node.name + "' feeds no exit; a stage plan needs every node on the way "
                       "to an exit");
    }
    if (is_compute(node.op)) compute[stage[node.id]].push_back(node.id);
  }
  for (size_t i = 0; i < m; ++i) {
    if (compute[i].size() != n + 1) {
      throw InputError(where + " has " + std::to_string(n) + " layers per stage but the model's stage " +
                       std::to_string(i + 1) + " has " + std::to_string(compute[i].empty() ? 0 : compute[i].size() - 1) +
                       " (plus its exit classifier)");
    }
  }
  auto channels = [&](NodeId id) { return graph.tensor(graph.node(id).inputs.at(1)).desc.shape.at(0); };
  for (size_t j = 0; j < n; ++j) {
    // The layer's width: the stages' channels together, or the last stage's where it computes
    // the whole layer.
    int64_t width = 0;
    for (size_t i = 0; i < m; ++i) width += channels(compute[i][j]);
    if (plan.last_stage_computes_whole_layer(j)) width = channels(compute[m - 1][j]);
    const std::vector<int64_t> want = stage_channels(plan, j, width);
    for (size_t i = 0; i < m; ++i) {
      const int64_t have = channels(compute[i][j]);
      if (have != want[i]) {
        throw InputError(where + ": P[" + std::to_string(i + 1) + "][" + std::to_string(j + 1) + "] = " +
                         number_text(plan.p[i][j]) + " gives stage " + std::to_string(i + 1) + " " +
                         std::to_string(want[i]) + " of layer " + std::to_string(j + 1) + "'s " +
                         std::to_string(width) + " channels, but the model's stage has " + std::to_string(have));
      }
    }
  }
  // Reuse: layer j+1 (or the exit, j = n) of stage i reads stage k's layer j iff I[k][j] (k < i).
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j <= n; ++j) {
      const ComputeInputs in = compute_inputs(graph, graph.node(compute[i][j]));
      if (j == 0 && (!in.reads_input || !in.producers.empty())) {
        throw InputError(where + ": the model's stage " + std::to_string(i + 1) +
                         " layer 1 does not read the network input alone; not a width-partitioned stage");
      }
      for (size_t k = 0; j > 0 && k < m; ++k) {
        const bool reads = in.producers.count(compute[k][j - 1]) != 0;
        const bool expected = k == i || (k < i && plan.reuse[k][j - 1] == 1);
        if (reads == expected) continue;
        const std::string reader = j == n ? "exit classifier" : "layer " + std::to_string(j + 1);
        if (k >= i) {
          throw InputError(where + ": the model's stage " + std::to_string(i + 1) + " " + reader +
                           (reads ? " reads stage " + std::to_string(k + 1) + "'s" : " does not read its own") +
                           " layer " + std::to_string(j) + " features; not a width-partitioned stage");
        }
        throw InputError(where + ": I[" + std::to_string(k + 1) + "][" + std::to_string(j) + "] = " +
                         std::to_string(plan.reuse[k][j - 1]) + " but the model's stage " +
                         std::to_string(i + 1) + " " + reader + (reads ? " reads" : " does not read") + " stage " +
                         std::to_string(k + 1) + "'s layer " + std::to_string(j) + " features");
      }
    }
  }
  return StageStructure{std::move(stage), std::move(compute)};
}

void assign_stage_units(Graph& graph, const StagePlan& plan, const std::string& where) {
  const size_t m = plan.stage_count();
  const std::vector<uint32_t> stage = find_stages(graph, plan, where).node_stage;

  // Rebuilt stage by stage (a stable sort by stage keeps a topological order: a node's inputs
  // are needed by its own exit, so they belong to the same or an earlier stage).
  std::vector<NodeId> order;
  for (const Node& node : graph.nodes()) order.push_back(node.id);
  std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
    const uint32_t sa = graph.node(a).op == OpType::kInput ? 0 : stage[a];
    const uint32_t sb = graph.node(b).op == OpType::kInput ? 0 : stage[b];
    return sa < sb;
  });
  GraphRebuild rebuild(graph);
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.op == OpType::kInput) {
      rebuild.copy_input(node);
      continue;
    }
    rebuild.copy_node(node, stage[id]);
  }
  Graph out = rebuild.finish();  // the rebuilt graph keeps its exits
  for (size_t i = 0; i < m; ++i) out.set_layer_name(static_cast<uint32_t>(i), "stage" + std::to_string(i + 1));
  out.validate();
  graph = std::move(out);
}

}  // namespace co_up::graph
