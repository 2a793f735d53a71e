// Aligning an external meter's log (power/meter_log.h) to co_up's clock, and per-layer power
// from it.
//
// Clock. The meter stamps samples with its own clock (an Arduino's resonator: offset unknown,
// rate off by up to ~0.5%); co_up knows on CLOCK_MONOTONIC when it set each tag value
// (RecordingTagSink). The map is linear, meter_ms = offset + rate * host_ms. A sample *agrees*
// with a map when co_up's line held the value the sample read at the host time the map gives it
// (give or take the stamp's resolution). The fit maximises the number of agreeing samples: a
// glitch costs one sample instead of pulling the fit, and every agreeing sample near an edge
// narrows the offsets left, so many samples at random phases pin the clock far finer than the
// sample period. Tag segments shorter than 0.1 ms (the line drops for microseconds between two
// tagged layers) are left out: a meter almost never sees them.
//   1. coarse offset: the first and last three pin changes in the log (and, live, the middle one,
//      with the lines' arrival times bounding the offset: a line arrives after it was sampled) are
//      paired with the first/last 1000 host tag changes to the same value; each pairing is scored
//      by the fraction of the 129 samples around it that agree. Pairing at both ends makes missing
//      or extra edges at either end harmless. When several offsets score alike (frames look the
//      same over that stretch) they are re-scored on 4x, 16x, 64x as many samples; if nothing
//      separates them (the log covers neither the run's start nor its end, identical frames) the
//      fit says so in `warning`.
//   2. from that anchor a window grows outward, doubling; in each, the rate is searched on a grid
//      (11 points, 5x finer each round) and for each rate the best offset by a sweep over the
//      intervals of agreeing offsets, until the whole log is in the window.
//   3. quality: the fraction of samples inside the run that agree (`pin_agreement`), the stretch of
//      offsets that all of those allow (`offset_uncertainty_ms`), and the RMS distance of each
//      matched edge from the middle of its sample interval (`residual_ms`, about period/sqrt(12)
//      when edges fall at random phases).
// A meter that prints integer milliseconds (millis(): truncated) took a sample stamped t somewhere
// in [t, t + 1 ms): alignment treats that as an interval and attribution averages over it (so a
// meter printing micros() / 1000.0 resolves short layers with fewer frames); decimals are exact.
//
// Power. Layers can be shorter than the meter's sample period, so a sample cannot be given to
// one layer. Over many frames the samples fall at every phase of the layers; each sample is
// modelled as the average of the board's power over its window (0: an instantaneous reading)
// under p(t) = P_idle + sum over layers running at t of (P_layer - P_idle): for one layer at a
// time that is simply P_layer while it runs and P_idle between layers. The window's overlap with
// every layer span (sub-sample boundaries, accumulated over all frames) gives one row of a linear
// least-squares problem for the P's. Splitting each sample's energy over the spans it overlaps
// would instead blur neighbouring layers into each other (short layers next to hungry ones would
// look hungry); solving for the powers undoes that. A layer's energy is its power times its
// measured time. Layers that no sample saw, or that cannot be told apart from a neighbour, have
// no power: the summary lists them as undetermined.
//
// Everything here is a pure function of its inputs; no threads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "power/gpio_tagger.h"
#include "power/meter_log.h"
#include "profiler/power_trace.h"
#include "profiler/run_profile.h"

namespace co_up::power {

struct MeterAlignOptions {
  double max_drift_ppm = 10000;  // the meter's clock rate may be off by this much (1%)
  double time_quantum_ms = -1;   // resolution of the meter's time stamps; < 0: 1 ms when all are integers, else 0
  double edge_tolerance_ms = 0.01;  // how far apart a pin's reading and its time stamp may be
};

struct MeterClockFit {
  int64_t host_ref_ns = 0;  // co_up's first tag edge
  double offset_ms = 0;     // meter time at host_ref_ns
  double rate = 1;          // meter ms per host ms
  double quantum_ms = 0;    // see MeterAlignOptions: a sample stamped t was taken in [t, t + quantum)
  double sample_period_ms = 0;
  double residual_ms = 0;            // see step 3 above
  double offset_uncertainty_ms = 0;  // half the stretch of offsets the most samples agree with
  double pin_agreement = 0;  // fraction of samples within the run that read the value co_up drove
  uint64_t meter_edges = 0, host_edges = 0, edges_matched = 0;
  uint64_t samples_used = 0;  // samples that agree with the fit
  // Stretches of meter time whose samples mostly disagree with the fit (local pin agreement under
  // 80 % over 51 samples): the meter's clock jumped or the meter restarted there, so the one
  // linear map puts those samples at wrong host times. Attribution leaves them out.
  std::vector<std::pair<double, double>> distrusted_ms;
  uint64_t samples_distrusted = 0;
  std::string warning;  // empty, or why the fit may be off (ambiguous, poor agreement)

  // CLOCK_MONOTONIC ns of meter time `meter_ms`.
  int64_t to_host_ns(double meter_ms) const;
  double drift_ppm() const { return (rate - 1.0) * 1e6; }
  profiler::PowerSummary::MeterClock summary() const;
};

// Throws InputError when co_up recorded no tag edge (no --gpio-tags) and RuntimeError when the log
// cannot be aligned (the pin never changes; nothing matches: wrong wiring, wrong log).
MeterClockFit align_meter_clock(const MeterLog& log, const std::vector<RecordingTagSink::Edge>& host_edges,
                                const MeterAlignOptions& options = {});

struct MeterPower {
  profiler::PowerSummary summary;      // source "meter"; layers in index order
  std::vector<uint32_t> undetermined;  // layers without a power (none of the samples resolves them)
};

// How a sample's reading relates to the board's power: the average over the `window_ms` before
// the reading (0: instantaneous), or, with `time_constant_ms` > 0, a first-order low-pass filter
// with that time constant (an exponential average instead of the window); either of them
// `lag_ms` late (the sensor's conversion time: the reading stamped t describes t - lag). A sensor
// that lags or filters but is modelled as instantaneous blurs each layer into the next: with a
// 0.2 ms lag and a 0.3 ms filter a 0.4 ms layer's energy came out 2.5x too high in
// tests/power/meter_mismatch_test.cpp (0.1 % modelled). Power that ramps within a layer cannot be
// undone behind a filter (one constant per layer): the same test bounds that case.
struct MeterSensor {
  double window_ms = 0;
  double lag_ms = 0;
  double time_constant_ms = 0;
};

// Samples between the first span's start and the last span's end, minus fit.distrusted_ms;
// window_ms: how long each sample averages (0: instantaneous). Throws RuntimeError when no sample
// falls inside the run.
MeterPower attribute_meter_power(const MeterLog& log, const MeterClockFit& fit,
                                 const std::vector<profiler::LayerSpan>& spans, double window_ms = 0);
MeterPower attribute_meter_power(const MeterLog& log, const MeterClockFit& fit,
                                 const std::vector<profiler::LayerSpan>& spans, const MeterSensor& sensor);

}  // namespace co_up::power
