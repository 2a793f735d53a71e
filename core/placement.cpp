#include "core/placement.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

#include "core/affinity.h"
#include "core/error.h"
#include "profiler/events.h"

namespace co_up {
namespace {

bool touches(const SubGraph& sg, const std::set<graph::TensorId>& tensors) {
  const auto in = [&](graph::TensorId t) { return tensors.count(t) != 0; };
  return std::any_of(sg.inputs.begin(), sg.inputs.end(), in) ||
         std::any_of(sg.outputs.begin(), sg.outputs.end(), in);
}

}  // namespace

struct Placement::Impl {
  const graph::Graph& graph;
  // Declared before the processors: their spec pointers point into it.
  Platform platform;
  Partition partition;
  FallbackPlan fallback;
  std::vector<BoundProcessor> processors;
  std::set<graph::TensorId> nhwc;
  std::vector<std::unique_ptr<SubGraphDesc>> descs;
  int64_t setup_ns = 0;

  Impl(const graph::Graph& g, const Platform& p, Partition part)
      : graph(g), platform(p), partition(std::move(part)) {}

  void bind(const PluginRegistry& plugins, FallbackProbe& probe);
  void choose_nhwc(bool enabled);
  void describe_and_query(const FallbackProbe& probe);
};

void Placement::Impl::bind(const PluginRegistry& plugins, FallbackProbe& probe) {
  for (char letter : partition.processors()) {
    auto it = probe.devices.find(letter);
    if (it != probe.devices.end()) {
      processors.push_back(std::move(it->second));  // the device the fallback queried
      probe.devices.erase(it);
    } else {
      processors.push_back(bind_processor(letter, partition.order(), platform, plugins));
    }
  }
}

// Edges passed in NHWC: 4-D f32 tensors from a sub-graph to sub-graphs whose backends all hold
// activations channels-last. The graph's own inputs and outputs stay NCHW (the user writes and
// reads those), as does every edge touching a backend that does not declare NHWC.
void Placement::Impl::choose_nhwc(bool enabled) {
  if (!enabled) return;
  const auto holds_nhwc = [&](uint32_t subgraph) {
    const char letter = partition.subgraphs()[subgraph].processor;
    for (const BoundProcessor& p : processors) {
      if (p.letter == letter) {
        return (p.device->plugin().boundary_layouts() & (1u << CO_UP_LAYOUT_NHWC)) != 0;
      }
    }
    return false;
  };
  for (const Edge& edge : partition.edges()) {
    if (edge.source == kGraphInput || edge.is_graph_output || edge.destinations.empty()) continue;
    const graph::TensorDesc& desc = graph.tensor(edge.tensor).desc;
    if (desc.shape.size() != 4 || desc.dtype != graph::DataType::kF32) continue;
    if (holds_nhwc(edge.source) &&
        std::all_of(edge.destinations.begin(), edge.destinations.end(), holds_nhwc)) {
      nhwc.insert(edge.tensor);
    }
  }
}

void Placement::Impl::describe_and_query(const FallbackProbe& probe) {
  const std::vector<SubGraph>& subgraphs = partition.subgraphs();
  descs.resize(subgraphs.size());
  // One thread per sub-graph, pinned to its processor's host cores, as compilation runs: a
  // query may build the node's kernel (cpu-xnnpack), which is worth doing near its processor.
  std::vector<std::exception_ptr> errors(subgraphs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    threads.emplace_back([this, i, &errors, &subgraphs, &probe] {
      const SubGraph& sg = subgraphs[i];
      try {
        const BoundProcessor& p =
            *std::find_if(processors.begin(), processors.end(),
                          [&](const BoundProcessor& b) { return b.letter == sg.processor; });
        pin_current_thread(p.host_cores);
        descs[i] = std::make_unique<SubGraphDesc>(graph, sg, nhwc);
        const bool asked = probe.supported.count({sg.processor, sg.first_layer, sg.last_layer}) != 0 &&
                           !touches(sg, nhwc);  // the fallback asked about this very description
        if (asked || p.device->plugin().api().device_query_node == nullptr) return;
        const co_up_subgraph_desc& desc = descs[i]->get();
        for (uint32_t n = 0; n < desc.node_count; ++n) {
          const co_up_node_support support =
              p.device->query_node(desc, n, "querying " + subgraph_label(sg));
          if (!support.supported) {
            throw InputError(unsupported_node_message(graph, desc.nodes[n], *p.spec, p.backend,
                                                      support.reason));
          }
        }
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

ResolvedOrder resolve_order(const graph::Graph& graph, const std::string& order,
                            const Platform& platform, const PluginRegistry& plugins,
                            char npu_fallback) {
  ResolvedOrder resolved;
  if (npu_fallback != 0) {
    resolved.fallback =
        plan_npu_fallback(graph, order, platform, plugins, npu_fallback, resolved.probe);
  } else {
    resolved.fallback.order = order;
  }
  return resolved;
}

Placement Placement::create(const graph::Graph& graph, const std::string& order,
                            const Platform& platform, const PluginRegistry& plugins,
                            const PlacementOptions& options) {
  return create(graph, resolve_order(graph, order, platform, plugins, options.npu_fallback),
                platform, plugins, options);
}

Placement Placement::create(const graph::Graph& graph, ResolvedOrder resolved,
                            const Platform& platform, const PluginRegistry& plugins,
                            const PlacementOptions& options) {
  const int64_t start = profiler::now_ns();
  FallbackProbe& probe = resolved.probe;
  auto impl = std::make_unique<Impl>(
      graph, platform, Partition::create(graph, resolved.fallback.order, options.cuts));
  // The probe's spec pointers point into the caller's platform; rebind them to the copy.
  for (auto& [letter, bound] : probe.devices) bound.spec = impl->platform.find(letter);
  impl->fallback = std::move(resolved.fallback);
  impl->bind(plugins, probe);
  impl->choose_nhwc(options.nhwc_boundaries);
  impl->describe_and_query(probe);
  impl->setup_ns = profiler::now_ns() - start;
  return Placement(std::move(impl));
}

Placement Placement::create(const graph::Graph& graph, Partition partition,
                            const Platform& platform, const PluginRegistry& plugins,
                            const PlacementOptions& options) {
  const int64_t start = profiler::now_ns();
  auto impl = std::make_unique<Impl>(graph, platform, std::move(partition));
  impl->fallback.order = impl->partition.order();
  FallbackProbe none;
  impl->bind(plugins, none);
  impl->choose_nhwc(options.nhwc_boundaries);
  impl->describe_and_query(none);
  impl->setup_ns = profiler::now_ns() - start;
  return Placement(std::move(impl));
}

Placement::Placement(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Placement::~Placement() = default;
Placement::Placement(Placement&&) noexcept = default;
Placement& Placement::operator=(Placement&&) noexcept = default;

const graph::Graph& Placement::graph() const { return impl_->graph; }
const Partition& Placement::partition() const { return impl_->partition; }
const Platform& Placement::platform() const { return impl_->platform; }
const std::vector<BoundProcessor>& Placement::processors() const { return impl_->processors; }
const BoundProcessor& Placement::processor(char letter) const {
  for (const BoundProcessor& p : impl_->processors) {
    if (p.letter == letter) return p;
  }
  throw std::out_of_range("placement has no processor '" + std::string(1, letter) + "'");
}
const SubGraphDesc& Placement::desc(uint32_t index) const { return *impl_->descs.at(index); }
const std::set<graph::TensorId>& Placement::nhwc_tensors() const { return impl_->nhwc; }
const FallbackPlan& Placement::fallback() const { return impl_->fallback; }
int64_t Placement::setup_ns() const { return impl_->setup_ns; }

}  // namespace co_up
