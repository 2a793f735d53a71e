// The benchmark programs' command-line options, read and refused with the same words as co_up's
// own options (core/option_value.h), so `--frames=abc` is one line and exit 2 in every bench.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "core/option_value.h"

namespace co_up::bench {

// One argument: "--name=value", "--flag", or a positional word (empty name).
struct BenchOption {
  std::string text;   // as given
  std::string name;   // without the leading "--"
  std::string value;  // after the first '='
  bool has_value = false;

  bool is(const char* option) const { return name == option; }

  // The value, which must be given and not empty.
  const std::string& string() const {
    if (!has_value || value.empty()) throw InputError("--" + name + " needs a value (--" + name + "=...)");
    return value;
  }

  // The value as an integer in [min, max].
  int64_t integer(int64_t min, int64_t max) const { return parse_int_option(name, string(), min, max); }

  // The value as a finite real number in [min, max].
  double real(double min, double max) const {
    const std::string& v = string();
    double result = 0;
    const char* end = v.data() + v.size();
    const auto [ptr, ec] = std::from_chars(v.data(), end, result);
    if (ec != std::errc() || ptr != end || !std::isfinite(result)) {
      throw InputError("--" + name + "='" + v + "' is not a number");
    }
    if (result < min || result > max) {
      std::ostringstream range;
      range << min << ".." << max;
      throw InputError("--" + name + "=" + v + " is out of range (" + range.str() + ")");
    }
    return result;
  }

  // The value as a comma-separated list; empty items are dropped, an empty list is refused.
  std::vector<std::string> list() const {
    std::vector<std::string> items;
    std::stringstream in(string());
    for (std::string item; std::getline(in, item, ',');) {
      if (!item.empty()) items.push_back(item);
    }
    if (items.empty()) throw InputError("--" + name + "='" + value + "' names nothing");
    return items;
  }

  [[noreturn]] void unknown() const { throw InputError("unknown option '" + text + "' (see --help)"); }
};

// argv[1..] as options, in order.
inline std::vector<BenchOption> read_options(int argc, char** argv) {
  std::vector<BenchOption> options;
  for (int i = 1; i < argc; ++i) {
    BenchOption o;
    o.text = argv[i];
    if (o.text.rfind("--", 0) == 0) {
      const size_t eq = o.text.find('=');
      o.name = o.text.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      o.has_value = eq != std::string::npos;
      if (o.has_value) o.value = o.text.substr(eq + 1);
    } else if (o.text == "-h") {
      o.name = "help";
    }
    options.push_back(std::move(o));
  }
  return options;
}

}  // namespace co_up::bench
