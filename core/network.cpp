#include "core/network.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include "core/error.h"
#include "core/io/input_file.h"
#include "core/json_input.h"
#include "graph/builder.h"
#include "graph/onnx/layer_units.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/passes.h"
#include "graph/pool_through_concat.h"
#include "graph/stage_plan.h"
#include "graph/zoo/zoo.h"

namespace co_up {
namespace {

// "5:3,2:2" -> {{5, 3}, {2, 2}}, checked; applied from the highest unit down, so that every
// index means the unit --list-layers shows without --split.
void apply_splits(graph::Graph& g, const std::string& split) {
  if (split.empty()) return;
  std::vector<std::pair<uint32_t, int>> splits;
  size_t at = 0;
  while (at <= split.size()) {
    const size_t comma = std::min(split.find(',', at), split.size());
    const std::string item = split.substr(at, comma - at);
    const size_t colon = item.find(':');
    auto number = [&](const std::string& s) -> long {
      if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) {
        throw InputError("--split='" + split + "': '" + item + "' is not LAYER:PARTS (e.g. --split=5:3 splits layer 5 "
                         "into 3 parts by output channel)");
      }
      return std::stol(s);
    };
    if (colon == std::string::npos) number("");
    const long unit = number(item.substr(0, colon)), parts = number(item.substr(colon + 1));
    for (const auto& [u, p] : splits) {
      if (u == unit) throw InputError("--split='" + split + "' names layer " + std::to_string(unit) + " twice");
    }
    splits.emplace_back(static_cast<uint32_t>(unit), static_cast<int>(parts));
    at = comma + 1;
  }
  std::sort(splits.begin(), splits.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [unit, parts] : splits) graph::split_output_channels(g, unit, parts);
}

std::string bytes_text(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return std::to_string(bytes) + " bytes (" + text + ")";
}

std::string network_text(const NetworkSpec& spec) {
  return "network " + spec.name +
         (spec.image_size != 0 ? " at --image-size=" + std::to_string(spec.image_size) : std::string());
}

// Counts the bytes of every constant before the wrapped source allocates it, and refuses the one
// that would take the total beyond what the machine has: a clear error instead of bad_alloc (or
// the OOM killer) half way through building.
class BudgetedWeights final : public graph::WeightSource {
 public:
  BudgetedWeights(graph::WeightSource& inner, uint64_t budget, std::string what)
      : inner_(inner), budget_(budget), what_(std::move(what)) {}
  std::vector<float> load(const std::string& name, const graph::TensorDesc& desc,
                          graph::ConstantRole role, int64_t fan_in) override {
    const uint64_t bytes = static_cast<uint64_t>(desc.element_count()) * sizeof(float);
    total_ += bytes;
    if (total_ > budget_) {
      throw InputError(what_ + " needs at least " + bytes_text(total_) + " of memory for its weights (" +
                       name + " " + desc.shape_string() + " alone: " + bytes_text(bytes) +
                       "), more than the " + bytes_text(budget_) +
                       " available; use a smaller --image-size");
    }
    return inner_.load(name, desc, role, fan_in);
  }

 private:
  graph::WeightSource& inner_;
  uint64_t budget_;
  std::string what_;
  uint64_t total_ = 0;
};

// Weights plus the peak of activations alive at once (a tensor lives from its producer to its
// last reader, in node order), against `budget`, before the runtime allocates its buffers. A
// lower bound: backends add workspaces and receivers add slots (bad_alloc then still ends in one
// line, from main).
void check_fits(const graph::Graph& g, const std::string& what, uint64_t budget, const std::string& advice) {
  uint64_t weight_bytes = 0;
  std::vector<size_t> last_use(g.tensors().size(), 0);
  const size_t end = g.nodes().size();
  for (const graph::Tensor& t : g.tensors()) {
    if (t.is_constant) weight_bytes += t.desc.byte_size();
  }
  for (size_t k = 0; k < g.nodes().size(); ++k) {
    for (graph::TensorId t : g.nodes()[k].inputs) {
      if (t != graph::kNoTensor) last_use[t] = std::max(last_use[t], k);
    }
  }
  for (graph::TensorId t : g.outputs()) last_use[t] = end;
  std::vector<uint64_t> freed(end + 1, 0);
  uint64_t live = 0, peak = 0;
  for (size_t k = 0; k < g.nodes().size(); ++k) {
    for (graph::TensorId t : g.nodes()[k].outputs) {
      if (g.tensor(t).is_constant) continue;
      live += g.tensor(t).desc.byte_size();
      freed[std::max(last_use[t], k)] += g.tensor(t).desc.byte_size();
    }
    peak = std::max(peak, live);
    live -= freed[k];
  }
  if (weight_bytes + peak > budget) {
    throw InputError(what + " needs at least " + bytes_text(weight_bytes + peak) +
                     " of memory (weights " + bytes_text(weight_bytes) + ", activations alive at once " +
                     bytes_text(peak) + "), more than the " + bytes_text(budget) + " available; " + advice);
  }
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t available = UINT64_MAX;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) {
      available = static_cast<uint64_t>(kib) * 1024;
      break;
    }
  }
  if (available == UINT64_MAX) {
    const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) available = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  }
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      available = std::min<uint64_t>(available, limit.rlim_cur);
    }
  }
  return available;
}

namespace {

// The exits list of a model: --exits=FILE, else <model>.exits.json beside it; empty when neither.
void read_exits_file(const NetworkSpec& spec, graph::OnnxImportOptions& options) {
  std::string path = spec.exits_file;
  if (path.empty()) {
    std::error_code ec;
    const std::string beside = spec.model + ".exits.json";
    if (!std::filesystem::exists(beside, ec)) return;
    path = beside;
  }
  const std::string origin = "exits file '" + path + "'";
  const nlohmann::json j = parse_json(io::read_input_file(path, "exits file", io::kMaxConfigBytes), origin);
  const auto exits = j.is_object() ? j.find("exits") : j.end();
  if (!j.is_object() || exits == j.end() || !exits->is_array() || exits->size() < 2) {
    throw InputError(origin + " needs {\"exits\": [\"name\", ...]}: the model's outputs in stage "
                     "order, at least two, the final exit last");
  }
  for (size_t i = 0; i < exits->size(); ++i) {
    if (!(*exits)[i].is_string()) {
      throw InputError(origin + ": " + json_index("\"exits\"", i) + " = " + json_shown((*exits)[i]) +
                       " is not an output name (a string)");
    }
    options.exits.push_back((*exits)[i].get<std::string>());
  }
  options.exits_origin = origin;
}

// --stages / --stage-plan: the model's stages as its layer units (graph/stage_plan.h).
void apply_stage_plan(graph::Graph& g, const NetworkSpec& spec) {
  if (!spec.stages.empty() && !spec.stage_plan_file.empty()) {
    throw InputError("--stages and --stage-plan both given; use one");
  }
  if (spec.units != "layers" || !spec.split.empty()) {
    throw InputError("--stages/--stage-plan make each stage one layer unit; drop --units and --split");
  }
  const bool inline_plan = !spec.stages.empty();
  const graph::StagePlan plan = inline_plan ? graph::parse_stage_plan(spec.stages)
                                            : graph::read_stage_plan_file(spec.stage_plan_file);
  graph::assign_stage_units(g, plan, inline_plan ? "--stages" : "stage plan '" + spec.stage_plan_file + "'");
}

}  // namespace

graph::Graph build_network(const NetworkSpec& spec) {
  if (!spec.exits_file.empty() && spec.model.empty()) {
    throw InputError("--exits applies to --model (a zoo network has no exits)");
  }
  if (spec.units != "layers" && spec.units != "ops" && spec.units != "branches") {
    throw InputError("unknown --units='" + spec.units + "' (use layers, ops or branches)");
  }
  if (!spec.model.empty()) {
    if (!spec.name.empty()) throw InputError("give either --graph or --model, not both");
    if (!spec.data_dir.empty()) {
      throw InputError("--data applies to --graph; an ONNX model carries its own weights");
    }
    if (spec.image_size != 0) {
      throw InputError("--image-size applies to --graph; use --input-shape=N,C,H,W with --model");
    }
    graph::OnnxImportOptions import_options;
    import_options.input_shape = spec.input_shape;
    read_exits_file(spec, import_options);
    graph::Graph g = graph::import_onnx_file(spec.model, import_options);
    graph::optimize_for_inference(g);
    check_fits(g, "model '" + spec.model + "'", available_memory_bytes(),
               "use a smaller --input-shape");
    if (!spec.stages.empty() || !spec.stage_plan_file.empty()) {
      apply_stage_plan(g, spec);
    } else if (spec.units == "ops") {
      graph::assign_op_units(g);
    } else if (spec.units == "branches") {
      graph::assign_branch_units(g);
    } else {
      graph::assign_block_units(g);
    }
    graph::cut_units_after_exits(g);
    apply_splits(g, spec.split);
    graph::push_pools_through_concats(g);
  // A split's parts and its Concat: each a unit of its own, like any other branches and join.
  if (spec.units == "branches" && !spec.split.empty()) graph::assign_branch_units(g);
    g.validate();
    return g;
  }
  if (!spec.input_shape.empty()) {
    throw InputError("--input-shape applies to --model; use --image-size with --graph");
  }
  if (!spec.stages.empty() || !spec.stage_plan_file.empty()) {
    throw InputError("--stages and --stage-plan apply to --model (a multi-exit ONNX model with outputs exit0, exit1, ...)");
  }
  graph::ZooOptions options;
  options.image_size = spec.image_size;
  options.batch = spec.batch;
  const uint64_t budget = available_memory_bytes();
  graph::Graph g = [&] {
    std::unique_ptr<graph::WeightSource> source;
    if (!spec.data_dir.empty()) {
      source = std::make_unique<graph::NpyDirectoryWeights>(spec.data_dir);
    } else {
      source = std::make_unique<graph::SeededWeights>(spec.seed);
    }
    BudgetedWeights weights(*source, budget, network_text(spec));
    return graph::build_zoo_graph(spec.name, weights, options);
  }();
  graph::optimize_for_inference(g);
  check_fits(g, network_text(spec), budget, "use a smaller --image-size");
  if (spec.units == "ops") graph::assign_op_units(g);
  if (spec.units == "branches") graph::assign_branch_units(g);
  apply_splits(g, spec.split);
  // After the splits, so that a split layer's parts pool their own channels (on their processor).
  graph::push_pools_through_concats(g);
  // A split's parts and its Concat: each a unit of its own, like any other branches and join.
  if (spec.units == "branches" && !spec.split.empty()) graph::assign_branch_units(g);
  g.validate();
  return g;
}

std::vector<std::vector<float>> seeded_inputs(const graph::Graph& graph, uint64_t seed) {
  std::vector<std::vector<float>> inputs;
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
  for (graph::TensorId t : graph.inputs()) {
    std::vector<float> values(static_cast<size_t>(graph.tensor(t).desc.element_count()));
    for (float& v : values) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG (Knuth MMIX)
      v = static_cast<float>(static_cast<double>(state >> 40) / static_cast<double>(1 << 24)) * 2.0f - 1.0f;
    }
    inputs.push_back(std::move(values));
  }
  return inputs;
}

}  // namespace co_up
