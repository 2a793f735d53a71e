// An external power meter's log (ARM-CO-UP §4.2, Figure 10): an Arduino samples the board's power
// and the GPIO tag line(s) co_up drives, and prints one CSV line per sample over its serial port:
//
//   pin,time_ms,power_mW        e.g.  1,48213,2734.5
//
// pin: the tag line state it read (in "code" mode the lines' value, bit i = line i); time_ms: the
// meter's own clock (Arduino millis() or micros()/1000: integer or decimal); power_mW: the sample.
//
// Malformed lines are skipped and counted, not fatal: a serial log opened mid-stream starts with
// half a line, and sketches print banners ("INA219 ready") at reset. A header line naming the
// columns, blank lines and '#' comments are ignored without being counted. It is an error (one
// line, naming the first bad line) when no line parses, or when more than 10% of the lines are
// malformed: then the format, the baud rate or the device is wrong, and aligning garbage would
// only hide that. Time going backwards means the meter restarted (opening an Arduino's port
// resets it); samples before the restart are dropped and counted.
//
// Threading: a MeterLogParser is used by one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace co_up::power {

struct MeterSample {
  unsigned pin = 0;
  double t_ms = 0;  // meter clock
  double mw = 0;
};

struct MeterLog {
  std::string source;  // file or device name, for messages
  std::vector<MeterSample> samples;  // in meter time order
  // Live reading only: CLOCK_MONOTONIC ns at which each sample's line arrived (same length as
  // samples); empty for a saved file. Bounds the clock offset: a line arrives after it was sampled.
  std::vector<int64_t> received_ns;
  uint64_t lines = 0;              // non-blank, non-comment lines seen
  uint64_t malformed = 0;          // skipped as malformed
  uint64_t first_malformed_line = 0;  // 1-based; 0: none
  std::string first_malformed_text;
  uint64_t dropped_before_restart = 0;  // samples before the meter's clock went backwards

  // Median spacing of the samples (ms; the mean when most share a stamp); 0 with fewer than two.
  double sample_period_ms() const;
};

class MeterLogParser {
 public:
  explicit MeterLogParser(std::string source);
  // Appends bytes (any split: lines may straddle calls). received_ns: the arrival time of these
  // bytes on CLOCK_MONOTONIC for a live device, 0 for a file.
  void feed(std::string_view bytes, int64_t received_ns = 0);
  // Parses a last line that has no newline. Call once, at the end.
  void finish();
  const MeterLog& log() const { return log_; }
  MeterLog take() { return std::move(log_); }

 private:
  void parse_line(std::string_view line, int64_t received_ns);
  MeterLog log_;
  std::string partial_;
  uint64_t line_number_ = 0;
  bool live_ = false;
};

// Parses one line; false when it is not three numbers "pin,time_ms,power_mW" (spaces around
// fields and a trailing '\r' allowed).
bool parse_meter_line(std::string_view line, MeterSample& out);

// Reads a saved log. Throws InputError when the file cannot be read or fails check_meter_log.
MeterLog read_meter_log(const std::filesystem::path& path);

// Throws InputError when the log has no sample or more than 10% malformed lines (see above).
void check_meter_log(const MeterLog& log);

// "skipped 3 malformed line(s) of 4211 (first: line 1: 'ting...')" or "" when none were skipped.
std::string describe_skipped(const MeterLog& log);

}  // namespace co_up::power
