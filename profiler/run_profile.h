// RunProfile: everything one run measured, independent of the runtime's types, so reports,
// the JSON writer and (later) the planner read one structure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "profiler/events.h"

namespace co_up::profiler {

struct LayerInfo {
  uint32_t index = 0;
  std::string name;
  std::string ops;  // "Conv+Relu+LRN+MaxPool"
  std::string output_shape;
  int64_t macs = 0;
  char processor = 0;
  uint32_t subgraph = 0;
};

struct SubGraphInfo {
  uint32_t index = 0;
  char processor = 0;
  std::string backend;
  uint32_t first_layer = 0;
  uint32_t last_layer = 0;
};

struct ReceiverInfo {
  std::string tensor;
  uint32_t source = 0;
  uint32_t destination = 0;
  uint64_t bytes = 0;
  uint32_t capacity = 0;
  uint32_t max_occupancy = 0;
  uint64_t transfers = 0;
  uint64_t full_stalls = 0;
  // The tensor's memory order on this edge: "NHWC" where both backends hold activations
  // channels-last and the runtime passed it so (PlacementOptions::nhwc_boundaries), else the
  // graph's ("NCHW", or "any" for tensors without spatial meaning; graph::layout_name).
  std::string layout;
  // How the tensor crosses the edge: "" copied (sender into the slot, receiver binds it);
  // "shared" written and read in one runtime buffer; "slice" written by its producer into its
  // channel slice of the Concat output that the receiver reads in place (the Concat not run).
  // See ExecutorOptions::share_boundaries.
  std::string in_place;
};

struct ProcessorInfo {
  char letter = 0;
  std::string name;
  std::string backend;
  std::string host_cores;  // "0" or "4,5"
  int threads = 0;
  // Times its thread went to sleep (blocked on the executor's wake-up) while the processor still
  // owed work to an admitted frame: each costs a wake-up (ExecutorOptions::spin_wait_in_frame_us).
  uint64_t in_frame_sleeps = 0;
};

// One DVFS request: issued on a processor thread at a layer start (or at setup),
// applied by the DVFS worker. apply_ns = 0: not applied (superseded by a newer request for the
// same processor before the worker got to it, or failed: then `error` says why).
struct DvfsEvent {
  char processor = 0;  // the DVFS domain (a CPU cluster or a GPU)
  int level = 0;       // position in the table (the JSON writes it 1-based, as users do)
  int64_t khz = 0;
  uint32_t layer = 0;  // UINT32_MAX: at setup
  uint64_t frame = 0;
  int64_t issue_ns = 0;
  int64_t apply_ns = 0;
  bool superseded = false;
  std::string error;
};

// Power and energy of one layer over a run, from one source: "sensors" (the platform's
// sensors), "estimated" (the power model, no sensor) or "meter" (an external meter's log aligned
// by the GPIO tag edges, power/meter_alignment.h).
struct LayerPower {
  uint32_t layer = 0;
  char processor = 0;
  uint64_t frames = 0;
  double time_ms = 0;    // per frame (mean)
  double power_mw = 0;   // average over the layer's spans
  double energy_mj = 0;  // per frame (mean)
  double total_energy_mj = 0;
  bool estimated = false;
  std::string source = "sensors";
  double power_stderr_mw = 0;  // meter: standard error of power_mw from the fit (0 elsewhere)
};

// One source's per-layer summary, as the profile JSON's "power" array carries it.
struct PowerSummary {
  std::string source;  // as LayerPower::source
  std::vector<LayerPower> layers;
  // Meter only: board power while no layer ran (when the run had such time), how well the per-layer
  // powers explain the samples, and how the meter's clock was mapped onto co_up's.
  std::optional<double> idle_mw;
  double fit_residual_mw = 0;
  uint64_t meter_samples_used = 0;
  struct MeterClock {
    double offset_ms = 0;  // meter time at co_up's first tag edge
    double drift_ppm = 0;  // meter clock rate relative to CLOCK_MONOTONIC, minus one
    double residual_ms = 0;       // RMS of matched edges' distance from their sample interval's middle
    double offset_uncertainty_ms = 0;  // half the stretch of offsets that the most samples agree with
    double sample_period_ms = 0;  // median spacing of the meter's samples
    double pin_agreement = 0;     // fraction of samples in the run that read the value co_up drove
    uint64_t edges_matched = 0, meter_edges = 0, host_edges = 0;
  };
  std::optional<MeterClock> meter_clock;
};

struct RunProfile {
  std::string graph;
  std::string order;
  std::string mode;
  std::string platform;
  int level = 0;
  uint64_t frames_requested = 0;
  uint64_t frames_completed = 0;
  bool interrupted = false;
  int64_t setup_ns = 0;
  // Per completed frame: when its first sub-graph started, when its last output was delivered.
  std::vector<int64_t> frame_start_ns;
  std::vector<int64_t> frame_end_ns;
  std::vector<ProcessorInfo> processors;
  std::vector<LayerInfo> layers;
  std::vector<SubGraphInfo> subgraphs;
  std::vector<ReceiverInfo> receivers;
  std::vector<Event> events;  // merged from all threads, sorted by begin time
  std::vector<DvfsEvent> dvfs;  // filled by the power manager, in issue order
  std::vector<PowerSummary> power;  // --power: one entry per source (sensors or estimate, meter)

  // Multi-exit networks (core/exit_policy.h); `exits` is empty for a static network.
  struct Exit {
    std::string name;       // the exit's graph output
    uint32_t subgraph = 0;  // the sub-graph computing it
  };
  std::vector<Exit> exits;
  std::string exit_policy;             // its canonical spec ("softmax-max>=0.9", "none")
  std::vector<uint32_t> frame_exit;    // per completed frame: the exit it took
  std::vector<uint64_t> subgraph_frames_skipped;  // per sub-graph: frames it did no work for
  // With labels (co_up --labels=FILE.npy): per completed frame, whether its result's top class is
  // the label (1) or not (0). Empty without labels.
  std::vector<uint8_t> frame_correct;
};

}  // namespace co_up::profiler
