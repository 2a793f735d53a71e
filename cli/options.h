// Command-line options of `co_up` (names as the paper's Table 2 and ARCHITECTURE.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/platform.h"

namespace co_up::cli {

struct Options {
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
  std::vector<int64_t> input_shape;  // --input-shape=N,C,H,W for --model (empty: the model's)
  std::string order;         // empty: every layer on B
  std::string mode = "pipeline";
  int64_t frames = 10;       // --n
  std::string units = "layers";  // --units=layers|ops
  std::string split;             // --split=UNIT:PARTS[,...] (NetworkSpec::split)
  std::string stages;            // --stages=P:...;I:... (NetworkSpec::stages, graph/stage_plan.h)
  std::string stage_plan;        // --stage-plan=FILE.json (NetworkSpec::stage_plan_file)
  int64_t image_size = 0;    // --image-size (0: the network's own)
  uint64_t seed = 1;         // --seed for generated weights and input
  uint32_t buffers = 3;      // --buffers: receive buffers between adjacent stages

  std::optional<int> threads, cores, threads_little, cores_little;
  std::optional<char> host_gpu, host_npu;
  std::optional<ClusterSplit> split_cluster;  // --split-cluster=B:C (core/cluster_split.h)
  char npu_fallback = 0;  // --npu_fallback=B|L|G: where accelerator-declined layers go (0: fail)
  int64_t calibration = 4;  // --calibration=N: frames npu-int8 runs in f32 to calibrate int8
  std::string frequency;
  std::string dvfs = "strict";  // --dvfs=strict|best-effort
  std::string gpio_tags;        // --gpio-tags=all|0,3,5-7 (empty: no tags)
  bool power = false;           // --power: per-layer power and energy (sensors or model)
  double power_rate = 1000;     // --power-rate=HZ sensor sampling rate
  std::string power_csv;        // --power-csv=FILE per-sample trace (implies --power)
  std::string trace_out;        // --trace-out=FILE Chrome trace JSON (implies --power)
  std::string meter;            // --meter=DEVICE external meter read live (implies --power)
  std::string meter_log;        // --meter-log=FILE external meter's saved log (implies --power)
  double meter_window = 0;      // --meter-window=MS each meter sample averages this long

  int profile = 0;
  std::string profile_out;
  std::string platform;
  std::string plugins;
  std::string sysfs_root = "/sys";
  std::string state_dir;     // --state-dir: DVFS journals (power/dvfs_journal.h; empty: the default)
  bool restore_dvfs = false;  // --restore-dvfs: put back what a dead run's journals saved
  std::string data;
  std::string image;
  std::string preprocess;  // --preprocess=FILE.json for --image (graph/onnx/preprocess.h)
  std::string labels;          // class names (.txt), or a labelled input set's labels (.npy)
  std::string exit;            // --exit=SPEC early-exit policy (core/exit_policy.h); empty: none
  std::string exits;           // --exits=FILE.json a model's exits in stage order
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
  std::string stage_timing = "layers";  // --stage-timing=layers (paper Eq. 8) | stages (whole sub-graphs)
  int top = 5;                           // --top=K mappings printed

  // Several networks at once: `co_up profile|plan --workload=FILE.json` (cli/workload_*.h).
  std::string out_dir;   // plan: --out=DIR, where the planned workload files go
  int coruns = 0;        // profile: --coruns=N co-runs per processor pair (0: the command's default)
  std::string min_fps, max_latency_ms;    // plan constraints, checked by plan_command.cpp
};

// Throws InputError for unknown options, missing or malformed values.
Options parse_options(const std::vector<std::string>& args);

std::string usage();

}  // namespace co_up::cli
