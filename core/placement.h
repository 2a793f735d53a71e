// Placement: a mapping bound to this machine — the one place where a processor letter becomes a
// plugin, a device and its options.
//
// Built once from a graph, an order (or a Partition), a platform and the loaded plugins:
//   - npu fallback (PlacementOptions::npu_fallback): layers an accelerator declines move to
//     another processor first (core/fallback.h), reported, never silent;
//   - the partition into sub-graphs;
//   - one device per processor letter: the first backend of its platform entry whose plugin
//     loaded, with the options "processor", "cores", "threads" and the platform entry's own;
//   - which boundary tensors travel in NHWC (both sides' backends hold activations channels-last);
//   - every sub-graph's C description and the capability query of each of its nodes, once (a
//     sub-graph the fallback already found supported is not asked again).
// The Executor, `co_up profile` and the accuracy report take a Placement; nothing else binds a
// letter to a plugin.
//
// A Placement is immutable once created and movable; it owns the devices (shared with what the
// Executor compiles) and a copy of the platform. The graph must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/bound_processor.h"
#include "core/fallback.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "core/subgraph_desc.h"
#include "graph/graph.h"

namespace co_up {

struct PlacementOptions {
  // --npu_fallback: the processor that takes the layers an accelerator declines; 0: none (a
  // declined node is then an InputError naming it).
  char npu_fallback = 0;
  SubGraphCuts cuts = SubGraphCuts::kWhereLetterChanges;
  // Pass 4-D f32 tensors between two sub-graphs whose backends both hold activations in NHWC
  // (co_up_plugin_api.boundary_layouts) in that layout, so neither side transposes. False: NCHW
  // at every boundary (to measure what the negotiation saves).
  bool nhwc_boundaries = true;
};

// The order a run will use, --npu_fallback applied, before any device of the run is bound: a
// run sets its DVFS levels between the two (device setup may take long, and a signal then must
// find the levels in the journal). The accelerator devices the fallback queried are kept for the
// Placement, with what they answered.
struct ResolvedOrder {
  FallbackPlan fallback;  // fallback.order: the order to run; report empty without the option
  FallbackProbe probe;
};
// npu_fallback 0: the order as given. Throws what plan_npu_fallback throws.
ResolvedOrder resolve_order(const graph::Graph& graph, const std::string& order,
                            const Platform& platform, const PluginRegistry& plugins,
                            char npu_fallback);

class Placement {
 public:
  // Throws InputError (order not fitting the graph, unknown letter, missing plugin, a node a
  // processor declines, bad --npu_fallback letter) or RuntimeError (a plugin call failed).
  static Placement create(const graph::Graph& graph, const std::string& order,
                          const Platform& platform, const PluginRegistry& plugins,
                          const PlacementOptions& options = {});
  // The same in two steps: `resolved` from resolve_order() with the same platform and plugins;
  // options.npu_fallback is not used.
  static Placement create(const graph::Graph& graph, ResolvedOrder resolved,
                          const Platform& platform, const PluginRegistry& plugins,
                          const PlacementOptions& options = {});
  // The same for a partition made elsewhere; options.npu_fallback and options.cuts are not used.
  static Placement create(const graph::Graph& graph, Partition partition, const Platform& platform,
                          const PluginRegistry& plugins, const PlacementOptions& options = {});
  ~Placement();
  Placement(Placement&&) noexcept;
  Placement& operator=(Placement&&) noexcept;
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  const graph::Graph& graph() const;
  const Partition& partition() const;
  const std::string& order() const { return partition().order(); }
  const Platform& platform() const;
  // In order of first appearance in the order string.
  const std::vector<BoundProcessor>& processors() const;
  // Throws std::out_of_range for a letter the placement does not use.
  const BoundProcessor& processor(char letter) const;
  // The C description of sub-graph `index` as its backend compiles it (NHWC edges applied).
  const SubGraphDesc& desc(uint32_t index) const;
  // Boundary tensors passed in NHWC.
  const std::set<graph::TensorId>& nhwc_tensors() const;
  // What --npu_fallback moved and the lines to report (empty without the option).
  const FallbackPlan& fallback() const;
  // Time spent binding devices and querying nodes, ns (part of a run's setup time).
  int64_t setup_ns() const;

 private:
  struct Impl;
  explicit Placement(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace co_up
