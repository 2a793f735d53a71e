// PowerSampler: a thread that reads the platform's sensors (files under the sysfs root: hwmon
// power*_input, INA3221 curr*/in* rails, RAPL energy_uj) at a fixed rate and timestamps each
// sample on the profiler clock, so samples line up with layer events.
//
// Files are opened once (construction: a missing file is an InputError naming the sensor) and
// re-read with pread at offset 0 — what sysfs attributes expect. An "energy" sensor becomes power
// as the counter's difference over the time between two samples (wrap-around handled with
// max_path); its first sample repeats the second.
// Each start() begins a new series (one run's): the samples so far and the counters' baselines
// are dropped, so the first energy sample of a run does not average over the time between runs.
// stop() wakes the sleeping thread rather than waiting out the period.
// Threading: start() and stop() from one thread; samples() after stop().
#pragma once

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "core/layer_observer.h"
#include "core/platform.h"
#include "profiler/power_trace.h"

namespace co_up::power {

class PowerSampler {
 public:
  PowerSampler(const std::vector<SensorSpec>& sensors, const std::filesystem::path& sysfs_root,
               double rate_hz);
  ~PowerSampler();
  PowerSampler(const PowerSampler&) = delete;
  PowerSampler& operator=(const PowerSampler&) = delete;

  void start();
  void stop();
  // Reads every sensor once now (the thread's body; tests and the bench call it directly).
  void sample_once();
  const profiler::PowerSamples& samples() const { return samples_; }

 private:
  struct Source;
  void loop();
  std::vector<Source> sources_;
  profiler::PowerSamples samples_;
  std::vector<double> last_energy_mj_;
  int64_t last_t_ = 0;
  int64_t period_ns_;
  std::mutex stop_mutex_;
  std::condition_variable stop_changed_;
  bool stop_ = false;  // under stop_mutex_
  std::thread thread_;
};

// Records layer spans from observer calls; one vector per processor letter, each written only
// by that processor's thread, so no lock. spans() after the run.
class LayerSpanRecorder : public LayerObserver {
 public:
  LayerSpanRecorder();
  void on_layer_begin(char processor, uint32_t layer, uint64_t frame) override;
  void on_layer_end(char processor, uint32_t layer, uint64_t frame) override;
  std::vector<profiler::LayerSpan> spans() const;  // sorted by begin time
  // Drops the spans so far (between runs: no processor thread records then).
  void clear();

 private:
  std::vector<std::vector<profiler::LayerSpan>> per_processor_;
};

}  // namespace co_up::power
