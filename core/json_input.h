// Reading JSON that users write (platform files, layer profiles, --preprocess files): one rule for
// every reader, so that no number is wrapped, truncated or rounded on the way in.
//
//   parse_json      the whole text; a syntax error or a number too large for a double is one
//                   InputError "<origin>: invalid JSON at line L, column C: <what> ..." (the
//                   offending token shortened).
//   json_integer    a JSON integer (1.9, 1e3 and "4" are not) within [min, max];
//   json_number     any finite JSON number within [min, max].
// Both throw InputError "<where> = <value as written> is not <what> (<min>..<max>)" — `where`
// names the file and the key path, e.g. platform 'x.json': "processors"[0]."cores"[0]. Values are
// shown as JSON writes them, shortened beyond 40 characters.
//
// Header-only (nlohmann_json is): graph, planner and core readers all use it.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/message_text.h"

namespace co_up {

// The key path of `key` inside `parent`: "processors"[0] + "cores" -> "processors"[0]."cores".
inline std::string json_key(const std::string& parent, const std::string& key) {
  return (parent.empty() ? "" : parent + ".") + "\"" + key + "\"";
}
inline std::string json_index(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

inline std::string json_shown(const nlohmann::json& v) { return shorten_for_message(v.dump()); }

// nlohmann's message without its "[json.exception.type_error.302] " prefix.
inline std::string json_error_text(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const size_t close = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && close != std::string::npos ? what.substr(close + 2) : what;
}

namespace json_detail {

inline std::string range_text(double min, double max) {
  const auto text = [](double v) {
    if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
    return nlohmann::json(v).dump();
  };
  if (std::isinf(max)) return ">= " + text(min);
  return text(min) + ".." + text(max);
}

[[noreturn]] inline void refuse(const std::string& where, const nlohmann::json& v,
                                const std::string& problem, const std::string& what,
                                const std::string& range) {
  std::string message = where + " = " + json_shown(v) + " ";
  if (problem.empty()) {  // out of range
    message += what.empty() ? (range.rfind(">=", 0) == 0 ? "must be " + range : "is outside " + range)
                            : "is not " + what + " (" + range + ")";
  } else {
    message += problem + (what.empty() ? " (" + range + ")" : " (" + what + ", " + range + ")");
  }
  throw InputError(message);
}

// Records where nlohmann's parser stopped, for a message with line and column.
struct ErrorSax : nlohmann::json_sax<nlohmann::json> {
  size_t position = 0;
  std::string token, what;
  bool overflow = false;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t pos, const std::string& last_token,
                   const nlohmann::json::exception& ex) override {
    position = pos;
    token = last_token;
    overflow = ex.id == 406;
    what = ex.what();
    return false;
  }
};

}  // namespace json_detail

inline nlohmann::json parse_json(const std::string& text, const std::string& origin) {
  json_detail::ErrorSax sax;
  if (!nlohmann::json::sax_parse(text, &sax)) {
    // Where the offending token starts (an overflowing number) or where reading stopped.
    size_t at = sax.position;
    if (sax.overflow && at >= sax.token.size()) at -= sax.token.size();
    at = std::min(at, text.size());
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < at || (sax.overflow && i < at); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    std::string what;
    if (sax.overflow) {
      what = "number " + shorten_for_message(sax.token) + " is too large";
    } else {
      // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error while
      // parsing value - invalid literal; last read: 'tru x'": keep what it says, shorten the token.
      what = sax.what;
      const size_t colon = what.find(": ");
      if (what.rfind("[json.exception", 0) == 0 && colon != std::string::npos) what = what.substr(colon + 2);
      const size_t last = what.find("; last read: '");
      if (last != std::string::npos) what = what.substr(0, last);
      if (!sax.token.empty()) what += " (at '" + shorten_for_message(sax.token, 20) + "')";
    }
    throw InputError(origin + ": not valid JSON at line " + std::to_string(line) + ", column " +
                     std::to_string(column) + ": " + what);
  }
  return nlohmann::json::parse(text);
}

inline int64_t json_integer(const nlohmann::json& v, const std::string& where, int64_t min,
                            int64_t max, const std::string& what = "") {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  if (!v.is_number_integer()) {
    json_detail::refuse(where, v, v.is_number() ? "is not an integer" : "must be an integer", what,
                        range);
  }
  bool outside = false;
  if (v.is_number_unsigned()) {  // nlohmann reads every non-negative integer as unsigned
    const uint64_t u = v.get<uint64_t>();
    outside = max < 0 || u > static_cast<uint64_t>(max) || (min > 0 && u < static_cast<uint64_t>(min));
  } else {
    const int64_t s = v.get<int64_t>();
    outside = s < min || s > max;
  }
  if (outside) json_detail::refuse(where, v, "", what, range);
  return v.get<int64_t>();
}

inline double json_number(const nlohmann::json& v, const std::string& where, double min,
                          double max = std::numeric_limits<double>::infinity(),
                          const std::string& what = "") {
  const std::string range = json_detail::range_text(min, max);
  if (!v.is_number()) json_detail::refuse(where, v, "must be a number", what, range);
  const double value = v.get<double>();
  if (!std::isfinite(value) || value < min || value > max) json_detail::refuse(where, v, "", what, range);
  return value;
}

}  // namespace co_up
