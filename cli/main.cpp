// co_up: the command-line front end. Parses options, builds the network, partitions it by
// --order, sets the sub-graphs up on their processors' plugins, runs, reports.
//
// Errors end as one line on stderr: exit 2 for bad usage or input, 1 for runtime failures,
// 128+signal when interrupted (after writing the profile).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "api/session_setup.h"
#include "cli/run_inference.h"
#include "cli/accuracy_report.h"
#include "cli/crash_handler.h"
#include "cli/export_partitions.h"
#include "cli/labelled_inputs.h"
#include "cli/layer_profiler.h"
#include "cli/options.h"
#include "cli/plan_command.h"
#include "cli/profile_command.h"
#include "cli/standard_streams.h"
#include "cli/stop_signal.h"
#include "cli/workload_command.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/placement.h"
#include "core/io/output_file.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "core/signal_dispositions.h"
#include "graph/image.h"
#include "graph/npy.h"
#include "graph/onnx/preprocess.h"
#include "graph/parallel_regions.h"
#include "graph/zoo/zoo.h"
#include "power/dvfs_journal.h"
#include "power/dvfs_schedule.h"
#include "power/dvfs_worker.h"
#include "power/external_meter.h"
#include "power/frequency_plan.h"
#include "power/gpio_tagger.h"
#include "power/power_sampler.h"
#include "power/sysfs_dvfs.h"
#include "profiler/power_trace.h"
#include "profiler/report.h"

namespace co_up::cli {
namespace {

constexpr const char* kVersion = "0.1.0";

void list_layers(const graph::Graph& g, bool constants) {
  if (constants) {
    for (const graph::Tensor& t : g.tensors()) {
      if (t.is_constant) std::cout << t.name << " " << t.desc.shape_string() << "\n";
    }
    return;
  }
  int64_t total = 0;
  const std::vector<graph::LayerSummary> layers = graph::summarize_layers(g);
  int name_width = 22;  // wider when a name (an ONNX node path) would run into the ops
  for (const graph::LayerSummary& l : layers) name_width = std::max(name_width, static_cast<int>(l.name.size()) + 2);
  for (const graph::LayerSummary& l : layers) {
    std::cout << std::setw(3) << l.index << "  " << std::left << std::setw(name_width) << l.name
              << std::setw(48) << l.ops << ' ' << std::setw(18) << l.output_shape << std::right
              << std::fixed << std::setprecision(1) << static_cast<double>(l.macs) / 1e6
              << " MMACs\n";
    total += l.macs;
  }
  std::cout << g.layer_count() << " layers, " << std::fixed << std::setprecision(3)
            << static_cast<double>(total) / 1e9 << " GMACs\n";
}

void list_plugins(const PluginRegistry& registry) {
  std::cout << "plugins in " << registry.directory().string() << ":\n";
  if (registry.records().empty()) std::cout << "  (no .so files)\n";
  for (const PluginRecord& r : registry.records()) {
    // A backend name of 16 characters or more still gets a space before the file name.
    std::cout << "  " << std::left << std::setw(9) << outcome_name(r.outcome) << std::setw(15)
              << (r.backend.empty() ? "-" : r.backend) << ' ' << r.path.filename().string();
    if (!r.version.empty()) std::cout << " v" << r.version;
    if (!r.description.empty()) std::cout << " — " << r.description;
    if (!r.reason.empty()) std::cout << "\n            reason: " << r.reason;
    if (!r.restored_signals.empty()) {
      std::cout << "\n            note: loading it changed the handling of "
                << signal_names(r.restored_signals) << "; co_up restored its own";
    }
    std::cout << "\n";
  }
}

void list_devices(const Platform& platform, const PluginRegistry& registry) {
  std::cout << "platform " << platform.name;
  if (!platform.description.empty()) std::cout << " (" << platform.description << ")";
  std::cout << "\n";
  for (const ProcessorSpec& p : platform.processors) {
    const std::shared_ptr<const Plugin> plugin = find_backend_plugin(p, registry);
    const std::string backend = plugin ? plugin->name() : "none available";
    std::cout << "  " << p.letter << "  " << std::left << std::setw(28) << p.name << std::setw(5)
              << p.kind << " backend " << std::setw(16) << backend;
    if (p.is_cpu()) {
      std::cout << "cores ";
      for (size_t i = 0; i < p.cores.size(); ++i) std::cout << (i ? "," : "") << p.cores[i];
      std::cout << ", threads " << p.threads;
    } else {
      std::cout << "host " << p.host;
    }
    std::cout << "\n";
    // An accelerator's plugin describes what its driver sees (the opencl plugin: every OpenCL
    // platform and device the ICD loader lists), so the core links no vendor API.
    for (const PluginRecord& r : registry.records()) {
      if (!p.is_cpu() && r.backend == backend && !r.description.empty()) {
        std::cout << "       " << r.description << "\n";
      }
    }
  }
}

void list_frequencies(const Platform& platform) {
  std::cout << "platform " << platform.name
            << ": DVFS levels (--frequency takes the level number, 1 = lowest)\n";
  bool any = false;
  for (const ProcessorSpec& p : platform.processors) {
    std::cout << "  " << p.letter << "  " << p.name;
    if (!p.dvfs.present()) {
      std::cout << (p.is_cpu() ? ": no DVFS table\n" : "")
                << (!p.is_cpu() && p.kind != "gpu" ? std::string(": runs at its host's level (") +
                                                         p.host + ")\n"
                                                   : std::string())
                << (p.kind == "gpu" ? ": no DVFS table\n" : "");
      continue;
    }
    any = true;
    std::cout << " (" << p.dvfs.driver << " ";
    for (size_t i = 0; i < p.dvfs.nodes.size(); ++i) std::cout << (i ? "," : "") << p.dvfs.nodes[i];
    std::cout << ")";
    if (p.dvfs.default_level >= 0) std::cout << ", default level " << p.dvfs.default_level + 1;
    std::string others = platform.dvfs_domain(p.letter);
    others.erase(std::remove(others.begin(), others.end(), p.letter), others.end());
    if (!others.empty()) {
      std::cout << ", one DVFS domain with";
      for (size_t i = 0; i < others.size(); ++i) std::cout << (i ? ", " : " ") << others[i];
      std::cout << " (shared " << p.dvfs.driver << " node: a level set for one is set for all)";
    }
    std::cout << "\n";
    for (size_t i = 0; i < p.dvfs.frequencies_khz.size(); ++i) {
      std::cout << "     " << std::setw(2) << i + 1 << "  " << std::setw(5)
                << (p.dvfs.frequencies_khz[i] + 500) / 1000 << " MHz";
      if (!p.dvfs.voltages_mv.empty()) std::cout << "  " << p.dvfs.voltages_mv[i] << " mV";
      std::cout << "\n";
    }
  }
  if (!any) std::cout << "  (no DVFS tables: no cpufreq under the sysfs root, or none in the platform file)\n";
}

// Power-model points at each processor's current (else default, else highest) level.
std::vector<profiler::PowerModelPoint> model_points(const Platform& platform,
                                                    const power::SysfsDvfs& dvfs) {
  std::vector<profiler::PowerModelPoint> points;
  for (const ProcessorSpec& p : platform.processors) {
    const ProcessorSpec* clocked = p.dvfs.present() ? &p : platform.find(p.host);
    if (!p.power_model.present || clocked == nullptr || !clocked->dvfs.present()) continue;
    const DvfsSpec& d = clocked->dvfs;
    int level = dvfs.level(clocked->letter);
    if (level < 0) level = d.default_level >= 0 ? d.default_level : d.max_level();
    profiler::PowerModelPoint m;
    m.processor = p.letter;
    m.alpha = p.power_model.alpha;
    m.beta = p.power_model.beta;
    m.ghz = static_cast<double>(d.frequencies_khz[static_cast<size_t>(level)]) / 1e6;
    m.volts = d.voltages_mv.empty() ? 1.0 : d.voltages_mv[static_cast<size_t>(level)] / 1000.0;
    points.push_back(m);
  }
  return points;
}

// The files a run writes, checked before anything is set up (core/io/output_file.h): a path that
// cannot be written fails now, not after the frames, and nothing existing is touched until the
// run's results replace it.
struct RunOutputs {
  std::optional<io::OutputFile> profile, trace, power_csv, output;
};

RunOutputs check_outputs(const Options& o) {
  RunOutputs outputs;
  struct Named {
    std::optional<io::OutputFile>& slot;
    const std::string& path;
    const char* flag;
  };
  const Named named[] = {{outputs.profile, o.profile_out, "--profile-out"},
                         {outputs.trace, o.trace_out, "--trace-out"},
                         {outputs.power_csv, o.power_csv, "--power-csv"},
                         {outputs.output, o.output, "--output"}};
  for (size_t i = 0; i < std::size(named); ++i) {
    if (named[i].path.empty()) continue;
    named[i].slot = io::OutputFile::check(named[i].path, named[i].flag);
    for (size_t k = 0; k < i; ++k) {
      const std::optional<io::OutputFile>& other = named[k].slot;
      if (!other || other->is_device()) continue;  // two outputs may share /dev/null
      std::error_code ec;
      if (other->target() == named[i].slot->target() ||
          std::filesystem::equivalent(other->target(), named[i].slot->target(), ec)) {
        throw InputError(std::string(named[i].flag) + " and " + named[k].flag + " both name '" +
                         named[i].path + "'; give each output its own file");
      }
    }
  }
  return outputs;
}

std::vector<std::vector<float>> load_input(const Options& o, const graph::Graph& g) {
  if (!o.input.empty() && !o.image.empty()) {
    throw InputError("--input and --image both given; use one");
  }
  if (!o.preprocess.empty() && o.image.empty()) {
    throw InputError("--preprocess applies to --image; give the image too");
  }
  const graph::TensorDesc& desc = g.tensor(g.inputs().at(0)).desc;
  if (!o.image.empty() && desc.shape.size() != 4) {
    throw InputError("--image needs an NCHW input, but " + g.name() + " takes " + desc.shape_string());
  }
  if (!o.input.empty()) {
    graph::NpyArray array = graph::read_npy(o.input);
    if (array.shape != desc.shape) {
      graph::TensorDesc got;
      got.shape = array.shape;
      throw InputError("--input '" + o.input + "' has shape " + got.shape_string() + " but " +
                       g.name() + " needs " + desc.shape_string());
    }
    return {std::move(array.data)};
  }
  if (!o.image.empty()) {
    const graph::ZooEntry* entry = graph::find_zoo_entry(o.graph);
    graph::ImagePreprocess pre;
    pre.width = static_cast<int>(desc.shape.at(3));
    pre.height = static_cast<int>(desc.shape.at(2));
    if (entry != nullptr) {
      pre.bgr = entry->bgr;
      pre.mean = {entry->mean[0], entry->mean[1], entry->mean[2]};
      pre.std = {entry->std[0], entry->std[1], entry->std[2]};
    }
    if (!o.preprocess.empty()) pre = graph::read_preprocess_json(o.preprocess, pre);
    std::vector<float> image = graph::load_image_nchw(o.image, pre);
    const auto batch = static_cast<size_t>(desc.shape.at(0));
    std::vector<float> input;
    for (size_t b = 0; b < batch; ++b) input.insert(input.end(), image.begin(), image.end());
    return {std::move(input)};
  }
  return seeded_inputs(g, o.seed);
}

// --labels, one per class of the network's output: fewer would name the wrong classes or none.
std::vector<std::string> read_class_labels(const std::string& path, const graph::TensorDesc& scores) {
  if (path.empty()) return {};
  std::vector<std::string> labels = graph::read_labels(path);
  const int64_t classes = scores.shape.empty() ? 1 : scores.shape.back();
  if (static_cast<int64_t>(labels.size()) < classes) {
    throw InputError("--labels '" + path + "' has " + std::to_string(labels.size()) +
                     " labels but the network scores " + std::to_string(classes) +
                     " classes; give one label per class, line i naming class i");
  }
  return labels;
}

void print_top5(const std::vector<std::string>& labels, const std::vector<float>& scores) {
  std::cout << "top-5 of the last frame:\n";
  for (const graph::Prediction& p : graph::top_k(scores, 5)) {
    std::cout << "  " << std::fixed << std::setprecision(4) << p.score << "  [" << p.index << "] "
              << (static_cast<size_t>(p.index) < labels.size() ? labels[p.index] : "") << "\n";
  }
}

// Where this run keeps its DVFS journal; empty (no journal) only when no rule gives a directory.
std::filesystem::path journal_dir(const Options& o) { return power::resolve_state_dir(o.state_dir); }

// One warning when journals of dead runs for this sysfs root are waiting for --restore-dvfs.
void warn_about_dead_journals(const Options& o) {
  try {
    const std::string warning = power::dead_journal_warning(
        power::scan_journals(journal_dir(o), o.sysfs_root), o.sysfs_root, o.state_dir);
    if (!warning.empty()) std::cerr << "co_up: warning: " << warning << "\n";
  } catch (const std::exception&) {  // a warning never stops a run
  }
}

// co_up --restore-dvfs: writes back what the journals of dead runs saved, reporting each write.
int restore_dvfs(const Options& o) {
  const std::filesystem::path dir = journal_dir(o);
  if (dir.empty()) {
    throw InputError("no state directory for DVFS journals (no HOME); give the one the run used "
                     "with --state-dir=DIR or CO_UP_STATE_DIR");
  }
  const power::JournalScan scan = power::scan_journals(dir, o.sysfs_root);
  for (const std::string& why : scan.unreadable) std::cerr << "co_up: warning: skipping " << why << "\n";
  std::string failure;
  size_t restored = 0;
  for (const power::Journal& j : scan.dead) {
    std::cout << "restoring DVFS left by co_up pid " << j.pid << " (journal " << j.file.string() << "):\n";
    size_t failed = 0;
    for (const power::SysfsWrite& w : power::restore_journal(j)) {
      std::cout << "  " << w.path << " <- " << w.value << (w.ok ? "" : "  (failed)") << "\n";
      if (!w.ok && failure.empty()) failure = w.error;
      failed += w.ok ? 0 : 1;
      restored += w.ok ? 1 : 0;
    }
    std::cout << (failed == 0 ? "  done; journal removed\n" : "  incomplete; journal kept\n");
  }
  if (!failure.empty()) {
    throw RuntimeError(failure + " (journals of incomplete restores are kept; run as root and "
                                 "try co_up --restore-dvfs again)");
  }
  if (!scan.live.empty()) {
    const power::Journal& j = scan.live.front();
    throw RuntimeError("the DVFS journal " + j.file.string() + " belongs to co_up pid " +
                       std::to_string(j.pid) + ", which is still running and restores its own " +
                       "levels when it ends; not touched (stop that run first)");
  }
  if (scan.dead.empty()) {
    std::cout << "no DVFS journal of a dead co_up run for sysfs root " << power::canonical_root(o.sysfs_root)
              << " in " << dir.string() << "; nothing to restore";
    if (scan.other_roots > 0) {
      std::cout << " (" << scan.other_roots << " journal(s) of other sysfs roots there: pass their --sysfs-root)";
    }
    std::cout << "\n";
  } else {
    std::cout << "restored " << restored << " value(s)\n";
  }
  return 0;
}

int run(const Options& o, StopSignal& stop) {
  if (o.help) {
    std::cout << usage();
    return 0;
  }
  if (o.version) {
    std::cout << "co_up " << kVersion << " (plugin ABI " << CO_UP_ABI_VERSION_MAJOR << "."
              << CO_UP_ABI_VERSION_MINOR << ")\n";
    return 0;
  }
  if (o.restore_dvfs) return restore_dvfs(o);
  if (o.command == "profile") return run_profile_command(o, stop);
  if (o.command == "plan") return run_plan_command(o, stop);
  if (o.command == "run" && !o.workload.empty()) return run_workload_command(o, stop);
  if (o.command != "run") {
    throw InputError("'co_up " + o.command +
                     "' is not available in this version yet; run co_up --help for what is");
  }
  const RunOutputs outputs = check_outputs(o);

  // Plugins, platform, setup DVFS and the Executor are opened as the library's Session opens
  // them (api/session_setup.h); the command line adds what only it has (listings, fallback,
  // power and GPIO observers, the int8 report, output files).
  const std::filesystem::path plugin_dir = api::plugin_directory(o.plugins);
  Platform platform = api::open_platform(
      o.platform, o.sysfs_root,
      {o.threads, o.cores, o.threads_little, o.cores_little, o.host_gpu, o.host_npu, o.split_cluster});

  if (o.list_plugins || o.list_devices) {
    const PluginRegistry registry = PluginRegistry::load_directory(plugin_dir);
    if (o.list_plugins) list_plugins(registry);
    if (o.list_devices) list_devices(platform, registry);
    return 0;
  }
  if (o.list_frequencies) {
    list_frequencies(platform);
    return 0;
  }
  if (o.graph.empty() && o.model.empty()) {
    throw InputError("no network given (use --graph=NAME or --model=FILE.onnx; see --help)");
  }

  NetworkSpec spec{o.graph, o.units, o.image_size, o.seed, o.data};
  spec.split = o.split;
  spec.stages = o.stages;
  spec.stage_plan_file = o.stage_plan;
  spec.model = o.model;
  spec.input_shape = o.input_shape;
  spec.exits_file = o.exits;
  const graph::Graph g = build_network(spec);
  if (o.list_layers || o.list_constants) {
    list_layers(g, o.list_constants);
    return 0;
  }
  if (o.list_regions) {
    const std::vector<graph::ParallelRegion> regions = graph::find_parallel_regions(g);
    for (const std::string& line : graph::describe_parallel_regions(g, regions)) std::cout << line << "\n";
    std::cout << regions.size() << " parallel regions\n";
    return 0;
  }
  if (!o.export_partitions.empty()) {  // the step before the vendor's converter: no run
    return run_export_partitions(g, o.order.empty() ? std::string(g.layer_count(), 'B') : o.order,
                                 platform, o.export_partitions, std::cout);
  }

  const PluginRegistry registry = PluginRegistry::load_directory(plugin_dir);
  // Layers on npu-int8 run their first --calibration frames in f32 (a device option).
  prepare_calibration(platform, registry, static_cast<int>(o.calibration));
  // --order with --npu_fallback's moves (printed on stderr); the run's devices are bound later,
  // after the DVFS levels are set.
  ResolvedOrder resolved = resolve_order(
      g, o.order.empty() ? std::string(g.layer_count(), 'B') : o.order, platform, registry,
      o.npu_fallback);
  for (const std::string& line : resolved.fallback.report) std::cerr << "co_up: " << line << "\n";
  const std::string order = resolved.fallback.order;
  const Partition partition = Partition::create(g, order);
  std::string subgraph_letters;
  for (const SubGraph& sg : partition.subgraphs()) subgraph_letters += sg.processor;
  const power::FrequencyPlan frequency_plan =
      power::parse_frequency(o.frequency, order, subgraph_letters);
  ExecutorOptions exec_options;
  exec_options.mode = parse_mode(o.mode);
  const power::DvfsPolicy dvfs_policy = power::parse_dvfs_policy(o.dvfs);
  bool warned_dvfs = false;
  auto warn_dvfs = [&warned_dvfs](const std::string& message) {
    if (warned_dvfs) return;  // best-effort warns once
    warned_dvfs = true;
    std::cerr << "co_up: warning: " << message << "\n";
  };
  std::vector<uint32_t> subgraph_of_layer;
  for (uint32_t l = 0; l < order.size(); ++l) subgraph_of_layer.push_back(partition.subgraph_of_layer(l));
  const power::DvfsSchedule schedule = power::resolve_schedule(
      frequency_plan, platform, order, subgraph_of_layer,
      exec_options.mode == Mode::kPipeline, dvfs_policy, warn_dvfs);
  const auto gpio_layers = power::parse_layer_filter(o.gpio_tags);
  if (!o.gpio_tags.empty() && !platform.gpio.present()) {
    throw InputError("--gpio-tags is set but platform '" + platform.name +
                     "' has no \"gpio\" section (chip and lines)");
  }
  const power::ExternalMeterOptions meter_options{o.meter, o.meter_log, o.meter_window};
  const bool use_meter = !o.meter.empty() || !o.meter_log.empty();
  if (use_meter) power::ExternalMeter::validate(meter_options, !o.gpio_tags.empty());
  exec_options.receiver_buffers = o.buffers;
  exec_options.profile_level = o.profile;
  if (!o.exit.empty()) exec_options.exit_policy = ExitPolicy::parse(o.exit);
  check_cores_exist(platform);
  RunRequest request;
  request.frames = static_cast<uint64_t>(o.frames);
  // A labelled input set: frame f reads input f % N (load_input refuses the option mixes).
  std::optional<InputSets> batch;
  if (o.image.empty() && o.preprocess.empty()) batch = read_input_batch(o.input, g);
  if (batch) {
    request.input_sets = std::move(*batch);
  } else {
    request.input_sets.push_back(load_input(o, g));
  }
  if (!o.input_scale.empty()) {
    if (o.input.empty()) throw InputError("--input-scale scales --input=FILE.npy; give --input");
    scale_inputs(request.input_sets, parse_input_scale(o.input_scale));
  }
  // Fail on unreadable inputs now, not after a long run (outputs were checked at the start).
  const uint32_t result_index = result_output(g);  // a multi-exit network answers with its last
  const graph::TensorDesc& out_desc = g.tensor(g.outputs().at(result_index)).desc;
  const bool npy_labels = is_npy_labels(o.labels);
  const std::vector<std::string> labels =
      npy_labels ? std::vector<std::string>{} : read_class_labels(o.labels, out_desc);
  std::optional<LabelCheck> label_check;
  if (npy_labels) {
    const int64_t classes = out_desc.shape.empty() ? 1 : out_desc.shape.back();
    label_check.emplace(read_npy_labels(o.labels, request.input_sets.size(), classes), result_index);
  }

  // Power side. Declaration order is destruction order in reverse: the executor goes
  // first, then the observers it calls, the DVFS worker, and last the SysfsDvfs that restores the
  // governors — on every path out of this function, exceptions included.
  power::SysfsDvfs dvfs(platform, o.sysfs_root, journal_dir(o));
  const std::vector<profiler::DvfsEvent> setup_dvfs =
      api::apply_setup_levels(dvfs, platform, schedule, dvfs_policy, warn_dvfs);
  std::function<void()> stop_run;  // set once the executor exists
  std::mutex stop_run_mutex;
  std::unique_ptr<power::DvfsWorker> dvfs_worker;
  std::unique_ptr<power::DvfsObserver> dvfs_observer;
  if (!schedule.per_layer.empty()) {
    dvfs_worker = std::make_unique<power::DvfsWorker>(dvfs, [&](const std::string& error) {
      if (dvfs_policy == power::DvfsPolicy::kStrict) {
        std::lock_guard lock(stop_run_mutex);
        if (stop_run) stop_run();
      } else {
        warn_dvfs(error + "; continuing (--dvfs=best-effort)");
      }
    });
    dvfs_observer = std::make_unique<power::DvfsObserver>(schedule.per_layer, *dvfs_worker);
    exec_options.observers.push_back(dvfs_observer.get());
  }
  std::unique_ptr<power::GpiodTagSink> gpio_sink;
  std::unique_ptr<power::ExternalMeter> meter;  // records the tags the tagger sets: outlives it
  std::unique_ptr<power::GpioTagger> gpio_tagger;
  if (!o.gpio_tags.empty()) {
    gpio_sink = std::make_unique<power::GpiodTagSink>(platform.gpio);
    if (use_meter) meter = std::make_unique<power::ExternalMeter>(meter_options, true, *gpio_sink);
    gpio_tagger = std::make_unique<power::GpioTagger>(meter ? meter->sink() : *gpio_sink, platform.gpio, gpio_layers);
    exec_options.observers.push_back(gpio_tagger.get());
  }
  std::unique_ptr<power::LayerSpanRecorder> span_recorder;
  std::unique_ptr<power::PowerSampler> sampler;
  if (o.power) {
    span_recorder = std::make_unique<power::LayerSpanRecorder>();
    exec_options.observers.push_back(span_recorder.get());
    sampler = std::make_unique<power::PowerSampler>(platform.sensors, o.sysfs_root, o.power_rate);
  }

  // The order bound to this machine: devices, node queries (kept from the fallback where it asked).
  Placement placement = Placement::create(g, std::move(resolved), platform, registry);
  // Layers on npu-int8: distinct inputs, int8-vs-f32 report after the run.
  const AccuracyReport int8_accuracy(placement, registry, o, request);
  if (label_check) {  // after the int8 report's recorder, which it calls on
    request.on_output = [&label_check, recorder = request.on_output](
                            uint64_t frame, uint32_t output, std::span<const float> values) {
      if (recorder) recorder(frame, output, values);
      label_check->on_output(frame, output, values);
    };
  }
  const std::unique_ptr<Executor> executor = api::open_executor(std::move(placement), exec_options);
  {
    std::lock_guard lock(stop_run_mutex);
    stop_run = [&executor] { executor->request_stop(); };
  }
  if (sampler) sampler->start();
  if (meter) meter->start();
  // A signal during setup was recorded; on_stop then requests the stop at once and run()
  // returns without frames, so the report and the profile still say what happened.
  stop.on_stop([&executor] { executor->request_stop(); });
  RunResult result;
  try {
    result = executor->run(request);
  } catch (...) {
    stop.on_stop(nullptr);
    throw;
  }
  stop.on_stop(nullptr);
  if (label_check) result.profile.frame_correct = label_check->correct(result.profile.frames_completed);
  if (sampler) sampler->stop();
  result.profile.dvfs = setup_dvfs;
  if (dvfs_worker) {
    dvfs_worker->stop();
    for (profiler::DvfsEvent& e : dvfs_worker->records()) result.profile.dvfs.push_back(std::move(e));
    if (dvfs_policy == power::DvfsPolicy::kStrict && !dvfs_worker->error().empty()) {
      if (outputs.profile) profiler::write_json(*outputs.profile, result.profile);
      throw RuntimeError(dvfs_worker->error() + " during the run (run as root or use --dvfs=best-effort)");
    }
  }

  profiler::print_report(std::cout, result.profile);
  if (!result.profile.interrupted) int8_accuracy.print(std::cout, result);
  if (o.power) {
    const std::vector<profiler::LayerSpan> spans = span_recorder->spans();
    const std::vector<profiler::LayerPower> layer_power =
        profiler::summarize_layer_power(spans, sampler->samples(), model_points(platform, dvfs));
    if (sampler->samples().count() == 0 && model_points(platform, dvfs).empty()) {
      std::cout << "power: platform '" << platform.name
                << "' has neither sensors nor a power model; times only\n";
    }
    profiler::print_power_report(std::cout, layer_power);
    profiler::PowerSummary summary;
    summary.source = sampler->samples().count() > 0 ? "sensors" : "estimated";
    summary.layers = layer_power;
    result.profile.power.push_back(std::move(summary));  // the profile JSON's "power"
    const profiler::PowerSamples meter_samples =
        meter ? power::report_meter(*meter, spans, std::cout, std::cerr, result.profile.power) : profiler::PowerSamples{};
    if (outputs.power_csv) profiler::write_power_csv(*outputs.power_csv, sampler->samples());
    if (outputs.trace) {
      profiler::write_chrome_trace(*outputs.trace, spans, sampler->samples(), result.profile.dvfs, layer_power,
                                   meter_samples);
    }
  }
  if (outputs.profile) profiler::write_json(*outputs.profile, result.profile);
  if (result.profile.frames_completed > 0) {
    const std::vector<float>& answer = result.last_outputs.at(result_index);
    if (outputs.output) graph::write_npy(*outputs.output, out_desc.shape, answer);
    if ((!o.labels.empty() && !npy_labels) || !o.image.empty()) print_top5(labels, answer);
  }
  if (result.profile.interrupted) {
    std::cerr << "co_up: interrupted after " << result.profile.frames_completed << " of "
              << result.profile.frames_requested << " frames; profile written\n";
    return 128 + (stop.signal_number() != 0 ? stop.signal_number() : SIGINT);
  }
  return 0;
}

}  // namespace

int run_inference(const Options& o, StopSignal& stop) { return run(o, stop); }

}  // namespace co_up::cli

namespace {

// The outcome of one command: its exit code, or a one-line error and the code it maps to.
int run_command(int argc, char** argv, co_up::cli::StopSignal& stop) {
  using namespace co_up;
  try {
    const cli::Options options =
        cli::parse_options(std::vector<std::string>(argv + 1, argv + argc));
    if (!options.restore_dvfs) cli::warn_about_dead_journals(options);
    return cli::run(options, stop);
  } catch (const InputError& e) {
    std::cerr << "co_up: error: " << cli::one_line(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // What build_network's estimate did not foresee (backend buffers, packed weights).
    std::cerr << "co_up: failed: out of memory (this network, --image-size or --buffers need more "
                 "memory than this machine has; use a smaller --image-size)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "co_up: failed: " << cli::one_line(e.what()) << "\n";
    return 1;
  } catch (...) {
    std::cerr << "co_up: failed: unknown exception\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace co_up;
  if (!cli::hold_closed_standard_streams()) {
    std::cerr << "co_up: error: standard output is closed, and co_up prints its results there "
                 "(redirect it to a file, or to /dev/null to discard them)\n";
    return 2;
  }
  cli::StandardOutput standard_output;  // a failed write to stdout is reported after the command
  // Before any thread: threads see its state (and none misses the handlers). It also ignores
  // SIGPIPE: a reader that goes away makes writes fail with EPIPE (handled below) instead of
  // ending co_up before it restores DVFS and writes its output files.
  cli::install_crash_handler();  // one line naming the plugin, DVFS restored, then the signal
  cli::StopSignal stop;  // before other threads: every thread created later inherits the mask
  power::install_terminate_restore();  // DVFS changes are undone even on std::terminate
  const int code = run_command(argc, argv, stop);
  if (const int err = standard_output.flush(); err != 0) {
    return cli::exit_code_after_stdout_error(err, code);
  }
  return code;
}
