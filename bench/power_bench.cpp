// Power-manager overheads, against a simulated sysfs tree in a temporary directory:
//   1. what a per-layer DVFS request costs the inference thread (DvfsObserver::on_layer_begin
//      with a level change each call; the DvfsWorker applies it on its own thread);
//   2. what sampling sensors at 1 kHz and GPIO-tagging every layer cost a compute loop
//      (throughput with vs without, recording tag sink: no gpiochip here).
// Prints a table; numbers go to bench/README.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/platform.h"
#include "power/dvfs_worker.h"
#include "power/gpio_tagger.h"
#include "power/power_sampler.h"
#include "power/sysfs_dvfs.h"
#include "profiler/events.h"

namespace fs = std::filesystem;
using namespace co_up;

namespace {

void put(const fs::path& f, const std::string& t) {
  fs::create_directories(f.parent_path());
  std::ofstream(f) << t << "\n";
}

volatile float g_sink;
// One "layer": a fixed amount of arithmetic (~50 us).
void layer_work() {
  float acc = 0;
  for (int i = 0; i < 20000; ++i) acc += std::sqrt(static_cast<float>(i) * 1.0001f);
  g_sink = acc;
}

double run_layers(int layers, std::vector<LayerObserver*> observers) {
  const int64_t t0 = profiler::now_ns();
  for (int l = 0; l < layers; ++l) {
    for (auto* o : observers) o->on_layer_begin('B', static_cast<uint32_t>(l % 8), 0);
    layer_work();
    for (auto* o : observers) o->on_layer_end('B', static_cast<uint32_t>(l % 8), 0);
  }
  return static_cast<double>(layers) / (static_cast<double>(profiler::now_ns() - t0) * 1e-9);
}

}  // namespace

int main() {
  const fs::path root = fs::temp_directory_path() / ("co_up_power_bench_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path p0 = root / "devices/system/cpu/cpufreq/policy0";
  put(p0 / "scaling_governor", "schedutil");
  put(p0 / "scaling_available_governors", "schedutil userspace");
  put(p0 / "scaling_setspeed", "0");
  put(root / "hwmon/power1_input", "2500000");
  put(root / "hwmon/curr1_input", "500");
  put(root / "hwmon/in1_input", "5000");
  const Platform platform = parse_platform(R"({"name": "bench", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0],
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy0",
                "frequencies_khz": [408000, 816000, 1200000, 1800000]}}]})",
                                           "bench");
  std::printf("power-manager overheads (simulated sysfs in %s)\n", root.c_str());
  // Two paces: back to back (a request every ~3 us: most are superseded before the worker applies
  // them, so this is the cost of the slot exchange alone) and paced, one request per ~50 us layer
  // (the worker applies nearly every one, so the inference thread's call meets the worker's
  // locking and writes as in a real per-layer plan). Both report how many were applied.
  for (const bool paced : {false, true}) {
    power::SysfsDvfs dvfs(platform, root);
    power::DvfsWorker worker(dvfs, nullptr);
    // Alternating levels: every call is a change, so every call issues a request.
    std::vector<std::vector<power::DvfsSetting>> plan;
    for (int l = 0; l < 8; ++l) plan.push_back({{'B', l % 2 == 0 ? 3 : 0}});
    power::DvfsObserver observer(plan, worker);
    std::vector<double> ns;
    const int requests = paced ? 4000 : 20000;
    for (int i = 0; i < requests; ++i) {
      const int64_t t0 = profiler::now_ns();
      observer.on_layer_begin('B', static_cast<uint32_t>(i % 8), static_cast<uint64_t>(i));
      ns.push_back(static_cast<double>(profiler::now_ns() - t0));
      if (paced || i % 16 == 0) layer_work();  // give the worker time, as real layers do
    }
    worker.stop();
    std::sort(ns.begin(), ns.end());
    size_t applied = 0;
    double lag = 0;
    for (const auto& r : worker.records()) {
      if (r.apply_ns > 0) {
        ++applied;
        lag += static_cast<double>(r.apply_ns - r.issue_ns);
      }
    }
    std::printf("DVFS request on the inference thread, %s: %zu requests, %llu issued, %zu applied (%.1f %%)\n",
                paced ? "one per ~50 us layer" : "back to back", ns.size(),
                static_cast<unsigned long long>(worker.issued()), applied,
                100.0 * static_cast<double>(applied) / static_cast<double>(ns.size()));
    std::printf("  median %.2f us   p90 %.2f us   p99 %.2f us   max %.1f us\n", ns[ns.size() / 2] / 1e3,
                ns[ns.size() * 9 / 10] / 1e3, ns[ns.size() * 99 / 100] / 1e3, ns.back() / 1e3);
    std::printf("  mean issue->apply %.1f us (simulated sysfs)\n",
                applied ? lag / static_cast<double>(applied) / 1e3 : 0.0);
  }
  {
    const int layers = 20000;
    run_layers(2000, {});  // warm-up
    double base = 0, with = 0;
    for (int rep = 0; rep < 3; ++rep) {
      base += run_layers(layers, {});
      std::vector<SensorSpec> sensors = {
          {"board", "power", "", "hwmon/power1_input", "", "", "", 0.001},
          {"rail", "iv", "B", "", "hwmon/curr1_input", "hwmon/in1_input", "", 1.0}};
      power::PowerSampler sampler(sensors, root, 1000);
      power::RecordingTagSink sink;
      power::GpioTagger tagger(sink, GpioSpec{"bench", {0}, "edge"}, std::nullopt);
      power::LayerSpanRecorder spans;
      sampler.start();
      with += run_layers(layers, {&tagger, &spans});
      sampler.stop();
      if (rep == 0) {
        std::printf("sampling 2 sensors at 1 kHz: %zu samples; tagging every layer: %zu edges\n",
                    sampler.samples().count(), sink.edges().size());
      }
    }
    std::printf("layers/s without: %.0f   with sampling + tags + spans: %.0f   overhead %.2f%%\n", base / 3,
                with / 3, (base - with) / base * 100.0);
  }
  fs::remove_all(root);
  return 0;
}
