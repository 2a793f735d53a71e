// Workload: several networks to run at once on the processors of one platform
// (`co_up --workload=...`), read from a JSON file or from a short command-line form.
//
// JSON (the contract with `co_up plan`, docs/multi_network.md):
//   {"mode": "pipeline"|"switch", "policy": "oldest"|"priority"|"plan", "plan": ["a","b","a"],
//    "networks": [{"name", "graph" | "model", "image_size", "order", "split", "input", "frames",
//                  "rate", "priority", "batch", "replicas": ["ORDER", ...]}]}
// "plan" (optional, policy "plan"): the order in which requests of the named networks enter, one
// entry per request, repeated as a cycle; absent: one request of each network in turn.
// A file's relative "model" and "input" paths are relative to the file's folder (read_workload
// makes them absolute); the short form's to the working directory.
//
// Short form: groups separated by ';'. A network group is GRAPH[:ORDER][:key=value...], GRAPH a
// zoo name or an ONNX file (ending in .onnx); keys: name, frames, rate, priority, image_size,
// split (its UNIT:PARTS written UNIT/PARTS), input, batch, replicas (orders separated by '/'). A group of the form key=value sets
// mode, policy or plan (names separated by ','). Example:
//   resnet50:BBLL:frames=500;squeezenet:LLLL:rate=30;policy=priority
//
// Every error is an InputError naming the network and the field:
//   "workload network 'detector': order 'BBL' has 3 letters for 5 layers; give one letter per layer".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/bound_processor.h"
#include "core/executor.h"
#include "core/placement.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"

namespace co_up {

struct WorkloadNetwork {
  std::string name;   // unique, [A-Za-z0-9_-]+; defaults to the graph name (or the model's stem)
  std::string graph;  // zoo name, or
  std::string model;  // an ONNX file (exactly one of the two)
  int64_t image_size = 0;  // zoo graphs only; 0: the network's own
  std::string order;
  std::string split;
  std::string input;  // .npy; empty: the seeded synthetic input
  uint64_t frames = 100;
  std::optional<double> rate;  // requests per second, evenly spaced; absent: as fast as possible
  int priority = 0;
  uint32_t batch = 1;  // requests per frame (zoo graphs only): the graph is built for this batch
  // Run-time balancing: more orders of the same network, each run by its own executor; every
  // request runs on exactly one of `order` and these, the one whose processor looks for work
  // first (core/workload_runner.h). Each layer must use the same backend as under `order`, so that
  // every order computes the same bits.
  std::vector<std::string> replicas;

  bool operator==(const WorkloadNetwork&) const = default;
};

struct Workload {
  Mode mode = Mode::kPipeline;
  GroupPolicy policy = GroupPolicy::kOldest;
  std::vector<std::string> plan;  // network names, one per request, cycled (policy kPlan)
  // A processor keeps to the network it ran last while that one has a request ready, between
  // networks run whole on it as fast as possible (Executor::run_group's affinity).
  bool affinity = false;
  std::vector<WorkloadNetwork> networks;

  bool operator==(const Workload&) const = default;
};

// Whether every network must give its order: a run needs them; the planner reads workloads
// whose orders it is to choose.
enum class Orders { kRequired, kOptional };

// `origin` names the text in messages ("workload 'x.json'"). Throws InputError.
Workload parse_workload_json(const std::string& text, const std::string& origin,
                             Orders orders = Orders::kRequired);
Workload parse_workload_short(const std::string& text, Orders orders = Orders::kRequired);
// --workload=VALUE: a file when VALUE ends in ".json", else the short form.
Workload read_workload(const std::string& value, Orders orders = Orders::kRequired);
// The JSON text of a workload, the one writer of the format (`co_up plan --out` uses it): keys in
// the documented order, every network's name written, optional fields left out when empty.
// parse_workload_json of the text gives back an equal Workload (for one that parses).
std::string workload_json(const Workload& workload);

// Checks a network against its built graph and the machine: order length, letters the platform
// has and a plugin serves. Throws InputError naming the network and the field.
void check_workload_network(const WorkloadNetwork& network, const graph::Graph& graph,
                            const Platform& platform, const PluginRegistry& plugins);

// The plan's rank of each network's frames: rank(network, frame) is the position of that
// request in the cycled plan (policy kPlan). Network indices follow Workload::networks.
class PlanRanks {
 public:
  explicit PlanRanks(const Workload& workload);
  uint64_t rank(size_t network, uint64_t frame) const;

 private:
  uint64_t cycle_ = 0;                       // entries in one cycle of the plan
  std::vector<std::vector<uint64_t>> slots_;  // per network: its positions within one cycle
};

std::string policy_name(GroupPolicy policy);

// Places the networks of a workload with one device per processor letter, bound on first use
// and shared by every network after (their sub-graphs run on the same processor thread).
class SharedDevices {
 public:
  // Throws what Placement::create throws.
  Placement place(const graph::Graph& graph, const std::string& order, const Platform& platform,
                  const PluginRegistry& plugins);

 private:
  std::map<char, BoundProcessor> bound_;
};

}  // namespace co_up
