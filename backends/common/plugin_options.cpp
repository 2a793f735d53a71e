#include "plugin_options.h"

#include <algorithm>

namespace co_up::backends {

bool parse_cpu_device_option(std::string_view key, std::string_view value,
                             CpuDeviceOptions& out) {
  if (key == "processor") {
    if (value.size() != 1 ||
        !((value[0] >= 'A' && value[0] <= 'Z') || (value[0] >= 'a' && value[0] <= 'z'))) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "option processor='" + std::string(value) + "' must be one letter (e.g. B)");
    }
    out.processor = value[0];
  } else if (key == "cores") {
    out.cores = parse_cores(value);
  } else if (key == "threads") {
    // At most 4 digits, so std::stoi cannot overflow.
    if (value.empty() || value.size() > 4 ||
        value.find_first_not_of("0123456789") != std::string_view::npos ||
        std::stoi(std::string(value)) < 1) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "option threads='" + std::string(value) + "' must be an integer >= 1");
    }
    out.threads = std::stoi(std::string(value));
  } else if (key == "pin") {
    if (value != "on" && value != "off") {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "option pin='" + std::string(value) + "' must be 'on' or 'off'");
    }
    out.pin = value == "on";
  } else {
    return false;
  }
  return true;
}

std::vector<int> parse_cores(std::string_view text) {
  std::vector<int> cores;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    if (item.empty() || item.size() > 6 ||
        item.find_first_not_of("0123456789") != std::string_view::npos) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "option cores='" + std::string(text) +
               "' is not a comma-separated list of CPU ids (e.g. cores=0,1)");
    }
    const int core = std::stoi(std::string(item));
    for (int c : cores) {
      if (c == core) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, "option cores='" + std::string(text) +
                                                "' lists CPU " + std::to_string(core) + " twice");
      }
    }
    cores.push_back(core);
    pos = comma + 1;
  }
  return cores;
}

}  // namespace co_up::backends
