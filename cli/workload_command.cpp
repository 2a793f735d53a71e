#include "cli/workload_command.h"

#include <csignal>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "api/session_setup.h"
#include "core/error.h"
#include "core/io/output_file.h"
#include "core/network.h"
#include "core/workload.h"
#include "core/workload_runner.h"
#include "graph/npy.h"
#include "power/dvfs_journal.h"
#include "power/dvfs_schedule.h"
#include "power/frequency_plan.h"
#include "power/sysfs_dvfs.h"
#include "profiler/workload_report.h"

namespace co_up::cli {
namespace {

// Options that describe one network, or features a workload run does not have yet.
void refuse_single_network_options(const Options& o) {
  const Options defaults;
  const struct {
    bool given;
    const char* flag;
  } checks[] = {
      {!o.graph.empty(), "--graph"},          {!o.model.empty(), "--model"},
      {!o.order.empty(), "--order"},          {!o.split.empty(), "--split"},
      {!o.input.empty(), "--input"},          {!o.output.empty(), "--output"},
      {!o.image.empty(), "--image"},          {!o.labels.empty(), "--labels"},
      {o.frames != defaults.frames, "--n"},   {o.mode != defaults.mode, "--mode"},
      {o.image_size != 0, "--image-size"},    {!o.input_shape.empty(), "--input-shape"},
      {!o.gpio_tags.empty(), "--gpio-tags"},
      {!o.meter.empty(), "--meter"},          {!o.meter_log.empty(), "--meter-log"},
      {!o.power_csv.empty(), "--power-csv"},  {o.power && o.trace_out.empty(), "--power"},
      {o.npu_fallback != 0, "--npu_fallback"}, {!o.export_partitions.empty(), "--export-partitions"},
      {o.list_layers || o.list_constants, "--list-layers"},
  };
  for (const auto& c : checks) {
    if (c.given) {
      throw InputError(std::string(c.flag) +
                       " cannot be combined with --workload (give each network's settings in the "
                       "workload; see README \"Several networks at once\")");
    }
  }
}

// One input set per request: the seeded input (a batched graph's: one set per batch slot), or the
// file's, shaped as one request.
std::vector<std::vector<std::vector<float>>> network_inputs(const WorkloadNetwork& n,
                                                            const graph::Graph& g, uint64_t seed) {
  if (n.input.empty()) {
    const std::vector<std::vector<float>> batched = seeded_inputs(g, seed);
    std::vector<std::vector<std::vector<float>>> sets(n.batch);
    for (const std::vector<float>& values : batched) {
      const size_t each = values.size() / n.batch;
      for (uint32_t j = 0; j < n.batch; ++j) {
        sets[j].emplace_back(values.begin() + static_cast<std::ptrdiff_t>(j * each),
                             values.begin() + static_cast<std::ptrdiff_t>((j + 1) * each));
      }
    }
    return sets;
  }
  graph::TensorDesc desc = g.tensor(g.inputs().at(0)).desc;
  desc.shape.at(0) /= n.batch;  // one request
  graph::NpyArray array;
  try {
    array = graph::read_npy(n.input);
  } catch (const InputError& e) {
    throw InputError("workload network '" + n.name + "': input: " + e.what());
  }
  if (g.inputs().size() != 1 || array.shape != desc.shape) {
    graph::TensorDesc got;
    got.shape = array.shape;
    throw InputError("workload network '" + n.name + "': input '" + n.input + "' has shape " +
                     got.shape_string() + " but " + g.name() + " needs " + desc.shape_string());
  }
  return {{std::move(array.data)}};
}

// --frequency with a workload: levels for the whole run only (min, max, {{l-b-g}}); a level per
// layer or per sub-graph belongs to one network's order, and several networks share a processor.
power::DvfsSchedule workload_frequencies(const Options& o, const Platform& platform, power::DvfsPolicy policy,
                                         const std::function<void(const std::string&)>& warn) {
  const bool whole_run = o.frequency == "min" || o.frequency == "max" || o.frequency.rfind("{{", 0) == 0;
  if (!whole_run) {
    throw InputError("--frequency='" + o.frequency +
                     "' with --workload: give levels for the whole run (min, max or {{l-b-g}}); per-layer and "
                     "per-sub-graph levels belong to one network's order");
  }
  const power::FrequencyPlan plan = power::parse_frequency(o.frequency, "", "");
  return power::resolve_schedule(plan, platform, "", {}, true, policy, warn);
}

}  // namespace

WorkloadRun run_workload(const Options& o, const Workload& workload, StopSignal* stop) {
  const Platform platform = api::open_platform(
      o.platform, o.sysfs_root,
      {o.threads, o.cores, o.threads_little, o.cores_little, o.host_gpu, o.host_npu});
  const PluginRegistry registry = PluginRegistry::load_directory(api::plugin_directory(o.plugins));
  check_cores_exist(platform);

  // Graphs first, all checked, before any device is bound: a bad network fails fast.
  std::vector<std::unique_ptr<graph::Graph>> graphs;  // outlive the executors (declared before)
  std::vector<std::vector<std::vector<std::vector<float>>>> inputs;  // per network, per request set
  for (const WorkloadNetwork& n : workload.networks) {
    NetworkSpec spec{n.graph, o.units, n.image_size, o.seed, o.data};
    spec.split = n.split;
    spec.model = n.model;
    spec.batch = n.batch;
    try {
      graphs.push_back(std::make_unique<graph::Graph>(build_network(spec)));
    } catch (const InputError& e) {
      throw InputError("workload network '" + n.name + "': " + (n.model.empty() ? "graph" : "model") +
                       ": " + e.what());
    }
    check_workload_network(n, *graphs.back(), platform, registry);
    inputs.push_back(network_inputs(n, *graphs.back(), o.seed));
  }

  // Whole-run DVFS levels, set before any device is bound. `dvfs` restores the governors when it
  // goes: declared before the executors, it is destroyed after them, on every path out.
  const power::DvfsPolicy dvfs_policy = power::parse_dvfs_policy(o.dvfs);
  bool warned_dvfs = false;
  const auto warn_dvfs = [&warned_dvfs](const std::string& message) {
    if (warned_dvfs) return;  // best-effort warns once
    warned_dvfs = true;
    std::cerr << "co_up: warning: " << message << "\n";
  };
  std::optional<power::SysfsDvfs> dvfs;
  std::vector<profiler::DvfsEvent> setup_dvfs;
  if (!o.frequency.empty()) {
    const power::DvfsSchedule schedule = workload_frequencies(o, platform, dvfs_policy, warn_dvfs);
    dvfs.emplace(platform, o.sysfs_root, power::resolve_state_dir(o.state_dir));
    setup_dvfs = api::apply_setup_levels(*dvfs, platform, schedule, dvfs_policy, warn_dvfs);
  }

  ExecutorOptions options;
  options.mode = workload.mode;
  options.receiver_buffers = o.buffers;
  options.profile_level = std::max(o.profile, 1);  // sub-graph events: utilisation, bubbles, trace
  SharedDevices devices;
  const std::shared_ptr<ExecutorShare> share = make_executor_share();
  std::vector<std::unique_ptr<Executor>> executors;
  const PlanRanks ranks(workload);
  std::vector<WorkloadStreamSpec> specs;
  for (size_t i = 0; i < workload.networks.size(); ++i) {
    const WorkloadNetwork& n = workload.networks[i];
    executors.push_back(std::make_unique<Executor>(
        devices.place(*graphs[i], n.order, platform, registry), options, share));
    WorkloadStreamSpec s;
    s.executor = executors.back().get();
    s.frames = n.frames;
    s.rate = n.rate;
    s.priority = n.priority;
    s.batch = n.batch;
    s.input_sets = inputs[i];
    s.plan_rank = [&ranks, i](uint64_t frame) { return ranks.rank(i, frame); };
    for (const std::string& replica : n.replicas) {
      executors.push_back(std::make_unique<Executor>(
          devices.place(*graphs[i], replica, platform, registry), options, share));
      s.replicas.push_back(executors.back().get());
    }
    specs.push_back(std::move(s));
  }
  WorkloadRunner runner(std::move(specs), workload.policy, workload.affinity);
  if (stop != nullptr) stop->on_stop([&runner] { runner.request_stop(); });
  WorkloadRunResult result;
  try {
    result = runner.run();
  } catch (...) {
    if (stop != nullptr) stop->on_stop(nullptr);
    throw;
  }
  if (stop != nullptr) stop->on_stop(nullptr);

  WorkloadRun run;
  profiler::WorkloadProfile& profile = run.profile;
  profile.mode = mode_name(workload.mode);
  profile.policy = policy_name(workload.policy);
  profile.affinity = workload.affinity;
  profile.platform = platform.name;
  profile.start_ns = result.start_ns;
  profile.dvfs = std::move(setup_dvfs);
  for (size_t i = 0; i < workload.networks.size(); ++i) {
    const WorkloadNetwork& n = workload.networks[i];
    WorkloadStreamResult& r = result.streams[i];
    run.interrupted = run.interrupted || r.run.profile.interrupted;
    run.completed += r.end_ns.size();
    run.requested += n.frames;
    profile.networks.push_back(
        {n.name, std::move(r.run.profile), std::move(r.arrival_ns), std::move(r.end_ns), n.rate,
         n.priority, n.frames, n.batch});
  }
  return run;
}

int run_workload_command(const Options& o, StopSignal& stop) {
  refuse_single_network_options(o);
  const Workload workload = read_workload(o.workload);
  std::optional<io::OutputFile> profile_out, trace_out;
  if (!o.profile_out.empty()) profile_out = io::OutputFile::check(o.profile_out, "--profile-out");
  if (!o.trace_out.empty()) trace_out = io::OutputFile::check(o.trace_out, "--trace-out");

  const WorkloadRun run = run_workload(o, workload, &stop);
  const profiler::WorkloadProfile& profile = run.profile;
  profiler::print_workload_report(std::cout, profile);
  if (profile_out) profiler::write_workload_json(*profile_out, profile);
  if (trace_out) profiler::write_workload_trace(*trace_out, profile);
  if (run.interrupted) {
    std::cerr << "co_up: interrupted after " << run.completed << " of " << run.requested
              << " requests; profile written\n";
    return 128 + (stop.signal_number() != 0 ? stop.signal_number() : SIGINT);
  }
  return 0;
}

}  // namespace co_up::cli
