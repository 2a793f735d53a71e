// Layer profile (format v2; v1 is /tmp/coord/profile_schema.md without "handoff_us"): per-layer
// times of one network on each processor and DVFS level, per-boundary transfer costs between
// processors, the fixed hand-off cost of a sub-graph boundary per processor pair, optional power.
// Written by `co_up profile`, read by `co_up plan`. Times are microseconds (medians over
// `repetitions` runs). The reader ignores unknown keys (forward compatible) and rejects missing
// required keys, wrong types, wrong lengths and unknown processor letters with an InputError
// naming the file and the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/io/output_file.h"

namespace co_up::planner {

struct ProfileLayer {
  uint32_t index = 0;
  std::string name;
  std::string ops;  // e.g. "Conv+Relu+LRN+MaxPool"
  int64_t macs = 0;
  int64_t output_bytes = 0;
};

struct ProfileNetwork {
  std::string graph;  // zoo name, "" for --model
  std::string model;  // ONNX path as given, "" for --graph
  std::string units = "layers";
  std::string split;  // --split, "" for none
  int64_t image_size = 0;
  uint32_t layer_count = 0;
  std::vector<ProfileLayer> layers;  // layer_count entries (may be empty: names unknown)
};

// P[W] = alpha V^2 U f[GHz] + beta V (core/platform.h, para-pipe eq. 8).
struct ProfilePowerModel {
  double alpha = 0;
  double beta = 0;
};

struct ProfileProcessor {
  char letter = 0;
  std::string name;
  std::string kind;      // "cpu", "gpu", "npu", "dsp"
  std::string backend;   // the plugin that ran it
  char host = 0;         // the CPU cluster hosting its thread (itself for a CPU)
  std::vector<int> host_cores;
  std::string dvfs_domain;          // letter of the processor whose clock it follows; "" = none
  std::vector<int64_t> levels_khz;  // the domain's table, ascending; level l (1-based) = [l-1]
  std::vector<int> voltages_mv;     // optional (extension of v1): one per level, for power_model
  std::optional<ProfilePowerModel> power_model;
  // Its backend takes boundary tensors in runtime memory (co_up_plugin_api.external_io): in
  // switch mode a boundary between two such processors copies nothing (ExecutorOptions::
  // share_boundaries). Optional key "in_place_boundaries"; older profiles read false.
  bool in_place_boundaries = false;
};

// Times of every layer on one processor at one level (0 = as found, else 1-based table level).
// A layer the processor cannot run (an accelerator declined one of its ops when offered the layer
// alone) has NaN times (null in the file) and an entry in `declined` with the backend's reason;
// the cost model never places it there.
struct LayerTimes {
  char processor = 0;
  int level = 0;
  std::vector<double> median_us;  // layer_count entries
  std::vector<double> mad_us;     // layer_count entries
  std::map<uint32_t, std::string> declined;  // layer -> why it cannot run on `processor`
};

// Cost of moving layer i's outputs from `from` to `to` (layer i on `from`, i+1 on `to`).
struct TransferTimes {
  char from = 0;
  char to = 0;
  std::vector<double> send_us;     // layer_count-1 entries, on the sender's thread
  std::vector<double> receive_us;  // layer_count-1 entries, on the receiver's thread
};

// Fixed cost of one sub-graph boundary between processors `a` and `b` (either direction) per
// frame, beyond the measured transfers: what a pipeline loses per extra stage to handing frames
// over (publish, wake-up, claim) and to a processor switching between stages (cold caches, idle
// gaps). Charged to both processors of each such boundary (planner/cost_model.h). Fitted by
// `co_up profile` from pipeline runs with 2, 3 and 4 sub-graphs (cli/layer_profiler.h).
// Absent (v1 profiles, or not measured yet) = 0 us.
struct HandoffTime {
  char a = 0;
  char b = 0;
  double us = 0;
};

// Layer times of a CPU processor at one intra-op thread count, DVFS as found (level 0): written by
// `co_up profile` for every cluster of several cores, at 1..its cores threads; a plan picks them
// per processor (planner/thread_times.h). Optional (absent in older profiles and for clusters of
// one core); key "thread_layer_times".
struct ThreadLayerTimes {
  char processor = 0;
  int threads = 0;
  std::vector<double> median_us;  // layer_count entries
  std::vector<double> mad_us;     // layer_count entries
};

struct PowerPoint {
  char processor = 0;
  int level = 0;
  double busy_w = 0;
  double idle_w = 0;
};

struct LayerProfile {
  ProfileNetwork network;
  std::string platform_name;
  std::vector<ProfileProcessor> processors;
  int repetitions = 0;
  std::vector<LayerTimes> layer_times;
  std::vector<TransferTimes> transfers;
  std::map<char, double> input_transfer_us;  // optional: receive side of the network input
  std::vector<HandoffTime> handoffs;         // optional (v2): one per unordered pair
  // Optional ("switch_edge_us"): in switch mode, the wake-up a processor thread pays per
  // cross-processor edge it receives from the other processor of the pair (one frame at a time,
  // so the receiver sleeps or spins between parts); measured by `co_up profile` in the hand-off
  // step from switch runs of one processor against alternating orders. Used by the DAG cost
  // model (planner/dag_cost_model.h); absent = 0 us.
  std::vector<HandoffTime> switch_edges;

  const HandoffTime* find_switch_edge(char a, char b) const;  // either order; nullptr when absent
  void set_switch_edge(char a, char b, double us);            // replaces the pair's entry
  // Optional ("switch_edge_mb_us"): in switch and overlap mode, what a sub-graph pays per
  // megabyte of a tensor it reads that the other processor of the pair wrote (us per 10^6 bytes
  // of the producing unit's output, ProfileLayer::output_bytes): the data is in the writer's
  // caches, not the reader's, and the per-layer times were measured with warm caches on one
  // processor. Fitted by `co_up profile` in the hand-off step together with switch_edges (which
  // is then the part per edge that no tensor size explains). Absent = 0.
  std::vector<HandoffTime> switch_edge_mb;
  const HandoffTime* find_switch_edge_mb(char a, char b) const;
  void set_switch_edge_mb(char a, char b, double us_per_mb);
  // Optional ("pipeline_subgraph_us", "pipeline_edge_us"), written together: in pipeline mode,
  // what the executor costs per sub-graph run on either processor of the pair (the scheduling
  // lock, the claim, the commit and the wake-up of the other thread: work of that processor's
  // thread that no layer or transfer event holds) and the delay on a cross-processor edge
  // between a frame's publishing and its reader seeing it. Fitted by `co_up profile` in the
  // hand-off step against the DAG cost model's simulation of the pair's pipeline runs
  // (planner/pipeline_cost_fit.h). Where present the DAG model takes these and not
  // `handoffs` (which stay the chain model's); absent: the DAG model delays an edge by the
  // pair's hand-off and charges nothing per sub-graph.
  std::vector<HandoffTime> pipeline_subgraphs, pipeline_edges;
  const HandoffTime* find_pipeline_subgraph(char a, char b) const;
  const HandoffTime* find_pipeline_edge(char a, char b) const;
  void set_pipeline_costs(char a, char b, double subgraph_us, double edge_us);
  // Optional ("pipeline_work_factor", a ratio; HandoffTime::us holds it): in pipeline mode, how
  // much longer the pair's layers take than their profiled times (measured one processor at a
  // time, the other idle; in a pipeline both compute at once and share the last-level cache and
  // memory bandwidth). Fitted by `co_up profile` in the hand-off step together with
  // `pipeline_subgraphs`, on the pair's pipeline runs measured absolutely. Must be positive;
  // absent (profiles before it): 1.
  std::vector<HandoffTime> pipeline_work_factors;
  const HandoffTime* find_pipeline_work_factor(char a, char b) const;
  void set_pipeline_work_factor(char a, char b, double factor);
  std::vector<PowerPoint> power_w;           // optional
  std::vector<ThreadLayerTimes> thread_times;  // optional, see ThreadLayerTimes
  std::vector<std::string> completed;        // "layers:B:0", "transfers:B:L", ...

  const ProfileProcessor* find_processor(char letter) const;
  const LayerTimes* find_layer_times(char processor, int level) const;
  const TransferTimes* find_transfer(char from, char to) const;
  const PowerPoint* find_power(char processor, int level) const;
  const HandoffTime* find_handoff(char a, char b) const;  // either order; nullptr when absent
  void set_handoff(char a, char b, double us);            // replaces the pair's entry
  bool is_completed(const std::string& step) const;
  std::string letters() const;  // processor letters in profile order
};

// Throws co_up::InputError ("profile 'FILE': key 'layer_times[2].median_us' has 7 entries,
// network.layer_count is 8") for a missing/unreadable file, bad JSON, wrong format or version,
// missing keys, wrong types or lengths, and unknown processor letters.
LayerProfile read_layer_profile(const std::filesystem::path& path);
// Same checks on JSON text; `origin` names it in messages.
LayerProfile parse_layer_profile(const std::string& json_text, const std::string& origin);

// Writes the profile through `out` (core/io/output_file.h: a regular file is replaced atomically,
// so an interrupted run leaves the previous complete file or none). Throws co_up::RuntimeError
// when the write fails.
void write_layer_profile(const io::OutputFile& out, const LayerProfile& profile);
// The same to `path`, checked first: InputError for a path that cannot be written.
void write_layer_profile(const std::filesystem::path& path, const LayerProfile& profile);
std::string layer_profile_json(const LayerProfile& profile);  // the text write_layer_profile writes

// Checks each layer unit holds the ops the profile recorded for it (`unit_ops`: the network's
// LayerSummary::ops per unit, as profiles write them), so that a profile taken before a graph pass
// changed what the units hold is refused even where the unit count stayed. Profiles without
// per-unit entries are not checked. Throws InputError naming the first unit that differs.
void check_profile_unit_ops(const LayerProfile& profile, const std::vector<std::string>& unit_ops);

// Checks the profile was taken of the network the user names: graph name, model (same path, or
// same file name when paths differ), units and layer count. Pass "" for graph/model and 0 for
// layer_count to skip that check. Throws InputError saying both sides.
void check_profile_matches(const LayerProfile& profile, const std::string& graph,
                           const std::string& model, const std::string& units,
                           uint32_t layer_count);

// Checks the processors `letters` (e.g. an order string) are all in the profile, with layer
// times measured at level 0 or some level. Throws InputError naming the missing letter.
void check_profile_has_processors(const LayerProfile& profile, const std::string& letters);

}  // namespace co_up::planner
