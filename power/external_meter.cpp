#include "power/external_meter.h"

#include <cstdio>
#include <ostream>

#include "core/error.h"
#include "power/serial_meter.h"

namespace co_up::power {

void ExternalMeter::validate(const ExternalMeterOptions& options, bool gpio_tags) {
  if (!options.device.empty() && !options.log_file.empty()) {
    throw InputError("--meter and --meter-log both given; read the meter live (--meter=DEVICE) or from a saved "
                     "log (--meter-log=FILE)");
  }
  if (!gpio_tags) {
    throw InputError(std::string(options.device.empty() ? "--meter-log" : "--meter") +
                     " needs --gpio-tags: the meter's samples are aligned to co_up's clock by the tag edges");
  }
  if (options.window_ms < 0) throw InputError("--meter-window must be >= 0 ms");
}

ExternalMeter::ExternalMeter(const ExternalMeterOptions& options, bool gpio_tags, TagSink& lines)
    : options_(options), recorder_(&lines) {
  validate(options_, gpio_tags);
  if (!options_.device.empty()) serial_ = std::make_unique<SerialMeter>(options_.device);
}

ExternalMeter::~ExternalMeter() = default;

void ExternalMeter::start() {
  if (serial_) serial_->start();
}

ExternalMeter::Result ExternalMeter::finish(const std::vector<profiler::LayerSpan>& spans) {
  Result result;
  try {
    MeterLog log;
    if (serial_) {
      log = serial_->stop();
      if (!serial_->error().empty()) result.warnings.push_back(serial_->error());
      check_meter_log(log);
    } else {
      log = read_meter_log(options_.log_file);
    }
    if (const std::string skipped = describe_skipped(log); !skipped.empty()) {
      result.warnings.push_back("meter log '" + log.source + "': " + skipped);
    }
    const MeterClockFit fit = align_meter_clock(log, recorder_.edges());
    result.notes.push_back(describe_fit(fit));
    if (!fit.warning.empty()) result.warnings.push_back("meter clock: " + fit.warning);
    result.samples.names = {"meter"};
    result.samples.processors = {""};
    for (const MeterSample& x : log.samples) {
      result.samples.t_ns.push_back(fit.to_host_ns(x.t_ms));
      result.samples.mw.push_back(x.mw);
    }
    result.power = attribute_meter_power(log, fit, spans, options_.window_ms);
    if (!result.power->undetermined.empty()) {
      std::string layers;
      for (uint32_t l : result.power->undetermined) layers += (layers.empty() ? "" : ",") + std::to_string(l);
      result.warnings.push_back("meter: no power for layer(s) " + layers +
                             " (no sample resolved them; run more frames)");
    }
  } catch (const std::exception& e) {
    result.power.reset();
    result.error = e.what();
  }
  return result;
}

profiler::PowerSamples report_meter(ExternalMeter& meter, const std::vector<profiler::LayerSpan>& spans,
                                    std::ostream& out, std::ostream& err,
                                    std::vector<profiler::PowerSummary>& profile_power) {
  ExternalMeter::Result result = meter.finish(spans);
  for (const std::string& w : result.warnings) err << "co_up: warning: " << w << "\n";
  if (!result.power) {
    err << "co_up: warning: no power from the meter: " << result.error << "\n";
    return {};
  }
  for (const std::string& note : result.notes) out << note << "\n";
  profiler::print_power_report(out, result.power->summary.layers);
  if (result.power->summary.idle_mw) out << "  idle (no layer running): " << *result.power->summary.idle_mw << " mW\n";
  profile_power.push_back(std::move(result.power->summary));
  return std::move(result.samples);
}

std::string describe_fit(const MeterClockFit& fit) {
  char text[256];
  std::snprintf(text, sizeof text,
                "meter clock: offset %.3f ms, drift %+.1f ppm, +-%.3f ms; %llu of %llu edges matched, residual "
                "%.3f ms (sample period %.3f ms); %.1f%% of samples agree with the tags",
                fit.offset_ms, fit.drift_ppm(), fit.offset_uncertainty_ms,
                static_cast<unsigned long long>(fit.edges_matched), static_cast<unsigned long long>(fit.meter_edges),
                fit.residual_ms, fit.sample_period_ms, fit.pin_agreement * 100);
  return text;
}

}  // namespace co_up::power
