// Text of user input quoted in error messages: counted in characters (UTF-8 code points, what a
// user sees), and cut when long, so that one line stays one readable line.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace co_up {

// `text` with more than `limit` characters cut to its first `limit` and "... (N <unit>)".
inline std::string shorten_for_message(const std::string& text, size_t limit = 40,
                                       const std::string& unit = "characters") {
  size_t count = 0, cut = text.size();
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80 && i != 0) continue;
    if (count == limit) cut = i;
    ++count;
  }
  if (count <= limit) return text;
  return text.substr(0, cut) + "... (" + std::to_string(count) + " " + unit + ")";
}

// An order string for messages: 'BBLL', or its first 40 letters and "... (N letters)".
inline std::string order_for_message(const std::string& order) {
  std::string quoted(1, '\'');  // appended, not "'" + ...: GCC 12 warns falsely on that form
  quoted += shorten_for_message(order, 40, "letters");
  quoted += '\'';
  return quoted;
}

// `text` on one line: newline, CR, tab and other control characters escaped ("\n", "\x1b"),
// so that every error stays one line wherever it is printed (the CLI, the public API).
inline std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

// `s` as one POSIX shell word: unchanged when it holds only safe characters, else single-quoted,
// so printed command lines can be pasted into a shell as they are.
inline std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=,:+@%").find(c) != std::string_view::npos;
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

// `value` formatted by the printf conversion `spec` ("%.2f", "%g"), for reports and tables.
inline std::string format_number(const char* spec, double value) {
  char text[64];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

}  // namespace co_up
