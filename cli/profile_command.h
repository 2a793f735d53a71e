// `co_up profile`: measures a network's layer profile (planner/layer_profile.h) on this machine.
//
//   co_up profile --graph=G|--model=F [--units=...] [--image-size=N] --profile-out=FILE
//                 [--platform=P] [--plugins=DIR] [--repetitions=N] [--processors=BL] [--restart]
//
// Steps, in this order, each named as in the profile's "completed" list:
//   layers:BL:0    every layer on each processor (order "XXXX", switch mode), DVFS as found, the
//                  processors interleaved in rounds (cli/layer_profiler.h says why); an
//                  accelerator's layers each compiled and run alone; layers it declines are
//                  recorded as such (one note) instead of failing the profile
//   transfers:X:Y  every boundary X->Y and Y->X (two alternating orders, interleaved)
//   handoff:X:Y    the pair's hand-off per sub-graph boundary: pipeline runs with 2, 3 and 4
//                  sub-graphs on X and Y and the two alternating orders (interleaved); the
//                  hand-off fitted on the first for the chain model (planner/handoff_fit.h),
//                  the DAG model's cost per sub-graph run and delay per edge on all of them
//                  (planner/pipeline_cost_fit.h); then the switch-mode edge costs; needs
//                  the two steps above, so a v1 profile resumed gets just this step
//   layers:X:k     every layer on X at DVFS level k (1-based), for each level of X's table, when
//                  the platform has one for X and its sysfs nodes are writable (a probe sets the
//                  lowest level and restores); governors are restored after X's last level.
//   threads:X:t    every layer on X with t intra-op threads (t = 1..its cores), DVFS as found, for
//                  each CPU cluster of several cores (planner/thread_times.h); one run per count.
// The file is rewritten atomically after every step. An existing --profile-out of the same
// network (graph/model, units, image size, layer count), platform and processors is resumed:
// its completed steps are skipped and their entries kept as they are; one of something else is
// an input error (exit 2) unless --restart, which starts afresh. Ctrl-C (SIGINT; SIGTERM, SIGHUP
// and SIGQUIT alike) stops after the step in progress, keeps the file and exits 128+signal.
// Progress goes to stderr: a status line rewritten in place on a terminal, else one line per step.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/layer_profiler.h"
#include "cli/options.h"
#include "cli/stop_signal.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"
#include "planner/layer_profile.h"
#include "power/sysfs_dvfs.h"

namespace co_up::cli {

// Frames per measurement when --repetitions is not given. AlexNet on the 2-core development host
// (B and L on cpu-xnnpack): the whole profile takes about 4 s.
inline constexpr int kDefaultRepetitions = 10;
inline constexpr int kWarmupFrames = 2;
inline constexpr int kRounds = 3;

// Throws InputError (exit 2) or RuntimeError (exit 1); returns 0, or 128+signal when stopped.
int run_profile_command(const Options& options, StopSignal& stop);

struct ProfileStep {
  enum class Kind { kLayers, kTransfers, kHandoff, kThreads };
  Kind kind = Kind::kLayers;
  std::string processors;  // kLayers: measured together; kTransfers, kHandoff: the pair
  int level = 0;           // kLayers: 0 = as found, else 1-based table level
  int threads = 0;         // kThreads: the intra-op thread count

  // "layers:BL:0", "layers:B:3", "transfers:B:L", "handoff:B:L", "threads:B:2"
  std::string id() const;
  // "layers on B, L at level 0 (as found)", "layers on B at level 2 (816 MHz)", "transfers B<->L",
  // "hand-off B<->L"
  std::string describe(const planner::LayerProfile& profile) const;
};

// The steps for `profile`'s processors; DVFS levels only for the letters in `dvfs_letters`.
std::vector<ProfileStep> profile_steps(const planner::LayerProfile& profile,
                                       const std::string& dvfs_letters);

// What to measure and where to write it; the objects referred to must outlive the call.
struct ProfileJob {
  const graph::Graph* graph = nullptr;
  const Platform* platform = nullptr;
  const PluginRegistry* plugins = nullptr;
  power::SysfsDvfs* dvfs = nullptr;
  std::vector<std::vector<float>> input;  // one tensor per graph input
  // Identity of the network as the user named it (stored in the profile, checked on resume).
  std::string graph_name, model, units = "layers", split;
  int64_t image_size = 0;
  std::string processors;      // letters to profile; empty: every processor whose plugin loaded
  int repetitions = 0;         // 0: kDefaultRepetitions (or the resumed file's)
  int warmup_frames = kWarmupFrames;
  int rounds = kRounds;
  std::filesystem::path out;
  bool restart = false;
  std::function<bool()> stop_requested;  // polled between steps; may be empty
  std::ostream* log = nullptr;           // progress and notes (stderr in the CLI)
  bool terminal = false;                 // log is a terminal: rewrite one status line
  std::string no_dvfs_reason;            // why the platform has no DVFS tables, for the note
  // Processors whose backend calibrates on its first frames (npu-int8) and how many: runs that
  // use them warm up that many frames more (cli/layer_profiler.h).
  std::string calibrating;
  int calibration_frames = 0;
};

struct ProfileOutcome {
  size_t steps_total = 0;
  size_t steps_done_before = 0;  // completed in the resumed file
  size_t steps_run = 0;
  bool interrupted = false;
  std::string dvfs_letters;  // processors whose DVFS levels were (or will be) profiled
  planner::LayerProfile profile;
};

// The whole `co_up profile` minus option parsing (tests and benches call it).
ProfileOutcome profile_network(const ProfileJob& job);

// The profile's header for `job` (network, platform, processors), no measurements yet.
// Throws InputError for a requested processor the platform lacks or whose backend is missing;
// notes skipped processors (no plugin) on job.log.
planner::LayerProfile profile_skeleton(const ProfileJob& job);

}  // namespace co_up::cli
