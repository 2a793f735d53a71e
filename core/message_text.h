// Text of user input quoted in error messages: counted in characters (UTF-8 code points, what a
// user sees), and cut when long, so that one line stays one readable line.
#pragma once

#include <cstddef>
#include <string>

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

}  // namespace co_up
