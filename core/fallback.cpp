#include "core/fallback.h"

#include <map>
#include <utility>

#include "core/error.h"
#include "core/partition.h"
#include "core/plugin.h"
#include "core/subgraph_desc.h"

namespace co_up {
namespace {

std::string layer_label(const std::vector<graph::LayerUnit>& layers, uint32_t layer) {
  return std::to_string(layer) + " (" + (layer < layers.size() ? layers[layer].name : "?") + ")";
}

}  // namespace

bool is_accelerator(const ProcessorSpec& spec) { return spec.kind == "npu" || spec.kind == "dsp"; }

FallbackPlan plan_npu_fallback(const graph::Graph& graph, const std::string& order,
                               const Platform& platform, const PluginRegistry& registry,
                               char fallback) {
  FallbackProbe probe;
  return plan_npu_fallback(graph, order, platform, registry, fallback, probe);
}

FallbackPlan plan_npu_fallback(const graph::Graph& graph, const std::string& order,
                               const Platform& platform, const PluginRegistry& registry,
                               char fallback, FallbackProbe& probe) {
  const ProcessorSpec* target = platform.find(fallback);
  if (target == nullptr) {
    throw InputError("--npu_fallback=" + std::string(1, fallback) + ": platform '" +
                     platform.name + "' has no processor '" + std::string(1, fallback) +
                     "' (it defines " + platform.letters() + ")");
  }
  if (is_accelerator(*target)) {
    throw InputError("--npu_fallback=" + std::string(1, fallback) + " names an accelerator (" +
                     target->name + "); use a CPU or GPU letter such as B, L or G");
  }
  const std::vector<graph::LayerUnit> layers = graph.layers();
  FallbackPlan plan;
  plan.order = order;
  std::map<char, std::string> unavailable;   // accelerators without a loaded plugin: why
  std::map<uint32_t, FallbackMove> moved;    // by layer: ascending, one entry per layer
  bool any_accelerator = false;
  for (;;) {
    const Partition partition = Partition::create(graph, plan.order);
    std::map<uint32_t, FallbackMove> round;
    for (const SubGraph& sg : partition.subgraphs()) {
      const ProcessorSpec* spec = platform.find(sg.processor);
      if (spec == nullptr || !is_accelerator(*spec)) continue;  // unknown letters: the Executor's
      any_accelerator = true;
      if (probe.devices.count(sg.processor) == 0 && unavailable.count(sg.processor) == 0) {
        if (find_backend_plugin(*spec, registry)) {
          probe.devices.emplace(sg.processor, bind_processor(sg.processor, plan.order, platform,
                                                             registry, "npu fallback: "));
        } else {
          unavailable.emplace(sg.processor, "no plugin " + backend_choices(*spec) + " loaded [" +
                                                registry.summary() + "]");
        }
      }
      if (unavailable.count(sg.processor) != 0) {
        for (uint32_t l = sg.first_layer; l <= sg.last_layer; ++l) {
          round.emplace(l, FallbackMove{l, layers.at(l).name, sg.processor, "", "", "",
                                        unavailable.at(sg.processor)});
        }
        continue;
      }
      const BoundProcessor& acc = probe.devices.at(sg.processor);
      bool declined = false;
      const SubGraphDesc desc(graph, sg);
      for (uint32_t n = 0; n < desc.get().node_count; ++n) {
        const co_up_node_desc& node = desc.get().nodes[n];
        if (round.count(node.layer) != 0) continue;  // the layer moves already
        const co_up_node_support support = acc.device->query_node(
            desc.get(), n,
            "npu fallback: querying layer " + layer_label(layers, node.layer) + " on '" +
                std::string(1, sg.processor) + "' (backend '" + acc.backend + "')");
        if (support.supported) continue;
        declined = true;
        round.emplace(node.layer, FallbackMove{node.layer, layers.at(node.layer).name,
                                               sg.processor, acc.backend, node.name, node.op_type,
                                               support.reason});
      }
      if (!declined) probe.supported.emplace(sg.processor, sg.first_layer, sg.last_layer);
    }
    if (round.empty()) break;
    for (auto& [layer, move] : round) {
      plan.order[layer] = fallback;
      moved.emplace(layer, std::move(move));
    }
  }
  for (auto& [layer, move] : moved) plan.moves.push_back(std::move(move));
  if (!any_accelerator) return plan;

  std::string summary = "npu fallback: ";
  if (plan.moves.empty()) {
    summary += "every layer mapped to an accelerator is supported there";
  } else {
    summary += plan.moves.size() == 1 ? "layer " : "layers ";
    for (size_t i = 0; i < plan.moves.size(); ++i) {
      summary += (i ? ", " : "") + layer_label(layers, plan.moves[i].layer);
    }
    summary += " \u2192 " + std::string(1, fallback);
  }
  plan.report.push_back(summary + "; order " + plan.order);
  for (const FallbackMove& m : plan.moves) {
    std::string line = "  layer " + layer_label(layers, m.layer) + " left '" +
                       std::string(1, m.from) + "'";
    if (!m.node.empty()) {
      line += ": node '" + m.node + "' (" + m.op + ") on backend '" + m.backend + "': " + m.reason;
    } else {
      line += ": " + m.reason;
    }
    plan.report.push_back(std::move(line));
  }
  return plan;
}

std::string unsupported_node_message(const graph::Graph& graph, const co_up_node_desc& node,
                                     const ProcessorSpec& processor, const std::string& backend,
                                     const std::string& reason) {
  const std::vector<graph::LayerUnit> layers = graph.layers();
  std::string message = "layer " + layer_label(layers, node.layer) + " node '" + node.name +
                        "' (" + node.op_type + ") cannot run on '" +
                        std::string(1, processor.letter) + "' (backend '" + backend +
                        "'): " + reason + "; map that layer to another processor";
  if (is_accelerator(processor)) message += " or use --npu_fallback=B|L|G";
  return message;
}

}  // namespace co_up
