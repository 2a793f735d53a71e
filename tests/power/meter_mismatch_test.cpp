// Per-layer energy from an external meter's log (power/meter_alignment.h) when the log does not
// match the estimator's assumptions: power that varies within a layer and from frame to frame, a
// sensor that lags and low-pass filters, dropped samples, and a meter clock that jumps. The log is
// generated from a power signal on a 10 us grid (not from the estimator's formulas); the truth is
// each layer's integral of that signal. Each test prints the error it measured and asserts a bound
// that the same log misses when the effect is ignored (the test shows that too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "power/gpio_tagger.h"
#include "power/meter_alignment.h"
#include "power/meter_log.h"
#include "profiler/events.h"

namespace co_up::power {
namespace {

struct Mismatch {
  int frames = 2500;
  std::vector<double> layer_ms = {0.4, 1.1, 0.7, 2.3, 0.5, 1.6};
  std::vector<double> layer_mw = {1500, 3200, 900, 2600, 4100, 1800};
  double idle_mw = 600;
  double period_ms = 2.9, period_jitter_ms = 0.15;
  double offset_ms = 5000.3, drift_ppm = 2000, noise_mw = 30;
  double ramp = 0;          // power within a layer: P * (1 + ramp * (2 * phase - 1)), mean P
  double frame_spread = 0;  // per-frame factor uniform in [1 - spread, 1 + spread]
  double lag_ms = 0;        // reading stamped t describes the filtered power at t - lag
  double tau_ms = 0;        // first-order low-pass filter (0: none)
  double drop = 0;          // probability that a burst of 1-20 samples starts being dropped
  double jump_ms = 0;       // the meter's clock jumps forward by this much at `jump_at` of the log
  double jump_at = 0.6;
  uint64_t seed = 11;
};

struct Generated {
  std::vector<profiler::LayerSpan> spans;
  std::vector<RecordingTagSink::Edge> edges;
  MeterLog log;
  std::vector<double> truth_mj;  // per layer, mean per frame
};

Generated generate(const Mismatch& mm) {
  Generated out;
  std::mt19937_64 rng(mm.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> noise(0, mm.noise_mw);
  const size_t layers = mm.layer_ms.size();
  constexpr int64_t kStepNs = 10'000;  // the power signal's grid
  const int64_t t0 = 1'000'000'000'000;
  int64_t t = t0 + 50'000'000;  // 50 ms of idle before the first layer
  std::vector<double> grid;     // power at t0 + i * kStepNs
  auto fill_to = [&](int64_t until, auto power_at) {
    for (int64_t g = t0 + static_cast<int64_t>(grid.size()) * kStepNs; g < until; g += kStepNs) grid.push_back(power_at(g));
  };
  std::vector<double> energy_mj(layers, 0);
  for (int f = 0; f < mm.frames; ++f) {
    const double factor = 1 + mm.frame_spread * (2 * unit(rng) - 1);
    t += static_cast<int64_t>((0.3 + 2.7 * unit(rng)) * 1e6);
    for (uint32_t l = 0; l < layers; ++l) {
      const double ms = mm.layer_ms[l] * (0.95 + 0.1 * unit(rng));
      const int64_t begin = t, end = t + static_cast<int64_t>(ms * 1e6);
      fill_to(begin, [&](int64_t) { return mm.idle_mw; });
      const double p = mm.layer_mw[l] * factor;
      fill_to(end, [&](int64_t g) {
        const double phase = static_cast<double>(g - begin) / static_cast<double>(end - begin);
        return p * (1 + mm.ramp * (2 * phase - 1));
      });
      energy_mj[l] += p * ms / 1000.0;  // the ramp's mean is p
      out.spans.push_back({'B', l, static_cast<uint64_t>(f), begin, end});
      out.edges.push_back({begin - 500, 1u});
      out.edges.push_back({end + 500, 0u});
      t = end + 2'000;
    }
  }
  const int64_t last = t + 50'000'000;
  fill_to(last, [&](int64_t) { return mm.idle_mw; });
  for (size_t l = 0; l < layers; ++l) out.truth_mj.push_back(energy_mj[l] / mm.frames);
  // What the sensor reports over time: the signal through the low-pass filter (exact for a
  // signal constant over each grid step).
  std::vector<double> sensed(grid.size());
  const double keep = mm.tau_ms > 0 ? std::exp(-(kStepNs * 1e-6) / mm.tau_ms) : 0;
  double y = mm.idle_mw;
  for (size_t i = 0; i < grid.size(); ++i) sensed[i] = y = keep * y + (1 - keep) * grid[i];
  auto sensed_at = [&](int64_t h) {
    const int64_t i = (h - t0) / kStepNs;
    return sensed[static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(sensed.size()) - 1))];
  };
  auto state = [&](int64_t h) {
    auto it = std::upper_bound(out.edges.begin(), out.edges.end(), h,
                               [](int64_t x, const RecordingTagSink::Edge& e) { return x < e.t_ns; });
    return it == out.edges.begin() ? 0u : std::prev(it)->value;
  };
  const int64_t first_edge = out.edges.front().t_ns;
  const double rate = 1 + mm.drift_ppm * 1e-6;
  const int64_t from = first_edge - 40'000'000, to = last - 10'000'000;
  const int64_t jump_host = from + static_cast<int64_t>(mm.jump_at * static_cast<double>(to - from));
  out.log.source = "generated";
  int dropping = 0;
  for (double hm = static_cast<double>(from - first_edge) * 1e-6; ; hm += mm.period_ms + mm.period_jitter_ms * (2 * unit(rng) - 1)) {
    const int64_t h = first_edge + static_cast<int64_t>(hm * 1e6);
    if (h >= to) break;
    if (dropping > 0 || unit(rng) < mm.drop) {
      dropping = dropping > 0 ? dropping - 1 : static_cast<int>(rng() % 20);
      continue;
    }
    double m = mm.offset_ms + hm * rate;  // the meter's clock
    if (mm.jump_ms != 0 && h >= jump_host) m += mm.jump_ms;
    const double mw = sensed_at(h - static_cast<int64_t>(mm.lag_ms * 1e6)) + noise(rng);
    out.log.samples.push_back({state(h), m, mw});
    ++out.log.lines;
  }
  return out;
}

// Largest relative error of a layer's energy per frame, and the error of the frame's total.
struct Errors {
  double worst_layer = 0;
  double frame = 0;
};

Errors errors(const Generated& g, const MeterPower& power) {
  Errors e;
  double est = 0, truth = 0;
  EXPECT_EQ(power.summary.layers.size(), g.truth_mj.size());
  for (const profiler::LayerPower& l : power.summary.layers) {
    e.worst_layer = std::max(e.worst_layer, std::abs(l.energy_mj - g.truth_mj[l.layer]) / g.truth_mj[l.layer]);
    est += l.energy_mj;
    truth += g.truth_mj[l.layer];
  }
  e.frame = std::abs(est - truth) / truth;
  return e;
}

Errors run(const Mismatch& mm, const MeterSensor& sensor, const char* what) {
  const Generated g = generate(mm);
  const MeterClockFit fit = align_meter_clock(g.log, g.edges);
  const Errors e = errors(g, attribute_meter_power(g.log, fit, g.spans, sensor));
  std::printf("%s: worst layer %.2f %%, frame %.2f %%\n", what, 100 * e.worst_layer, 100 * e.frame);
  return e;
}

// The estimator solves for one mean power per layer from samples at every phase: power that
// ramps within a layer (+-40 %) and frames that differ by +-15 % average out.
TEST(MeterMismatchTest, PowerVaryingWithinALayerAndBetweenFrames) {
  Mismatch mm;
  mm.ramp = 0.4;
  mm.frame_spread = 0.15;
  const Errors e = run(mm, {}, "ramp 40 %, frames +-15 %");
  EXPECT_LT(e.worst_layer, 0.05);  // measured 3.6 %: the shortest layer's samples are few
  EXPECT_LT(e.frame, 0.01);
}

// Bursts of dropped samples (serial overruns): 2 % of samples start a burst of up to 20, about a
// fifth of the log lost. The least-squares rows do not assume regular spacing.
TEST(MeterMismatchTest, DroppedSamples) {
  Mismatch mm;
  mm.drop = 0.02;
  mm.ramp = 0.4;
  const Generated g = generate(mm);
  const Errors e = run(mm, {}, "bursts of dropped samples");
  EXPECT_LT(g.log.samples.size(), 0.85 * generate(Mismatch{}).log.samples.size());  // the drops happened
  EXPECT_LT(e.worst_layer, 0.03);  // measured 1.7 %
  EXPECT_LT(e.frame, 0.01);
}

// A sensor that converts 0.2 ms late and low-pass filters with a 0.3 ms time constant: modelled
// (MeterSensor lag and time constant), every layer within 3 %; modelled as instantaneous, the
// short layers next to hungry ones are far off, which the bound would catch.
TEST(MeterMismatchTest, LaggingLowPassSensor) {
  Mismatch mm;
  mm.lag_ms = 0.2;
  mm.tau_ms = 0.3;
  const Errors modelled = run(mm, {0, 0.2, 0.3}, "lag 0.2 ms, filter 0.3 ms, modelled");
  EXPECT_LT(modelled.worst_layer, 0.03);
  EXPECT_LT(modelled.frame, 0.01);
  const Errors ignored = run(mm, {}, "lag 0.2 ms, filter 0.3 ms, taken as instantaneous");
  EXPECT_GT(ignored.worst_layer, 0.06);  // twice the bound: ignoring the sensor fails it
  const Errors lag_only = run(mm, {0, 0.2, 0}, "lag 0.2 ms, filter 0.3 ms, only the lag modelled");
  EXPECT_GT(lag_only.worst_layer, 0.06);
}

// A known limit, bounded so that it cannot grow unseen: behind a filter, power that ramps within
// a layer leaks the layer's hot end into its successor's readings, and one constant power per
// layer cannot express that. With a +-20 % ramp the 0.4 ms layer comes out about 15 % low (the
// longer ones within 2 %, the frame within 0.5 %).
TEST(MeterMismatchTest, RampBehindAFilterIsAKnownLimit) {
  Mismatch mm;
  mm.lag_ms = 0.2;
  mm.tau_ms = 0.3;
  mm.ramp = 0.2;
  const Errors e = run(mm, {0, 0.2, 0.3}, "lag 0.2 ms, filter 0.3 ms, ramp 20 %, modelled");
  EXPECT_LT(e.worst_layer, 0.20);
  EXPECT_LT(e.frame, 0.01);
}

// The meter's clock jumps 37.3 ms forward 60 % into the log (a millis() glitch, a restart of the
// count). The alignment fits the longer stretch; the samples after the jump would land on the
// wrong layers, so they are marked distrusted and left out.
TEST(MeterMismatchTest, ClockJump) {
  Mismatch mm;
  mm.jump_ms = 37.3;
  mm.ramp = 0.2;
  const Generated g = generate(mm);
  const MeterClockFit fit = align_meter_clock(g.log, g.edges);
  EXPECT_GT(fit.samples_distrusted, g.log.samples.size() / 4);
  EXPECT_LT(fit.samples_distrusted, g.log.samples.size() / 2);
  const Errors handled = errors(g, attribute_meter_power(g.log, fit, g.spans));
  std::printf("clock jump 37.3 ms: %llu of %zu samples distrusted; worst layer %.2f %%, frame %.2f %%\n",
              static_cast<unsigned long long>(fit.samples_distrusted), g.log.samples.size(),
              100 * handled.worst_layer, 100 * handled.frame);
  EXPECT_LT(handled.worst_layer, 0.05);  // measured 3.3 %: 40 % fewer samples
  EXPECT_LT(handled.frame, 0.01);
  MeterClockFit trusting = fit;
  trusting.distrusted_ms.clear();
  const Errors ignored = errors(g, attribute_meter_power(g.log, trusting, g.spans));
  std::printf("clock jump 37.3 ms, every sample used: worst layer %.2f %%, frame %.2f %%\n",
              100 * ignored.worst_layer, 100 * ignored.frame);
  EXPECT_GT(ignored.worst_layer, 0.06);
}

// Everything at once but the ramp (see above) and the jump (below).
TEST(MeterMismatchTest, AllEffectsTogether) {
  Mismatch mm;
  mm.frame_spread = 0.15;
  mm.lag_ms = 0.2;
  mm.tau_ms = 0.3;
  mm.drop = 0.01;
  const Errors e = run(mm, {0, 0.2, 0.3}, "frames +-15 %, lag, filter, drops; sensor modelled");
  EXPECT_LT(e.worst_layer, 0.03);  // measured 0.8 %
  EXPECT_LT(e.frame, 0.01);
}

// A known limit, bounded so that it cannot grow unseen: a clock jump in a log that also drops
// samples leaves the alignment fewer edges, and the clock rate it fits is off by about 20 ppm
// (0.5 ms over the 25 s run), which puts the shortest layers' samples on their neighbours: the
// 0.4 ms layer comes out about 20 % off. The frame's energy stays within 1 %.
TEST(MeterMismatchTest, ClockJumpWithDroppedSamplesIsAKnownLimit) {
  Mismatch mm;
  mm.drop = 0.01;
  mm.jump_ms = 23.1;
  const Generated g = generate(mm);
  const MeterClockFit fit = align_meter_clock(g.log, g.edges);
  const Errors e = errors(g, attribute_meter_power(g.log, fit, g.spans));
  std::printf("clock jump 23.1 ms and drops: rate off by %.1f ppm; worst layer %.2f %%, frame %.2f %%\n",
              fit.drift_ppm() - mm.drift_ppm, 100 * e.worst_layer, 100 * e.frame);
  EXPECT_GT(fit.samples_distrusted, g.log.samples.size() / 4);
  EXPECT_LT(e.worst_layer, 0.30);
  EXPECT_LT(e.frame, 0.015);
}

}  // namespace
}  // namespace co_up::power
