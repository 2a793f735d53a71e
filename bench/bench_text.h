// Small helpers the benchmark programs share for timing and plain-text tables.
#pragma once

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace co_up::bench {

// Seconds on the monotonic clock.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// printf-style formatting of one number, e.g. fmt("%.2f", x).
inline std::string fmt(const char* spec, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), spec, value);
  return text;
}

// `text` padded with spaces to at least `width` characters (left-aligned table cells).
inline std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

// The non-empty items of a comma-separated option value ("a,b" -> {"a", "b"}).
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace co_up::bench
