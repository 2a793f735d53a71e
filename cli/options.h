// Command-line options of `co_up` (names as the paper's Table 2 and ARCHITECTURE.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/run_options.h"
#include "core/platform.h"

namespace co_up::cli {

// The run options (order, mode, platform, ...) are RunValues' (api/run_options.h), parsed from the
// one table that SessionOptions and Python use too; the rest are the command line's own.
struct Options : RunValues {
  std::string command = "run";  // "run", or a subcommand: "profile", "plan"
  bool help = false;
  bool version = false;
  bool list_layers = false;
  bool list_regions = false;  // --list-regions: fork/join regions of independent branches
  bool list_plugins = false;
  bool list_devices = false;
  bool list_frequencies = false;
  bool list_constants = false;

  std::string workload;      // --workload=FILE.json or groups (core/workload.h): several networks
  std::string graph;         // --graph=NAME (zoo)
  std::string model;         // --model=FILE.onnx (ONNX import)
  int64_t frames = 10;       // --n

  std::string power_csv;        // --power-csv=FILE per-sample trace (implies --power)
  std::string trace_out;        // --trace-out=FILE Chrome trace JSON (implies --power)

  std::string profile_out;
  bool restore_dvfs = false;  // --restore-dvfs: put back what a dead run's journals saved
  std::string image;
  std::string preprocess;  // --preprocess=FILE.json for --image (graph/onnx/preprocess.h)
  std::string labels;          // class names (.txt), or a labelled input set's labels (.npy)
  std::string input;
  std::string input_scale;     // --input-scale=F|A/B every --input value times F (labelled_inputs.h)
  std::string output;
  std::string export_partitions;  // --export-partitions=DIR: write accelerator partitions as ONNX

  // `co_up profile` and `co_up plan --verify` (cli/profile_command.h, verify_mappings.h).
  int repetitions = 0;     // --repetitions=N frames per measurement (0: the command's default)
  std::string processors;  // --processors=BL: profile only these (default: every available one)
  bool restart = false;    // --restart: ignore an existing --profile-out instead of resuming
  bool verify = false;     // --verify: run the planned mappings and print predicted vs measured

  // `co_up plan` (cli/plan_command.h). There --profile=FILE is the layer profile to plan
  // from (profile_file); for runs --profile stays the profiling level above.
  std::string profile_file;
  std::string objective;                 // --objective=throughput|latency|energy|pareto ("": throughput;
                                         // with a stage plan: latency|energy|accuracy|pareto, "": pareto)
  std::string exit_logits;  // --exit-logits=FILE.npy: every exit's validation logits (stage plans)
  std::string exit_labels;  // --exit-labels=FILE.npy: their labels
  std::string fit_orders;  // --fit-orders=ORDER,..: orders run to fit the runtime stage model
  bool fit_compute_scale = false;  // --fit-compute-scale: the default, said explicitly
  bool profiled_compute = false;   // --profiled-compute: the runtime stage model fits no compute scale
  std::string stage_timing = "layers";  // --stage-timing=layers (paper Eq. 8) | stages (whole sub-graphs)
  int top = 5;                           // --top=K mappings printed

  // Several networks at once: `co_up profile|plan --workload=FILE.json` (cli/workload_*.h).
  std::string out_dir;   // plan: --out=DIR, where the planned workload files go
  int coruns = 0;        // profile: --coruns=N co-runs per processor pair (0: the command's default)
  std::string min_fps, max_latency_ms;    // plan constraints, checked by plan_command.cpp
  // plan --tune=SECONDS [--tune-candidates=N] [--tune-target=FPS,MS] (cli/measured_tuning.h),
  // checked by plan_command.cpp
  std::string tune, tune_candidates, tune_target;
};

// Throws InputError for unknown options, missing or malformed values.
Options parse_options(const std::vector<std::string>& args);

std::string usage();

}  // namespace co_up::cli
