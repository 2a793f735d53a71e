// Power traces: sensor samples and layer spans on the one CLOCK_MONOTONIC clock, and
// what is made of them — the per-sample CSV, the per-layer summary (time, average power, energy)
// and a Chrome trace JSON (chrome://tracing, ui.perfetto.dev) with one track per processor and
// counter tracks for power and frequency.
//
// Energy of a layer: each sample's power holds from half-way since the previous sample to
// half-way to the next; a layer's energy is that step function integrated over the layer's span,
// summed over the sensors feeding its processor (or the board sensors when none does). Spans are
// accumulated with sub-sample boundaries, so a layer's energy is right on average over many frames
// as long as its neighbours draw similar power or it is several sample periods long; otherwise the
// step function blurs neighbouring layers into each other (its average is the true power
// convolved with a one-period box). The external meter's path (power/meter_alignment.h) solves
// for per-layer power instead, which undoes that blur.
// Without sensors, power is estimated per processor with P = alpha V^2 U f + beta V (the
// platform's power_model), U = 1 during a layer; every such number is labelled "estimated".
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/io/output_file.h"

#include "profiler/run_profile.h"

namespace co_up::profiler {

struct LayerSpan {
  char processor = 0;
  uint32_t layer = 0;
  uint64_t frame = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

struct PowerSamples {
  std::vector<std::string> names;       // one per sensor
  std::vector<std::string> processors;  // letters each sensor feeds ("" = board)
  std::vector<int64_t> t_ns;            // one per sample
  std::vector<double> mw;               // t_ns.size() x names.size(), row-major
  double rate_hz = 0;

  size_t count() const { return t_ns.size(); }
  double at(size_t sample, size_t sensor) const { return mw[sample * names.size() + sensor]; }
};

// Energy in mJ of sensor `sensor` over [begin_ns, end_ns] (step function, see above).
double integrate_mj(const PowerSamples& s, size_t sensor, int64_t begin_ns, int64_t end_ns);

// Per processor power model: P[W] = alpha V^2 U f[GHz] + beta V.
struct PowerModelPoint {
  char processor = 0;
  double alpha = 0, beta = 0;
  double volts = 0, ghz = 0;
  double watts(double utilisation) const { return alpha * volts * volts * utilisation * ghz + beta * volts; }
};

// Sensors when `samples` has any, else the model points (layers whose processor has no point
// get zeros and estimated = true).
std::vector<LayerPower> summarize_layer_power(const std::vector<LayerSpan>& spans,
                                              const PowerSamples& samples,
                                              const std::vector<PowerModelPoint>& model);

void print_power_report(std::ostream& out, const std::vector<LayerPower>& layers);
nlohmann::json power_to_json(const std::vector<LayerPower>& layers);
// {"source", "layers", "energy_per_frame_mj", and for the meter "idle_mw", "fit_residual_mw",
// "meter_samples_used", "meter_clock"}: one entry of the profile JSON's "power" array.
nlohmann::json power_summary_to_json(const PowerSummary& summary);
// "t_ns,<sensor>_mW,..." one line per sample, through `out` (core/io/output_file.h). Throws
// RuntimeError when the write fails.
void write_power_csv(const io::OutputFile& out, const PowerSamples& samples);
// Chrome trace events: layer slices per processor (pid 1, tid = letter), counters for each
// sensor and each DVFS domain's frequency (from `dvfs` apply times), and an external meter's
// samples (already on CLOCK_MONOTONIC, power/meter_alignment.h) as a "meter" counter.
void write_chrome_trace(const io::OutputFile& out, const std::vector<LayerSpan>& spans,
                        const PowerSamples& samples, const std::vector<DvfsEvent>& dvfs,
                        const std::vector<LayerPower>& layers, const PowerSamples& meter = {});

}  // namespace co_up::profiler
