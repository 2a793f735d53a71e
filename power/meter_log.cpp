#include "power/meter_log.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/io/input_file.h"

namespace co_up::power {
namespace {

// A line longer than this is not a meter line (a wrong baud rate gives long runs of garbage).
constexpr size_t kMaxLine = 256;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool is_header(std::string_view line) {
  std::string lower(line);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("pin") != std::string::npos && lower.find("time") != std::string::npos;
}

std::string printable(std::string_view line) {
  std::string out;
  for (char c : line.substr(0, 40)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  if (line.size() > 40) out += "...";
  return out;
}

}  // namespace

bool parse_meter_line(std::string_view line, MeterSample& out) {
  const size_t a = line.find(',');
  if (a == std::string_view::npos) return false;
  const size_t b = line.find(',', a + 1);
  if (b == std::string_view::npos || line.find(',', b + 1) != std::string_view::npos) return false;
  MeterSample s;
  if (!parse_number(line.substr(0, a), s.pin) || !parse_number(line.substr(a + 1, b - a - 1), s.t_ms) ||
      !parse_number(line.substr(b + 1), s.mw)) {
    return false;
  }
  if (!std::isfinite(s.t_ms) || !std::isfinite(s.mw) || s.t_ms < 0) return false;
  out = s;
  return true;
}

double MeterLog::sample_period_ms() const {
  if (samples.size() < 2) return 0;
  std::vector<double> gaps;
  gaps.reserve(samples.size() - 1);
  for (size_t i = 1; i < samples.size(); ++i) gaps.push_back(samples[i].t_ms - samples[i - 1].t_ms);
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  const double median = gaps[gaps.size() / 2];
  // A meter faster than its stamps' resolution repeats stamps: then the mean spacing.
  return median > 0 ? median : (samples.back().t_ms - samples.front().t_ms) / static_cast<double>(samples.size() - 1);
}

MeterLogParser::MeterLogParser(std::string source) { log_.source = std::move(source); }

void MeterLogParser::feed(std::string_view bytes, int64_t received_ns) {
  if (received_ns != 0) live_ = true;
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(bytes);
      if (partial_.size() > kMaxLine) {
        // No newline for this long: count it as one malformed line and resynchronise.
        parse_line(partial_, received_ns);
        partial_.clear();
      }
      return;
    }
    if (partial_.empty()) {
      parse_line(bytes.substr(0, nl), received_ns);
    } else {
      partial_.append(bytes.substr(0, nl));
      parse_line(partial_, received_ns);
      partial_.clear();
    }
    bytes.remove_prefix(nl + 1);
  }
}

void MeterLogParser::finish() {
  if (!partial_.empty()) parse_line(partial_, 0);
  partial_.clear();
}

void MeterLogParser::parse_line(std::string_view raw, int64_t received_ns) {
  ++line_number_;
  const std::string_view line = trim(raw);
  if (line.empty() || line.front() == '#') return;
  ++log_.lines;
  MeterSample s;
  if (raw.size() > kMaxLine || !parse_meter_line(line, s)) {
    if (log_.samples.empty() && log_.malformed == 0 && is_header(line)) {
      --log_.lines;  // a column header, not data
      return;
    }
    if (log_.malformed++ == 0) {
      log_.first_malformed_line = line_number_;
      log_.first_malformed_text = printable(line);
    }
    return;
  }
  if (!log_.samples.empty() && s.t_ms < log_.samples.back().t_ms) {
    // The meter's clock went backwards: it was reset. Only the newest segment is one clock.
    log_.dropped_before_restart += log_.samples.size();
    log_.samples.clear();
    log_.received_ns.clear();
  }
  log_.samples.push_back(s);
  if (live_) log_.received_ns.push_back(received_ns);
}

MeterLog read_meter_log(const std::filesystem::path& path) {
  MeterLogParser parser(path.string());
  parser.feed(io::read_input_file(path, "meter log", io::kMaxLogBytes));
  parser.finish();
  MeterLog log = parser.take();
  check_meter_log(log);
  return log;
}

void check_meter_log(const MeterLog& log) {
  if (log.samples.empty()) {
    std::string why = log.lines == 0 ? "it has no data line"
                                     : "no line of " + std::to_string(log.lines) + " is pin,time_ms,power_mW (line " +
                                           std::to_string(log.first_malformed_line) + ": '" +
                                           log.first_malformed_text + "')";
    throw InputError("meter log '" + log.source + "': " + why +
                     "; the meter must print lines like 1,48213,2734.5 (at 115200 baud for a serial device)");
  }
  if (log.malformed * 10 > log.lines) {
    throw InputError("meter log '" + log.source + "': " + std::to_string(log.malformed) + " of " +
                     std::to_string(log.lines) + " lines are not pin,time_ms,power_mW (first: line " +
                     std::to_string(log.first_malformed_line) + ": '" + log.first_malformed_text +
                     "'); check the format, the baud rate (115200) and the device");
  }
}

std::string describe_skipped(const MeterLog& log) {
  std::string text;
  if (log.malformed > 0) {
    text = "skipped " + std::to_string(log.malformed) + " malformed line(s) of " + std::to_string(log.lines) +
           " (first: line " + std::to_string(log.first_malformed_line) + ": '" + log.first_malformed_text + "')";
  }
  if (log.dropped_before_restart > 0) {
    if (!text.empty()) text += "; ";
    text += "dropped " + std::to_string(log.dropped_before_restart) +
            " sample(s) before the meter's clock went backwards (a meter reset)";
  }
  return text;
}

}  // namespace co_up::power
