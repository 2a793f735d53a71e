// The external meter's part of one co_up run (--meter=DEVICE live, or --meter-log=FILE read after
// the run): records the GPIO tag edges co_up drives, reads the meter, aligns its clock by those
// edges and attributes its samples to layers (power/meter_log.h, serial_meter.h,
// meter_alignment.h).
//
// Lifetime: create before the GPIO tagger and pass it sink() (it forwards to the real lines and
// keeps the edges); start() before the run; finish() after it. A failure found only after the run
// (no log file, nothing aligns) is not thrown: finish() says it in `error`, so that the run's other
// reports are still written. Threading: one thread; the tag sink is called from processor threads
// (under the tagger's mutex).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "power/gpio_tagger.h"
#include "power/meter_alignment.h"
#include "profiler/power_trace.h"

namespace co_up::power {

class SerialMeter;

struct ExternalMeterOptions {
  std::string device;    // --meter: serial device read live (115200 8N1)
  std::string log_file;  // --meter-log: saved log read after the run
  double window_ms = 0;  // --meter-window: how long each sample averages (0: instantaneous)
};

class ExternalMeter {
 public:
  // Throws InputError for inconsistent options: both sources, no GPIO tags to align by, a
  // negative window. Call it before setting anything up.
  static void validate(const ExternalMeterOptions& options, bool gpio_tags);
  // validate(), then opens the device (InputError when it cannot). `lines`: the real tag lines.
  ExternalMeter(const ExternalMeterOptions& options, bool gpio_tags, TagSink& lines);
  ~ExternalMeter();
  ExternalMeter(const ExternalMeter&) = delete;
  ExternalMeter& operator=(const ExternalMeter&) = delete;

  TagSink& sink() { return recorder_; }
  void start();

  struct Result {
    std::optional<MeterPower> power;    // empty when `error` is set
    std::string error;                  // why there is no meter power
    std::vector<std::string> notes;     // how the clock was aligned
    std::vector<std::string> warnings;  // skipped lines, a doubtful fit, undetermined layers
    profiler::PowerSamples samples;     // the meter's samples on CLOCK_MONOTONIC (for the trace)
  };
  Result finish(const std::vector<profiler::LayerSpan>& spans);

 private:
  ExternalMeterOptions options_;
  RecordingTagSink recorder_;
  std::unique_ptr<SerialMeter> serial_;
};

// finish(), then: the alignment and the per-layer table on `out`, warnings and a failure as
// "co_up: warning: ..." lines on `err` (the run's other reports still follow), the summary appended
// to `profile_power`. Returns the meter's samples for the Chrome trace (empty on failure).
profiler::PowerSamples report_meter(ExternalMeter& meter, const std::vector<profiler::LayerSpan>& spans,
                                    std::ostream& out, std::ostream& err,
                                    std::vector<profiler::PowerSummary>& profile_power);

// "meter clock: offset 48213.402 ms, drift +2890.1 ppm, 1832 of 1840 edges matched, residual
// 0.84 ms (period 2.90 ms), 99.8% of samples agree" — one line for the report.
std::string describe_fit(const MeterClockFit& fit);

}  // namespace co_up::power
