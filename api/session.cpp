// co_up::Session: the public API over the Executor (include/co_up/co_up.hpp).
//
// Streaming: the Session is the Executor's FrameStream. Submitted frames go into a ring of
// queue_capacity() slots (inputs moved in, outputs written by the processor threads); a driver
// thread runs Executor::run_stream() while a stream is open (it only waits there); results leave
// in submission order, to the callback or to wait_result(). The callback runs on the processor
// thread that completed the frame, right after the completion (after_frames_completed): no
// thread of the Session's own wakes per frame to compete with the pipeline for its cores. A slot
// is reused only after its frame was handed back, so the ring never overwrites a frame the
// pipeline still reads.
//
// Power: the Session owns what a run changes on the machine or observes of it, wired as the
// command line always did: DVFS levels set at open (restored by SysfsDvfs when the Session goes,
// on every path out, exceptions included), per-layer levels through the DVFS worker, GPIO tags,
// the external meter, the sensor sampler. See docs/session_power.md.
//
// Locks: the Executor calls frames_completed() under its scheduling lock, and that takes `mutex_`;
// so nothing here calls into the Executor while holding `mutex_` (executor lock, then ours).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "api/accuracy_report.h"
#include "api/session_internal.h"
#include "api/session_run.h"
#include "api/session_setup.h"
#include "profiler/events.h"
#include "core/calibration.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/message_text.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
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

namespace co_up {

uint32_t api_version() { return (kApiVersionMajor << 16) | kApiVersionMinor; }

namespace api {

[[noreturn]] void rethrow_as_error(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error&) {
    throw;
  } catch (const InputError& e) {
    throw Error(ErrorKind::kInput, one_line(e.what()));
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::kRuntime,
                "out of memory (this network, --image-size or --buffers need more memory than "
                "this machine has; use a smaller --image-size)");
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kRuntime, one_line(e.what()));
  } catch (...) {
    throw Error(ErrorKind::kRuntime, "unknown exception");
  }
}

}  // namespace api

namespace {

// The most frames the pipeline itself holds at once: along its deepest path, one frame per
// sub-graph and a full receive buffer per edge (switch mode: one frame). The default streaming
// window is twice this, so a producer that blocked on a full queue and resumes at half of it
// (Session::submit) still leaves the pipeline full: with a window at or below the depth, every
// refill let the first stage run dry for a moment.
uint32_t pipeline_depth(const Partition& partition, Mode mode, uint32_t buffers) {
  const size_t n = partition.subgraphs().size();
  if (mode == Mode::kSwitch || n == 0) return 1;
  if (mode == Mode::kOverlap) return 2;  // never more than two frames in flight
  const auto capacities = receiver_capacities(partition, std::max(buffers, 1u));
  // depth[b]: frames held from the graph input through sub-graph b (edges point to higher indices).
  std::vector<uint32_t> depth(n, 1);
  const auto& edges = partition.edges();
  for (uint32_t b = 0; b < n; ++b) {
    for (size_t e = 0; e < edges.size(); ++e) {
      if (edges[e].source == kGraphInput) continue;
      for (size_t k = 0; k < edges[e].destinations.size(); ++k) {
        if (edges[e].destinations[k] != b) continue;
        depth[b] = std::max(depth[b], depth[edges[e].source] + capacities[e][k] + 1);
      }
    }
  }
  return *std::max_element(depth.begin(), depth.end());
}

std::string shape_text(const std::vector<int64_t>& shape) { return Tensor::shape_text(shape); }

Profile to_public(const profiler::RunProfile& p) {
  Profile out;
  out.order = p.order;
  out.mode = p.mode;
  out.frames_completed = p.frames_completed;
  out.setup_ms = static_cast<double>(p.setup_ns) / 1e6;
  const profiler::Summary summary = profiler::summarize(p);
  out.wall_ms = summary.wall_ms;
  out.throughput_fps = summary.throughput_fps;
  out.latency_median_ms = summary.latency_median_ms;
  std::map<uint32_t, std::vector<double>> layer_ms, subgraph_ms;
  for (const profiler::Event& e : p.events) {
    const double ms = static_cast<double>(e.end_ns - e.begin_ns) / 1e6;
    if (e.kind == profiler::EventKind::kLayer) layer_ms[e.layer].push_back(ms);
    if (e.kind == profiler::EventKind::kSubGraph) subgraph_ms[e.subgraph].push_back(ms);
  }
  for (const profiler::LayerInfo& l : p.layers) {
    const auto it = layer_ms.find(l.index);
    out.layers.push_back({l.index, l.name, l.processor, l.subgraph,
                          it == layer_ms.end() ? 0.0 : profiler::median(it->second)});
  }
  for (const profiler::SubGraphInfo& s : p.subgraphs) {
    const auto it = subgraph_ms.find(s.index);
    out.subgraphs.push_back({s.index, s.processor, s.backend, s.first_layer, s.last_layer,
                             it == subgraph_ms.end() ? 0.0 : profiler::median(it->second)});
  }
  out.json = profiler::to_json(p).dump(2);
  return out;
}

}  // namespace

// Hidden: only Session itself is exported from libco_up.
class __attribute__((visibility("hidden"))) Session::Impl final : public FrameStream {
 public:
  Impl(NetworkSpec spec, const SessionOptions::Values& values);
  ~Impl() override;

  std::vector<Tensor> run(std::span<const TensorView> inputs);
  bool submit(std::vector<Tensor>& inputs, void* user_data, bool block);
  void set_callback(ResultCallback callback);
  Result wait_result();
  std::optional<Result> try_result(std::chrono::milliseconds timeout);
  void drain();
  size_t in_flight() const {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(submitted_ - handed_);
  }
  size_t capacity() const { return slots_.size(); }
  Profile profile() const;

  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  std::string order_;

  // FrameStream, called by the Executor.
  uint64_t admitted() const override { return admitted_.load(std::memory_order_acquire); }
  bool closed() const override { return closed_.load(std::memory_order_acquire); }
  const float* input(uint64_t frame, uint32_t input) override {
    return slot(base_ + frame).inputs[input].data();
  }
  void output(uint64_t frame, uint32_t output, std::span<const float> values) override {
    std::copy(values.begin(), values.end(), slot(base_ + frame).outputs[output].data());
  }
  void frames_completed(uint64_t completed) override {
    {
      std::lock_guard lock(mutex_);
      completed_ = base_ + completed;
    }
    // A callback's results are handed back by after_frames_completed on this same thread; only
    // a consumer of wait_result() needs waking (set_callback refuses while a stream is open).
    if (!callback_) ready_.notify_all();
  }
  void after_frames_completed() override {
    if (callback_) deliver_completed();
  }

 private:
  struct Slot {
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    void* user_data = nullptr;
  };
  Slot& slot(uint64_t frame) { return slots_[frame % slots_.size()]; }
  void check_inputs(const std::vector<Tensor>& inputs) const;
  void check_inputs(std::span<const TensorView> inputs) const;
  void start_stream();  // under mutex_
  void raise_errors(std::unique_lock<std::mutex>& lock);
  Result take(uint64_t frame);  // under mutex_
  // After handed_ grew (under mutex_): wakes producers once the queue is half empty, not for
  // every slot (fewer context switches; submit still returns as soon as that happens), and
  // drain() when everything was handed back.
  void notify_room() {
    if (submitted_ - handed_ <= slots_.size() / 2 || handed_ == submitted_) room_.notify_all();
  }
  // Hands every completed frame not yet handed back to the callback, in order, unless another
  // thread is doing so (it takes these too: it checks again under the lock before it stops).
  void deliver_completed();
  // Under --dvfs=strict, the DVFS worker's first failed write (kept for the Session's life: the
  // run it stopped cannot be trusted, nor can later ones, so every later run reports it too).
  std::optional<RuntimeError> strict_dvfs_error() const;
  void check_dvfs_after_run();
  void add_dvfs_events(profiler::RunProfile& profile);
  void warn_dvfs(const std::string& message);
  // Around every executor run: the sensor sampler runs only while frames do. Each run's power
  // data is its own (the sampler's start() begins a new series), so nothing grows over runs.
  void begin_power() {
    if (span_recorder_) span_recorder_->clear();
    if (sampler_) sampler_->start();
  }
  // After a run of the public API: DVFS events and, with power, the per-layer summary.
  void end_power(profiler::RunProfile& profile);
  // After a run that threw: the sampler stops, and the run's DVFS requests are settled and
  // their records dropped, so the next run's profile has only its own.
  void abandon_power() {
    if (sampler_) sampler_->stop();
    if (dvfs_worker_) {
      dvfs_worker_->drain();
      dvfs_worker_->take_records();
    }
  }

 public:
  // The command line's frame run and reports (api/session_run.h).
  api::FramesRun run_frames(RunRequest& request, bool inputs_fixed);
  // From any thread (a signal's, the DVFS worker's), once the Session exists: nothing can reach
  // the Impl before its constructor has set executor_.
  void request_stop() {
    if (executor_) executor_->request_stop();
  }
  void print_int8_report(std::ostream& out, const RunResult& result) const {
    if (int8_report_) int8_report_->print(out, result);
  }
  api::PowerReport report_power(std::ostream& out, std::ostream& err, profiler::RunProfile& profile);
  const graph::Graph& graph() const { return graph_; }

 private:
  std::vector<profiler::PowerModelPoint> model_points() const;
  std::vector<profiler::LayerPower> layer_power() const;

  SessionOptions::Values values_;
  std::filesystem::path plugin_dir_;  // checked first, as the command line does
  Platform platform_;
  graph::Graph graph_;
  PluginRegistry registry_;
  power::DvfsPolicy dvfs_policy_ = power::DvfsPolicy::kBestEffort;  // --dvfs, parsed at open
  std::atomic<bool> warned_dvfs_{false};  // best-effort warns once
  // Declaration order is destruction order reversed: the executor goes first, then the int8
  // report's reference, the observers it calls (sampler's recorder, GPIO tagger, DVFS observer),
  // the meter that records the tags (it outlives the tagger), the lines, the DVFS worker, and last
  // the SysfsDvfs that restores the levels.
  std::unique_ptr<power::SysfsDvfs> dvfs_;
  std::vector<profiler::DvfsEvent> setup_dvfs_;  // levels set at open, for every run's profile
  std::unique_ptr<power::DvfsWorker> dvfs_worker_;
  std::unique_ptr<power::DvfsObserver> dvfs_observer_;
  std::unique_ptr<power::GpiodTagSink> gpio_sink_;
  std::unique_ptr<power::ExternalMeter> meter_;
  std::unique_ptr<power::GpioTagger> gpio_tagger_;
  std::unique_ptr<power::LayerSpanRecorder> span_recorder_;
  std::unique_ptr<power::PowerSampler> sampler_;
  std::unique_ptr<api::AccuracyReport> int8_report_;
  std::unique_ptr<Executor> executor_;

  mutable std::mutex mutex_;
  // Two conditions, so that a completion does not wake a blocked producer nor a freed slot the
  // consumer (each needless wake-up is a context switch per frame on the pipeline's own cores):
  // ready_: completed_ grew, or an error, a finished stream, shutdown (consumers, delivery, drain
  // in queue mode); room_: handed_ grew (producers, drain in callback mode), errors, shutdown.
  std::condition_variable ready_;
  std::condition_variable room_;
  std::vector<Slot> slots_;
  // Frame numbers over the Session's life: submitted >= completed >= handed (after an error the
  // dropped frames count as completed and handed). base_: the first frame of the open stream.
  uint64_t submitted_ = 0, completed_ = 0, handed_ = 0, base_ = 0;
  std::atomic<uint64_t> admitted_{0};  // frames of the open stream the executor may run
  std::atomic<bool> closed_{false};
  bool streaming_ = false;    // a driver thread was started and not joined
  bool stream_done_ = false;  // the driver left run_stream (it only unlocks and returns after)
  std::exception_ptr stream_error_;
  std::exception_ptr callback_error_;
  ResultCallback callback_;
  bool shutting_down_ = false;
  bool delivering_ = false;  // a thread is in deliver_completed's callback loop
  std::optional<profiler::RunProfile> last_profile_;
  // Threads last: joined in the destructor before anything they use goes.
  std::thread driver_;
};

Session::Impl::Impl(NetworkSpec spec, const SessionOptions::Values& values)
    : values_(values),
      plugin_dir_(api::plugin_directory(values_.plugins)),
      platform_(api::open_platform(values_.platform, values_.sysfs_root,
                                   {values_.threads, values_.cores, values_.threads_little,
                                    values_.cores_little, values_.host_gpu, values_.host_npu,
                                    values_.split_cluster})),
      graph_(build_network(spec)) {
  // A meter implies power; decided here, from the options as they are now, so a later
  // set("power", "0") cannot leave a meter without its sampler and spans.
  values_.power = values_.power || !values_.meter.empty() || !values_.meter_log.empty();
  // The steps and their order are the command line's (its checks fail in the same order).
  registry_ = PluginRegistry::load_directory(plugin_dir_);
  // Layers on npu-int8 run their first --calibration frames in f32 (a device option).
  set_calibration_frames(platform_, registry_, static_cast<int>(values_.calibration));
  // The order with --npu_fallback's moves, one line each on stderr; devices are bound after the
  // DVFS levels are set.
  ResolvedOrder resolved = resolve_order(
      graph_, values_.order.empty() ? std::string(graph_.layer_count(), 'B') : values_.order,
      platform_, registry_, values_.npu_fallback);
  for (const std::string& line : resolved.fallback.report) std::cerr << "co_up: " << line << "\n";
  order_ = resolved.fallback.order;
  const Partition partition = Partition::create(graph_, order_);
  std::string subgraph_letters;
  for (const SubGraph& sg : partition.subgraphs()) subgraph_letters += sg.processor;
  const power::FrequencyPlan frequency_plan =
      power::parse_frequency(values_.frequency, order_, subgraph_letters);
  ExecutorOptions options;
  options.mode = parse_mode(values_.mode);
  dvfs_policy_ = power::parse_dvfs_policy(values_.dvfs);
  const power::DvfsPolicy policy = dvfs_policy_;
  auto warn = [this](const std::string& message) { warn_dvfs(message); };
  std::vector<uint32_t> subgraph_of_layer;
  for (uint32_t l = 0; l < order_.size(); ++l) subgraph_of_layer.push_back(partition.subgraph_of_layer(l));
  // Overlap mode has two frames in flight: like a pipeline, a domain keeps one level for the run.
  const power::DvfsSchedule schedule = power::resolve_schedule(
      frequency_plan, platform_, order_, subgraph_of_layer, options.mode != Mode::kSwitch, policy, warn);
  const auto gpio_layers = power::parse_layer_filter(values_.gpio_tags);
  if (!values_.gpio_tags.empty() && !platform_.gpio.present()) {
    throw InputError("--gpio-tags is set but platform '" + platform_.name +
                     "' has no \"gpio\" section (chip and lines)");
  }
  const power::ExternalMeterOptions meter_options{values_.meter, values_.meter_log, values_.meter_window};
  const bool use_meter = !values_.meter.empty() || !values_.meter_log.empty();
  if (use_meter) power::ExternalMeter::validate(meter_options, !values_.gpio_tags.empty());
  options.receiver_buffers = values_.buffers;
  options.share_boundaries = values_.share_boundaries;
  options.profile_level = values_.profile;
  if (!values_.exit.empty()) options.exit_policy = ExitPolicy::parse(values_.exit);
  check_cores_exist(platform_);

  // What changes the machine, from here on undone by the members' destructors.
  dvfs_ = std::make_unique<power::SysfsDvfs>(platform_, values_.sysfs_root,
                                             power::resolve_state_dir(values_.state_dir));
  setup_dvfs_ = api::apply_setup_levels(*dvfs_, platform_, schedule, policy, warn);
  if (!schedule.per_layer.empty()) {
    const bool strict = policy == power::DvfsPolicy::kStrict;
    dvfs_worker_ = std::make_unique<power::DvfsWorker>(*dvfs_, [this, strict](const std::string& e) {
      if (strict) {
        request_stop();  // the run ends; check_dvfs_after_run reports why
      } else {
        warn_dvfs(e + "; continuing (--dvfs=best-effort)");
      }
    });
    dvfs_observer_ = std::make_unique<power::DvfsObserver>(schedule.per_layer, *dvfs_worker_);
    options.observers.push_back(dvfs_observer_.get());
  }
  if (!values_.gpio_tags.empty()) {
    gpio_sink_ = std::make_unique<power::GpiodTagSink>(platform_.gpio);
    if (use_meter) meter_ = std::make_unique<power::ExternalMeter>(meter_options, true, *gpio_sink_);
    gpio_tagger_ = std::make_unique<power::GpioTagger>(meter_ ? meter_->sink() : *gpio_sink_,
                                                       platform_.gpio, gpio_layers);
    options.observers.push_back(gpio_tagger_.get());
  }
  if (values_.power) {
    span_recorder_ = std::make_unique<power::LayerSpanRecorder>();
    options.observers.push_back(span_recorder_.get());
    sampler_ = std::make_unique<power::PowerSampler>(platform_.sensors, values_.sysfs_root, values_.power_rate);
  }

  // The order bound to this machine: devices, node queries (kept from the fallback where it asked).
  Placement placement = Placement::create(graph_, std::move(resolved), platform_, registry_);
  int8_report_ = std::make_unique<api::AccuracyReport>(placement, registry_,
                                                       static_cast<uint64_t>(values_.calibration));
  executor_ = api::open_executor(std::move(placement), options);
  if (meter_) meter_->start();

  for (graph::TensorId t : graph_.inputs()) inputs_.push_back({graph_.tensor(t).name, graph_.tensor(t).desc.shape});
  for (graph::TensorId t : graph_.outputs()) outputs_.push_back({graph_.tensor(t).name, graph_.tensor(t).desc.shape});
  slots_.resize(values_.queue_capacity != 0 ? values_.queue_capacity
                                            : std::max(2u, 2 * pipeline_depth(partition, options.mode, options.receiver_buffers)));
}

void Session::Impl::warn_dvfs(const std::string& message) {
  if (warned_dvfs_.exchange(true)) return;
  std::cerr << "co_up: warning: " << message << "\n";
}

Session::Impl::~Impl() {
  {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
  }
  ready_.notify_all();
  room_.notify_all();
  if (driver_.joinable()) {
    // Frames in flight are dropped: the processor threads stop after the sub-graph runs in
    // progress, then run_stream returns.
    executor_->request_stop();
    closed_.store(true, std::memory_order_release);
    executor_->notify_stream();
    driver_.join();
  }
  if (sampler_) sampler_->stop();
  if (dvfs_worker_) dvfs_worker_->stop();
}

void Session::Impl::check_inputs(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != inputs_.size()) {
    throw Error(ErrorKind::kInput, "graph '" + graph_.name() + "' has " + std::to_string(inputs_.size()) +
                                       " inputs but " + std::to_string(inputs.size()) + " were given");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape() != inputs_[i].shape) {
      throw Error(ErrorKind::kInput, "input '" + inputs_[i].name + "' needs shape " +
                                         shape_text(inputs_[i].shape) + " but got " +
                                         shape_text(inputs[i].shape()));
    }
  }
}

void Session::Impl::check_inputs(std::span<const TensorView> inputs) const {
  if (inputs.size() != inputs_.size()) {
    throw Error(ErrorKind::kInput, "graph '" + graph_.name() + "' has " + std::to_string(inputs_.size()) +
                                       " inputs but " + std::to_string(inputs.size()) + " were given");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int64_t> shape(inputs[i].shape.begin(), inputs[i].shape.end());
    if (shape != inputs_[i].shape) {
      throw Error(ErrorKind::kInput, "input '" + inputs_[i].name + "' needs shape " +
                                         shape_text(inputs_[i].shape) + " but got " + shape_text(shape));
    }
    size_t count = 1;
    for (int64_t d : shape) count *= static_cast<size_t>(d);  // non-negative: it equals inputs_[i]
    if (inputs[i].element_count != count) {
      throw Error(ErrorKind::kInput, "input '" + inputs_[i].name + "' of shape " + shape_text(shape) + " needs " +
                                         std::to_string(count) + " values but the view has " +
                                         std::to_string(inputs[i].element_count));
    }
    if (inputs[i].data == nullptr && count != 0) {
      throw Error(ErrorKind::kInput, "input '" + inputs_[i].name + "' is a view without data");
    }
  }
}

std::optional<RuntimeError> Session::Impl::strict_dvfs_error() const {
  if (!dvfs_worker_ || dvfs_policy_ != power::DvfsPolicy::kStrict) return std::nullopt;
  const std::string error = dvfs_worker_->error();
  if (error.empty()) return std::nullopt;
  return RuntimeError(error + " during the run (run as root or use --dvfs=best-effort)");
}

void Session::Impl::check_dvfs_after_run() {
  if (std::optional<RuntimeError> error = strict_dvfs_error()) throw *error;
}

// After drain(): the run's requests are settled, so their records are complete; they leave the
// worker, so the next run's profile has its own.
void Session::Impl::add_dvfs_events(profiler::RunProfile& profile) {
  profile.dvfs = setup_dvfs_;
  if (dvfs_worker_) {
    for (profiler::DvfsEvent& e : dvfs_worker_->take_records()) profile.dvfs.push_back(std::move(e));
  }
}

void Session::Impl::end_power(profiler::RunProfile& profile) {
  if (sampler_) sampler_->stop();
  // Settle what the run issued before its records are read and the strict check looks at errors
  // (the power model below also reads the levels the worker writes).
  if (dvfs_worker_) dvfs_worker_->drain();
  add_dvfs_events(profile);
  if (!values_.power) return;
  // This run's spans and samples only (begin_power dropped the earlier runs').
  profiler::PowerSummary summary;
  summary.source = sampler_->samples().count() > 0 ? "sensors" : "estimated";
  summary.layers = layer_power();
  profile.power.push_back(std::move(summary));
}

// Power-model points at each processor's current (else default, else highest) level.
std::vector<profiler::PowerModelPoint> Session::Impl::model_points() const {
  std::vector<profiler::PowerModelPoint> points;
  for (const ProcessorSpec& p : platform_.processors) {
    const ProcessorSpec* clocked = p.dvfs.present() ? &p : platform_.find(p.host);
    if (!p.power_model.present || clocked == nullptr || !clocked->dvfs.present()) continue;
    const DvfsSpec& d = clocked->dvfs;
    int level = dvfs_->level(clocked->letter);
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

std::vector<profiler::LayerPower> Session::Impl::layer_power() const {
  return profiler::summarize_layer_power(span_recorder_->spans(), sampler_->samples(), model_points());
}

api::FramesRun Session::Impl::run_frames(RunRequest& request, bool inputs_fixed) {
  {
    std::lock_guard lock(mutex_);
    if (streaming_ || submitted_ != handed_) {
      throw Error(ErrorKind::kInput, "a frame run while a stream is open; drain() first");
    }
  }
  // Layers on npu-int8: distinct inputs, int8-vs-f32 report after the run.
  int8_report_->prepare(request, inputs_fixed, values_.seed);
  api::FramesRun run;
  begin_power();
  try {
    run.result = executor_->run(request);
  } catch (...) {
    abandon_power();
    throw;
  }
  if (sampler_) sampler_->stop();
  // What was pending is applied: every record is in the profile. The worker stays for later runs.
  if (dvfs_worker_) dvfs_worker_->drain();
  add_dvfs_events(run.result.profile);
  if (std::optional<RuntimeError> error = strict_dvfs_error()) run.late_error = std::make_exception_ptr(*error);
  return run;
}

api::PowerReport Session::Impl::report_power(std::ostream& out, std::ostream& err,
                                             profiler::RunProfile& profile) {
  api::PowerReport report;
  if (!values_.power) return report;
  report.spans = span_recorder_->spans();
  report.samples = &sampler_->samples();
  report.layer_power = profiler::summarize_layer_power(report.spans, sampler_->samples(), model_points());
  if (sampler_->samples().count() == 0 && model_points().empty()) {
    out << "power: platform '" << platform_.name << "' has neither sensors nor a power model; times only\n";
  }
  profiler::print_power_report(out, report.layer_power);
  profiler::PowerSummary summary;
  summary.source = sampler_->samples().count() > 0 ? "sensors" : "estimated";
  summary.layers = report.layer_power;
  profile.power.push_back(std::move(summary));  // the profile JSON's "power"
  if (meter_) report.meter_samples = power::report_meter(*meter_, report.spans, out, err, profile.power);
  return report;
}

std::vector<Tensor> Session::Impl::run(std::span<const TensorView> inputs) {
  check_inputs(inputs);
  {
    std::lock_guard lock(mutex_);
    if (streaming_ || submitted_ != handed_) {
      throw Error(ErrorKind::kInput, "run() while " + std::to_string(submitted_ - handed_) +
                                         " streamed frame(s) are in flight; take their results "
                                         "and drain() first");
    }
  }
  // One frame, admitted and closed from the start, its outputs written straight into the result.
  class OneFrame final : public FrameStream {
   public:
    OneFrame(std::span<const TensorView> in, std::vector<Tensor>& out) : in_(in), out_(out) {}
    uint64_t admitted() const override { return 1; }
    bool closed() const override { return true; }
    const float* input(uint64_t, uint32_t input) override { return in_[input].data; }
    void output(uint64_t, uint32_t output, std::span<const float> values) override {
      std::copy(values.begin(), values.end(), out_[output].data());
    }
    void frames_completed(uint64_t) override {}

   private:
    std::span<const TensorView> in_;
    std::vector<Tensor>& out_;
  };
  std::vector<Tensor> outputs;
  outputs.reserve(outputs_.size());
  for (const TensorInfo& info : outputs_) outputs.emplace_back(info.shape);
  OneFrame stream(inputs, outputs);
  begin_power();
  RunResult result = api::translate_errors([&] {
    try {
      return executor_->run_stream(stream);
    } catch (...) {
      abandon_power();
      throw;
    }
  });
  end_power(result.profile);
  api::translate_errors([&] { check_dvfs_after_run(); });
  const bool completed = result.profile.frames_completed == 1;
  {
    std::lock_guard lock(mutex_);
    last_profile_ = std::move(result.profile);
  }
  if (!completed) throw Error(ErrorKind::kRuntime, "the run was stopped before its frame completed");
  return outputs;
}

void Session::Impl::raise_errors(std::unique_lock<std::mutex>& lock) {
  if (callback_error_) {
    std::exception_ptr e = std::exchange(callback_error_, nullptr);
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      throw Error(ErrorKind::kRuntime, "the result callback threw: " + one_line(x.what()));
    } catch (...) {
      throw Error(ErrorKind::kRuntime, "the result callback threw an exception");
    }
  }
  if (!stream_error_ || !stream_done_) return;
  // The failed stream's frames in flight are dropped; the next submit opens a new stream.
  std::exception_ptr e = std::exchange(stream_error_, nullptr);
  driver_.join();  // it has left run_stream and only returns now (see stream_done_)
  streaming_ = false;
  completed_ = handed_ = submitted_;
  lock.unlock();
  ready_.notify_all();
  room_.notify_all();
  api::rethrow_as_error(e);
}

void Session::Impl::start_stream() {
  base_ = submitted_;
  admitted_.store(0, std::memory_order_relaxed);
  closed_.store(false, std::memory_order_relaxed);
  streaming_ = true;
  stream_done_ = false;
  driver_ = std::thread([this] {
    std::exception_ptr error;
    std::optional<RunResult> result;
    begin_power();
    try {
      result = executor_->run_stream(*this);
      end_power(result->profile);
      check_dvfs_after_run();
    } catch (...) {
      abandon_power();
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (error) stream_error_ = std::move(error);  // moved: no reference left on this thread
      if (result) last_profile_ = std::move(result->profile);
      stream_done_ = true;
    }
    ready_.notify_all();
    room_.notify_all();
  });
}

bool Session::Impl::submit(std::vector<Tensor>& inputs, void* user_data, bool block) {
  check_inputs(inputs);
  std::unique_lock lock(mutex_);
  raise_errors(lock);
  const auto has_room = [&] { return submitted_ - handed_ < slots_.size(); };
  if (block) {
    room_.wait(lock, [&] { return has_room() || (stream_error_ && stream_done_) || callback_error_; });
    raise_errors(lock);
  } else if (!has_room()) {
    return false;
  }
  if (!streaming_) start_stream();
  Slot& s = slot(submitted_);
  s.inputs = std::move(inputs);
  s.user_data = user_data;
  s.outputs.clear();
  for (const TensorInfo& info : outputs_) s.outputs.emplace_back(info.shape);
  ++submitted_;
  admitted_.store(submitted_ - base_, std::memory_order_release);
  lock.unlock();
  executor_->notify_stream();
  return true;
}

Result Session::Impl::take(uint64_t frame) {
  Slot& s = slot(frame);
  Result result{frame, s.user_data, std::move(s.outputs)};
  s.outputs.clear();
  s.inputs.clear();
  return result;
}

void Session::Impl::set_callback(ResultCallback callback) {
  std::lock_guard lock(mutex_);
  if (submitted_ != handed_ || streaming_) {
    throw Error(ErrorKind::kInput, "set_result_callback() while frames are in flight; set it before "
                                   "the first submit or after drain()");
  }
  callback_ = std::move(callback);
}

void Session::Impl::deliver_completed() {
  std::unique_lock lock(mutex_);
  if (delivering_) return;
  delivering_ = true;
  while (!shutting_down_ && completed_ > handed_) {
    const uint64_t frame = handed_;
    Result result = take(frame);
    lock.unlock();
    std::exception_ptr thrown;
    try {
      callback_(std::move(result));
    } catch (...) {
      thrown = std::current_exception();
    }
    // Stored after the catch has ended and moved, so this thread keeps no reference to the
    // exception once another thread can take it.
    lock.lock();
    if (handed_ == frame) ++handed_;  // not when an error reset the counts meanwhile
    if (thrown) {
      if (!callback_error_) callback_error_ = std::move(thrown);
      thrown = nullptr;
      ready_.notify_all();
      room_.notify_all();
    } else {
      notify_room();
    }
  }
  delivering_ = false;
}

Result Session::Impl::wait_result() {
  std::unique_lock lock(mutex_);
  raise_errors(lock);
  if (callback_) throw Error(ErrorKind::kInput, "wait_result() with a result callback set: results go to the callback");
  if (submitted_ == handed_) throw Error(ErrorKind::kInput, "wait_result() with no frame in flight; submit one first");
  ready_.wait(lock, [&] { return completed_ > handed_ || (stream_error_ && stream_done_); });
  raise_errors(lock);
  Result result = take(handed_++);
  notify_room();
  return result;
}

std::optional<Result> Session::Impl::try_result(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  raise_errors(lock);
  if (callback_) throw Error(ErrorKind::kInput, "try_result() with a result callback set: results go to the callback");
  if (!ready_.wait_for(lock, timeout, [&] { return completed_ > handed_ || (stream_error_ && stream_done_); })) {
    return std::nullopt;
  }
  raise_errors(lock);
  Result result = take(handed_++);
  notify_room();
  return result;
}

void Session::Impl::drain() {
  std::unique_lock lock(mutex_);
  raise_errors(lock);
  if (!streaming_) return;
  const auto drained = [&] {
    return (stream_error_ && stream_done_) || callback_error_ ||
           (callback_ ? handed_ == submitted_ : completed_ == submitted_);
  };
  if (callback_) {
    room_.wait(lock, drained);
  } else {
    ready_.wait(lock, drained);
  }
  raise_errors(lock);
  closed_.store(true, std::memory_order_release);
  lock.unlock();
  executor_->notify_stream();
  driver_.join();
  lock.lock();
  streaming_ = false;
  if (stream_error_) {
    std::exception_ptr e = std::exchange(stream_error_, nullptr);
    completed_ = handed_ = submitted_;
    api::rethrow_as_error(e);
  }
}

Profile Session::Impl::profile() const {
  std::lock_guard lock(mutex_);
  if (!last_profile_) throw Error(ErrorKind::kInput, "profile() before any run; run() a frame or drain() a stream first");
  return to_public(*last_profile_);
}

// ---- Session ------------------------------------------------------------------------------------

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Session::Session(Session&& other) noexcept = default;
Session& Session::operator=(Session&& other) noexcept = default;

namespace {

NetworkSpec network_spec(const SessionOptions::Values& v) {
  NetworkSpec spec;
  spec.units = v.units;
  spec.image_size = v.image_size;
  spec.seed = v.seed;
  spec.data_dir = v.data;
  spec.input_shape = v.input_shape;
  spec.split = v.split;
  spec.exits_file = v.exits;
  spec.stages = v.stages;
  spec.stage_plan_file = v.stage_plan;
  return spec;
}

}  // namespace

Session Session::open_model(const std::string& onnx_path, const SessionOptions& options) {
  return api::translate_errors([&] {
    if (onnx_path.empty()) throw InputError("no model given: name an .onnx file");
    NetworkSpec spec = network_spec(options.values());
    spec.model = onnx_path;
    return Session(std::make_unique<Impl>(std::move(spec), options.values()));
  });
}

Session Session::open_zoo(const std::string& name, const SessionOptions& options) {
  return api::translate_errors([&] {
    if (name.empty()) throw InputError("no network given: name a zoo network such as alexnet");
    NetworkSpec spec = network_spec(options.values());
    spec.name = name;
    return Session(std::make_unique<Impl>(std::move(spec), options.values()));
  });
}

namespace {
Session::Impl& checked(const std::unique_ptr<Session::Impl>& impl) {
  if (!impl) throw Error(ErrorKind::kInput, "use of a moved-from co_up::Session");
  return *impl;
}
}  // namespace

// ---- the command line's extension (api/session_run.h) -------------------------------------------

Session SessionAccess::open(const NetworkSpec& network, const SessionOptions& options) {
  return api::translate_errors([&] {
    NetworkSpec spec = network_spec(options.values());
    spec.name = network.name;
    spec.model = network.model;
    return Session(std::make_unique<Session::Impl>(std::move(spec), options.values()));
  });
}

SessionOptions::Values& SessionAccess::values(SessionOptions& options) { return *options.values_; }
Session::Impl& SessionAccess::impl(Session& session) { return checked(session.impl_); }
const Session::Impl& SessionAccess::impl(const Session& session) { return checked(session.impl_); }

namespace api {

const graph::Graph& session_graph(const Session& session) { return SessionAccess::impl(session).graph(); }

FramesRun run_frames(Session& session, RunRequest& request, bool inputs_fixed) {
  return translate_errors([&] { return SessionAccess::impl(session).run_frames(request, inputs_fixed); });
}

void request_stop(Session& session) { SessionAccess::impl(session).request_stop(); }

void print_int8_report(const Session& session, std::ostream& out, const RunResult& result) {
  translate_errors([&] { SessionAccess::impl(session).print_int8_report(out, result); });
}

PowerReport report_power(Session& session, std::ostream& out, std::ostream& err, profiler::RunProfile& profile) {
  return translate_errors([&] { return SessionAccess::impl(session).report_power(out, err, profile); });
}

}  // namespace api

std::vector<TensorInfo> Session::inputs() const { return checked(impl_).inputs_; }
std::vector<TensorInfo> Session::outputs() const { return checked(impl_).outputs_; }
const std::string& Session::order() const { return checked(impl_).order_; }

namespace {
std::vector<TensorView> views_of(std::span<const Tensor> tensors) {
  std::vector<TensorView> views;
  views.reserve(tensors.size());
  for (const Tensor& t : tensors) views.push_back({t.data(), t.shape(), t.size()});
  return views;
}
}  // namespace

std::vector<Tensor> Session::run(const Tensor& input) {
  const TensorView view{input.data(), input.shape(), input.size()};
  return checked(impl_).run(std::span<const TensorView>(&view, 1));
}
std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  return checked(impl_).run(views_of(inputs));
}
std::vector<Tensor> Session::run(std::span<const TensorView> inputs) { return checked(impl_).run(inputs); }

void Session::set_result_callback(ResultCallback callback) { checked(impl_).set_callback(std::move(callback)); }

void Session::submit(Tensor frame, void* user_data) {
  std::vector<Tensor> inputs;
  inputs.push_back(std::move(frame));
  checked(impl_).submit(inputs, user_data, true);
}

void Session::submit(std::vector<Tensor> inputs, void* user_data) {
  checked(impl_).submit(inputs, user_data, true);
}

SubmitStatus Session::try_submit(Tensor&& frame, void* user_data) {
  Impl& impl = checked(impl_);
  std::vector<Tensor> inputs;
  inputs.push_back(std::move(frame));
  bool accepted = false;
  try {
    accepted = impl.submit(inputs, user_data, false);
  } catch (...) {
    frame = std::move(inputs.front());  // refused: the caller keeps it
    throw;
  }
  if (accepted) return SubmitStatus::kAccepted;
  frame = std::move(inputs.front());  // not taken: the caller keeps it
  return SubmitStatus::kFull;
}

SubmitStatus Session::try_submit(std::vector<Tensor>&& inputs, void* user_data) {
  // Impl::submit moves the tensors out only when it queues them.
  return checked(impl_).submit(inputs, user_data, false) ? SubmitStatus::kAccepted : SubmitStatus::kFull;
}

Result Session::wait_result() { return checked(impl_).wait_result(); }
std::optional<Result> Session::try_result(std::chrono::milliseconds timeout) {
  return checked(impl_).try_result(timeout);
}
void Session::drain() { checked(impl_).drain(); }
size_t Session::in_flight() const { return checked(impl_).in_flight(); }
size_t Session::queue_capacity() const { return checked(impl_).capacity(); }
Profile Session::profile() const { return checked(impl_).profile(); }

}  // namespace co_up
