// Option values as the command line and the library's SessionOptions both read them, so a value
// refused by either is refused with the same words.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>

#include "core/error.h"

namespace co_up {

// `value` of option `name` as an integer in [min, max]; InputError naming the option otherwise.
inline int64_t parse_int_option(const std::string& name, const std::string& value, int64_t min,
                                int64_t max) {
  int64_t result = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, result);
  if (ec != std::errc() || ptr != end || value.empty()) {
    throw InputError("--" + name + "='" + value + "' is not an integer");
  }
  if (result < min || result > max) {
    throw InputError("--" + name + "=" + value + " is out of range (" + std::to_string(min) +
                     ".." + std::to_string(max) + ")");
  }
  return result;
}

// `value` of option `name` as milliseconds in [0, max]; NaN and infinities are refused too.
inline double parse_milliseconds_option(const std::string& name, const std::string& value, double max) {
  double ms = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, ms);
  if (ec != std::errc() || ptr != end || !(ms >= 0 && ms <= max)) {
    throw InputError("--" + name + "='" + value + "' must be milliseconds, 0 to " +
                     std::to_string(static_cast<int>(max)) + " (0: instantaneous samples)");
  }
  return ms;
}

// `value` of option `name` as a CPU cluster: B (big) or L (LITTLE).
inline char parse_cluster_option(const std::string& name, const std::string& value) {
  if (value != "B" && value != "L") {
    throw InputError("--" + name + "='" + value + "' must be B (big) or L (LITTLE)");
  }
  return value[0];
}

// `value` of option `name` as one processor letter, A to Z.
inline char parse_processor_letter_option(const std::string& name, const std::string& value) {
  if (value.size() != 1 || value[0] < 'A' || value[0] > 'Z') {
    throw InputError("--" + name + "='" + value + "' must be one processor letter such as B, L or G");
  }
  return value[0];
}

}  // namespace co_up
