// co_up: the command-line front end. Parses options, builds the network, partitions it by
// --order, sets the sub-graphs up on their processors' plugins, runs, reports.
//
// Errors end as one line on stderr: exit 2 for bad usage or input, 1 for runtime failures,
// 128+signal when interrupted (after writing the profile).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <functional>
#include <memory>
#include <mutex>

#include "core/cli/accuracy_report.h"
#include "core/cli/export_partitions.h"
#include "core/cli/options.h"
#include "core/cli/plan_command.h"
#include "core/cli/profile_command.h"
#include "core/cli/stop_signal.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/fallback.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/image.h"
#include "graph/npy.h"
#include "graph/onnx/preprocess.h"
#include "graph/zoo/zoo.h"
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
    std::cout << "  " << std::left << std::setw(9) << outcome_name(r.outcome) << std::setw(16)
              << (r.backend.empty() ? "-" : r.backend) << r.path.filename().string();
    if (!r.version.empty()) std::cout << " v" << r.version;
    if (!r.description.empty()) std::cout << " — " << r.description;
    if (!r.reason.empty()) std::cout << "\n            reason: " << r.reason;
    std::cout << "\n";
  }
}

void list_devices(const Platform& platform, const PluginRegistry& registry) {
  std::cout << "platform " << platform.name;
  if (!platform.description.empty()) std::cout << " (" << platform.description << ")";
  std::cout << "\n";
  for (const ProcessorSpec& p : platform.processors) {
    std::string backend = "none available";
    for (const std::string& b : p.backends) {
      if (registry.find(b)) {
        backend = b;
        break;
      }
    }
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

// The order to run: --order, with --npu_fallback's moves (printed on stderr) applied.
std::string resolve_order(const graph::Graph& g, const std::string& order, const Platform& platform,
                          const PluginRegistry& registry, const Options& o) {
  if (o.npu_fallback == 0) return order;
  const FallbackPlan plan = plan_npu_fallback(g, order, platform, registry, o.npu_fallback);
  for (const std::string& line : plan.report) std::cerr << "co_up: " << line << "\n";
  return plan.order;
}

void print_top5(const std::vector<std::string>& labels, const std::vector<float>& scores) {
  std::cout << "top-5 of the last frame:\n";
  for (const graph::Prediction& p : graph::top_k(scores, 5)) {
    std::cout << "  " << std::fixed << std::setprecision(4) << p.score << "  [" << p.index << "] "
              << (static_cast<size_t>(p.index) < labels.size() ? labels[p.index] : "") << "\n";
  }
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
  if (o.command == "profile") return run_profile_command(o, stop);
  if (o.command == "plan") return run_plan_command(o);
  if (o.command != "run") {
    throw InputError("'co_up " + o.command +
                     "' is not available in this version yet; run co_up --help for what is");
  }

  const std::filesystem::path plugin_dir =
      o.plugins.empty() ? PluginRegistry::default_directory() : std::filesystem::path(o.plugins);
  if (!o.plugins.empty() && !std::filesystem::is_directory(plugin_dir)) {
    throw InputError("--plugins='" + o.plugins + "' is not a directory");
  }
  Platform platform = o.platform.empty() ? detect_host_platform(o.sysfs_root)
                                         : load_platform(o.platform);
  apply_overrides(platform, {o.threads, o.cores, o.threads_little, o.cores_little, o.host_gpu,
                             o.host_npu});

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
  spec.model = o.model;
  spec.input_shape = o.input_shape;
  const graph::Graph g = build_network(spec);
  if (o.list_layers || o.list_constants) {
    list_layers(g, o.list_constants);
    return 0;
  }
  if (!o.export_partitions.empty()) {  // the step before the vendor's converter: no run
    return run_export_partitions(g, o.order.empty() ? std::string(g.layer_count(), 'B') : o.order,
                                 platform, o.export_partitions, std::cout);
  }

  const PluginRegistry registry = PluginRegistry::load_directory(plugin_dir);
  const std::string order = resolve_order(
      g, o.order.empty() ? std::string(g.layer_count(), 'B') : o.order, platform, registry, o);
  Partition partition = Partition::create(g, order);
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
      exec_options.mode == ExecutionMode::kPipeline, dvfs_policy, warn_dvfs);
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
  check_cores_exist(platform);
  RunRequest request;
  request.frames = static_cast<uint64_t>(o.frames);
  request.input_sets.push_back(load_input(o, g));
  // Layers on npu-int8: calibration frames, distinct inputs, int8-vs-f32 report after the run.
  const AccuracyReport int8_accuracy(g, order, platform, registry, o, request);
  // Fail on unreadable or unwritable paths now, not after a long run.
  const std::vector<std::string> labels =
      o.labels.empty() ? std::vector<std::string>{} : graph::read_labels(o.labels);
  const graph::TensorDesc& out_desc = g.tensor(g.outputs().at(0)).desc;
  if (!o.output.empty()) {
    graph::write_npy(o.output, out_desc.shape, std::vector<float>(out_desc.element_count()));
  }
  if (!o.profile_out.empty()) profiler::write_json(o.profile_out, profiler::RunProfile{});

  if (!o.power_csv.empty()) profiler::write_power_csv(o.power_csv, profiler::PowerSamples{});

  // Power side (issue 7). Declaration order is destruction order in reverse: the executor goes
  // first, then the observers it calls, the DVFS worker, and last the SysfsDvfs that restores the
  // governors — on every path out of this function, exceptions included.
  power::SysfsDvfs dvfs(platform, o.sysfs_root);
  std::vector<profiler::DvfsEvent> setup_dvfs;
  for (const power::DvfsSetting& s : schedule.at_setup) {
    profiler::DvfsEvent e{s.domain, s.level, platform.find(s.domain)->dvfs.frequencies_khz.at(static_cast<size_t>(s.level)),
                          UINT32_MAX, 0, profiler::now_ns(), 0, false, {}};
    e.error = dvfs.set_level(s.domain, s.level);
    e.apply_ns = e.error.empty() ? profiler::now_ns() : 0;
    if (!e.error.empty()) {
      if (dvfs_policy == power::DvfsPolicy::kStrict) {
        throw RuntimeError(e.error + " (run as root or use --dvfs=best-effort)");
      }
      warn_dvfs(e.error + "; continuing without it (--dvfs=best-effort)");
    }
    setup_dvfs.push_back(std::move(e));
  }
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

  Executor executor(g, std::move(partition), platform, registry, exec_options);
  {
    std::lock_guard lock(stop_run_mutex);
    stop_run = [&executor] { executor.request_stop(); };
  }
  if (sampler) sampler->start();
  if (meter) meter->start();
  // A signal during setup was recorded; on_stop then requests the stop at once and run()
  // returns without frames, so the report and the profile still say what happened.
  stop.on_stop([&executor] { executor.request_stop(); });
  RunResult result;
  try {
    result = executor.run(request);
  } catch (...) {
    stop.on_stop(nullptr);
    throw;
  }
  stop.on_stop(nullptr);
  if (sampler) sampler->stop();
  result.profile.dvfs = setup_dvfs;
  if (dvfs_worker) {
    dvfs_worker->stop();
    for (profiler::DvfsEvent& e : dvfs_worker->records()) result.profile.dvfs.push_back(std::move(e));
    if (dvfs_policy == power::DvfsPolicy::kStrict && !dvfs_worker->error().empty()) {
      if (!o.profile_out.empty()) profiler::write_json(o.profile_out, result.profile);
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
    if (!o.power_csv.empty()) profiler::write_power_csv(o.power_csv, sampler->samples());
    if (!o.trace_out.empty()) {
      profiler::write_chrome_trace(o.trace_out, spans, sampler->samples(), result.profile.dvfs, layer_power,
                                   meter_samples);
    }
  }
  if (!o.profile_out.empty()) profiler::write_json(o.profile_out, result.profile);
  if (result.profile.frames_completed > 0) {
    if (!o.output.empty()) graph::write_npy(o.output, out_desc.shape, result.last_outputs.at(0));
    if (!o.labels.empty() || !o.image.empty()) print_top5(labels, result.last_outputs.at(0));
  }
  if (result.profile.interrupted) {
    std::cerr << "co_up: interrupted after " << result.profile.frames_completed << " of "
              << result.profile.frames_requested << " frames; profile written\n";
    return 128 + (stop.signal_number() != 0 ? stop.signal_number() : SIGINT);
  }
  return 0;
}

}  // namespace
}  // namespace co_up::cli

int main(int argc, char** argv) {
  using namespace co_up;
  cli::StopSignal stop;  // first: every thread created later inherits the blocked signals
  power::install_terminate_restore();  // DVFS changes are undone even on std::terminate
  try {
    const cli::Options options =
        cli::parse_options(std::vector<std::string>(argv + 1, argv + argc));
    return cli::run(options, stop);
  } catch (const InputError& e) {
    std::cerr << "co_up: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // What build_network's estimate did not foresee (backend buffers, packed weights).
    std::cerr << "co_up: failed: out of memory (this network, --image-size or --buffers need more "
                 "memory than this machine has; use a smaller --image-size)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "co_up: failed: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "co_up: failed: unknown exception\n";
    return 1;
  }
}
