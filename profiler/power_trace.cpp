#include "profiler/power_trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>

#include "core/error.h"

namespace co_up::profiler {
namespace {

using nlohmann::json;

}  // namespace

double integrate_mj(const PowerSamples& s, size_t sensor, int64_t begin_ns, int64_t end_ns) {
  const size_t n = s.count();
  if (n == 0 || end_ns <= begin_ns) return 0;
  // Sample i covers [mid(i-1,i), mid(i,i+1)); the first and last extend to +-infinity.
  auto lower = [&](size_t i) { return i == 0 ? INT64_MIN : (s.t_ns[i - 1] + s.t_ns[i]) / 2; };
  auto upper = [&](size_t i) { return i + 1 == n ? INT64_MAX : (s.t_ns[i] + s.t_ns[i + 1]) / 2; };
  // First sample whose interval may overlap begin.
  size_t i = static_cast<size_t>(std::upper_bound(s.t_ns.begin(), s.t_ns.end(), begin_ns) - s.t_ns.begin());
  i = i > 0 ? i - 1 : 0;
  double mj = 0;
  for (; i < n; ++i) {
    const int64_t lo = std::max(lower(i), begin_ns);
    const int64_t hi = std::min(upper(i), end_ns);
    if (lower(i) >= end_ns) break;
    if (hi > lo) mj += s.at(i, sensor) * static_cast<double>(hi - lo) * 1e-9;  // mW * s = mJ
  }
  return mj;
}

std::vector<LayerPower> summarize_layer_power(const std::vector<LayerSpan>& spans,
                                              const PowerSamples& samples,
                                              const std::vector<PowerModelPoint>& model) {
  std::map<uint32_t, LayerPower> by_layer;
  const bool sensors = samples.count() > 0;
  for (const LayerSpan& span : spans) {
    LayerPower& lp = by_layer[span.layer];
    lp.layer = span.layer;
    lp.processor = span.processor;
    lp.source = sensors ? "sensors" : "estimated";
    lp.frames += 1;
    const double ms = static_cast<double>(span.end_ns - span.begin_ns) * 1e-6;
    lp.time_ms += ms;
    if (sensors) {
      // Sensors that feed this processor; the board sensors when none does.
      std::vector<size_t> feeding;
      for (size_t k = 0; k < samples.names.size(); ++k) {
        if (samples.processors[k].find(span.processor) != std::string::npos) feeding.push_back(k);
      }
      if (feeding.empty()) {
        for (size_t k = 0; k < samples.names.size(); ++k) {
          if (samples.processors[k].empty()) feeding.push_back(k);
        }
      }
      for (size_t k : feeding) lp.total_energy_mj += integrate_mj(samples, k, span.begin_ns, span.end_ns);
    } else {
      lp.estimated = true;
      for (const PowerModelPoint& m : model) {
        if (m.processor == span.processor) lp.total_energy_mj += m.watts(1.0) * ms;  // W * ms = mJ
      }
    }
  }
  std::vector<LayerPower> result;
  for (auto& [layer, lp] : by_layer) {
    const double total_ms = lp.time_ms;
    lp.power_mw = total_ms > 0 ? lp.total_energy_mj / total_ms * 1000.0 : 0;
    lp.time_ms = total_ms / static_cast<double>(lp.frames);
    lp.energy_mj = lp.total_energy_mj / static_cast<double>(lp.frames);
    result.push_back(lp);
  }
  return result;
}

void print_power_report(std::ostream& out, const std::vector<LayerPower>& layers) {
  const bool estimated = std::any_of(layers.begin(), layers.end(), [](const LayerPower& l) { return l.estimated; });
  const bool meter = !layers.empty() && layers.front().source == "meter";
  out << "power per layer"
      << (estimated ? " (ESTIMATED with the platform's power model: no sensor)"
                    : meter ? " (meter: external meter log aligned by the GPIO tag edges)" : " (sensors)")
      << ":\n  layer proc  frames   time ms   power mW  energy mJ/frame\n";
  double total = 0;
  for (const LayerPower& l : layers) {
    out << "  " << std::setw(5) << l.layer << "    " << l.processor << std::setw(8) << l.frames
        << std::fixed << std::setprecision(3) << std::setw(10) << l.time_ms << std::setw(11)
        << std::setprecision(1) << l.power_mw << std::setw(17) << std::setprecision(3)
        << l.energy_mj << (l.estimated ? "  est." : "");
    if (meter) out << "  +-" << std::setprecision(1) << l.power_stderr_mw << " mW";
    out << "\n";
    total += l.energy_mj;
  }
  out << "  energy per frame (layers): " << std::fixed << std::setprecision(3) << total << " mJ"
      << (estimated ? " (estimated)" : "") << "\n";
}

nlohmann::json power_to_json(const std::vector<LayerPower>& layers) {
  json arr = json::array();
  for (const LayerPower& l : layers) {
    arr.push_back({{"layer", l.layer}, {"processor", std::string(1, l.processor)}, {"frames", l.frames},
                   {"time_ms", l.time_ms}, {"power_mw", l.power_mw}, {"energy_mj", l.energy_mj},
                   {"total_energy_mj", l.total_energy_mj}, {"estimated", l.estimated}, {"source", l.source}});
    if (l.source == "meter") arr.back()["power_stderr_mw"] = l.power_stderr_mw;
  }
  return arr;
}

nlohmann::json power_summary_to_json(const PowerSummary& summary) {
  double per_frame = 0;
  for (const LayerPower& l : summary.layers) per_frame += l.energy_mj;
  json j = {{"source", summary.source}, {"layers", power_to_json(summary.layers)}, {"energy_per_frame_mj", per_frame}};
  if (summary.idle_mw) j["idle_mw"] = *summary.idle_mw;
  if (summary.source == "meter") {
    j["fit_residual_mw"] = summary.fit_residual_mw;
    j["meter_samples_used"] = summary.meter_samples_used;
  }
  if (summary.meter_clock) {
    const PowerSummary::MeterClock& c = *summary.meter_clock;
    j["meter_clock"] = {{"offset_ms", c.offset_ms}, {"drift_ppm", c.drift_ppm}, {"residual_ms", c.residual_ms},
                        {"offset_uncertainty_ms", c.offset_uncertainty_ms}, {"sample_period_ms", c.sample_period_ms}, {"pin_agreement", c.pin_agreement},
                        {"edges_matched", c.edges_matched}, {"meter_edges", c.meter_edges},
                        {"host_edges", c.host_edges}};
  }
  return j;
}

void write_power_csv(const io::OutputFile& out, const PowerSamples& s) {
  std::string text = "t_ns";
  for (const std::string& n : s.names) text += "," + n + "_mW";
  text += "\n";
  char buf[64];
  for (size_t i = 0; i < s.count(); ++i) {
    text += std::to_string(s.t_ns[i]);
    for (size_t k = 0; k < s.names.size(); ++k) {
      std::snprintf(buf, sizeof buf, ",%.3f", s.at(i, k));
      text += buf;
    }
    text += "\n";
  }
  out.write(text);
}

void write_chrome_trace(const io::OutputFile& out, const std::vector<LayerSpan>& spans,
                        const PowerSamples& samples, const std::vector<DvfsEvent>& dvfs,
                        const std::vector<LayerPower>& layers, const PowerSamples& meter) {
  int64_t t0 = INT64_MAX;
  for (const LayerSpan& s : spans) t0 = std::min(t0, s.begin_ns);
  if (!samples.t_ns.empty()) t0 = std::min(t0, samples.t_ns.front());
  if (t0 == INT64_MAX) t0 = 0;
  auto us = [t0](int64_t ns) { return static_cast<double>(ns - t0) / 1000.0; };
  json events = json::array();
  std::map<char, bool> seen;
  for (const LayerSpan& s : spans) {
    if (!seen[s.processor]) {
      seen[s.processor] = true;
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", static_cast<int>(s.processor)},
                        {"args", {{"name", std::string("processor ") + s.processor}}}});
    }
    events.push_back({{"ph", "X"}, {"name", "layer " + std::to_string(s.layer)}, {"cat", "layer"},
                      {"pid", 1}, {"tid", static_cast<int>(s.processor)}, {"ts", us(s.begin_ns)},
                      {"dur", static_cast<double>(s.end_ns - s.begin_ns) / 1000.0},
                      {"args", {{"frame", s.frame}, {"layer", s.layer}}}});
  }
  const bool estimated = samples.count() == 0;
  for (size_t i = 0; i < samples.count(); ++i) {
    json args = json::object();
    for (size_t k = 0; k < samples.names.size(); ++k) args[samples.names[k] + " mW"] = samples.at(i, k);
    events.push_back({{"ph", "C"}, {"name", "power"}, {"pid", 2}, {"ts", us(samples.t_ns[i])}, {"args", args}});
  }
  if (estimated) {
    // No sensor: a counter per layer span with its estimated power.
    std::map<uint32_t, double> mw;
    for (const LayerPower& l : layers) mw[l.layer] = l.power_mw;
    for (const LayerSpan& s : spans) {
      const std::string name = std::string("estimated power ") + s.processor + " mW";
      events.push_back({{"ph", "C"}, {"name", name}, {"pid", 2}, {"ts", us(s.begin_ns)}, {"args", {{"mW", mw[s.layer]}}}});
      events.push_back({{"ph", "C"}, {"name", name}, {"pid", 2}, {"ts", us(s.end_ns)}, {"args", {{"mW", 0}}}});
    }
  }
  int64_t t_end = INT64_MIN;
  for (const LayerSpan& s : spans) t_end = std::max(t_end, s.end_ns);
  for (size_t i = 0; i < meter.count(); ++i) {
    // Only around the run: the meter's log usually starts well before co_up and ends after it.
    if (meter.t_ns[i] < t0 || (t_end != INT64_MIN && meter.t_ns[i] > t_end + 100'000'000)) continue;
    events.push_back({{"ph", "C"}, {"name", "meter"}, {"pid", 2}, {"ts", us(meter.t_ns[i])},
                      {"args", {{"meter mW", meter.at(i, 0)}}}});
  }
  for (const DvfsEvent& d : dvfs) {
    if (d.apply_ns == 0) continue;
    events.push_back({{"ph", "C"}, {"name", std::string("frequency ") + d.processor + " MHz"}, {"pid", 2},
                      {"ts", us(d.apply_ns)}, {"args", {{"MHz", static_cast<double>(d.khz) / 1000.0}}}});
    events.push_back({{"ph", "i"}, {"name", std::string("DVFS ") + d.processor + " -> level " + std::to_string(d.level + 1)},
                      {"pid", 1}, {"tid", static_cast<int>(d.processor)}, {"s", "t"}, {"ts", us(d.issue_ns)}});
  }
  // t0_ns: CLOCK_MONOTONIC of ts 0, so that the power CSV's t_ns lines up (scripts/co_up-report).
  json other = {{"power", estimated ? "estimated (power model)" : "sensors"}, {"t0_ns", t0}};
  if (meter.count() > 0) other["meter"] = "external meter, aligned by the GPIO tag edges";
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
  out.write(doc.dump());
}

}  // namespace co_up::profiler
