// The profile of a workload (`co_up profile --workload=FILE --profile-out=P.json`, read by
// `co_up plan --workload=FILE --profile=P.json`): each network's layer profile measured alone
// (planner/layer_profile.h, embedded whole), the features of its solo runs, the co-runs measured
// and the slowdown regression fitted to some of them (planner/contention_model.h), with its error
// on the others.
//
//   {"format": "co_up-workload-profile", "version": 1, "platform": "host", "processors": "BLG",
//    "networks": [{"name", "graph", "model", "image_size", "split", "weight_bytes",
//                  "activation_bytes", "macs", "profile": {<layer profile>},
//                  "batch_times": {"B": [{"batch": 1, "frame_us": 5100.0}, ...], ...}}],  (optional)
//    "contention": {<ContentionModel::to_json>} | null,
//    "coruns": [<CoRunSample>...], "held_out_coruns": [ids...],
//    "held_out_error": {"samples", "mean_abs_points", "max_abs_points", "mean_abs_time_pct"},
//    "held_out_error_pair_mean": {the same keys}}  (optional: what the features must beat)
//
// Reading throws InputError naming the file and the key.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/workload.h"
#include "planner/batch_time.h"
#include "planner/contention_model.h"
#include "planner/layer_profile.h"
#include "planner/workload_planner.h"

namespace co_up::planner {

struct WorkloadProfileNetwork {
  std::string name, graph, model, split;
  int64_t image_size = 0;
  int64_t weight_bytes = 0;      // constants of the graph
  int64_t activation_bytes = 0;  // every layer unit's output
  int64_t macs = 0;
  LayerProfile profile;
  // Per processor: whole-network frames alone at a few batch sizes (zoo graphs only: an ONNX
  // model's batch is its input shape), the points of the affine batch time.
  std::map<char, std::vector<BatchTime>> batch_times;
};

struct WorkloadProfile {
  std::string platform_name;
  std::string processors;
  std::vector<WorkloadProfileNetwork> networks;
  std::optional<ContentionModel> contention;
  std::vector<CoRunSample> coruns;
  std::vector<int> held_out_coruns;
  HeldOutError held_out_error;
  HeldOutError held_out_pair_mean;  // the same co-runs predicted by each pair's mean slowdown

  const WorkloadProfileNetwork* find(const std::string& name) const;
};

// Solo-run features of a network on a processor from its level-0 layer times; zeros when the
// processor was not measured.
ContentionFeatures features_of(const WorkloadProfileNetwork& network, char processor);

WorkloadProfile parse_workload_profile(const std::string& json_text, const std::string& origin);
WorkloadProfile read_workload_profile(const std::filesystem::path& path);
std::string workload_profile_json(const WorkloadProfile& profile);

// Scales `layer_us` (one network's layer times on one processor) so that they and `input_us` add
// up to the median of `solo_us`, that network's whole runs on that processor alone (the co-runs'
// solo frames); unchanged when there are none. Layers timed one by one add up to other than the
// whole network (ResNet-50 at 64x64: 8.3 ms against 9.0 ms run whole; MobileNetV2 1.23 against
// 1.15 ms), and the runtime runs networks whole.
void scale_to_whole_runs(std::vector<double>& layer_us, double input_us, std::vector<double> solo_us);

// The planning problem for `spec`: its networks (in its order) matched by name to the profile,
// which must have been made of the same network (graph or model, image_size, split), on the
// processors every network was measured on, layer times scaled to the network's whole solo runs
// (scale_to_whole_runs); the contention table from the regression (pairs without co-runs: 0,
// noted). Networks as fast as possible, built from a zoo graph, with "batch" 1 and batch times in
// the profile get the batch choose_batch picks (problem.batches; one note each); their costs are
// then per request (a frame's time / its batch), so the simulator schedules requests as before.
// A batch the user gave is planned the same way, except that a network with a rate, an ONNX
// model, no batch times, a batch larger than the largest profiled one or a fitted time not
// positive at its batch keeps one request's cost t(1) per request (the last two noted).
// Throws InputError naming the network and the field.
WorkloadProblem workload_problem(const WorkloadProfile& profile, const Workload& spec,
                                 std::vector<std::string>& notes);

}  // namespace co_up::planner
