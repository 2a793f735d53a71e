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

}  // namespace co_up
