// Device options as the runtime passes them to device_create (key/value strings), and the ones
// every CPU backend shares: "processor" (one letter), "cores" (comma-separated CPU ids),
// "threads", "pin" (on/off). Keys a parser does not know are left to the backend, and unknown
// ones are ignored, as the ABI asks.
//
// Parsers throw PluginError(INVALID_ARGUMENT) naming the option and the accepted form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "co_up/plugin_abi.h"
#include "plugin_status.h"

namespace co_up::backends {

// Calls `handle(key, value)` (both std::string_view) for each option in order.
template <typename Handle>
void for_each_option(const co_up_option* options, uint32_t option_count, Handle&& handle) {
  for (uint32_t i = 0; i < option_count; ++i) {
    if (!options || !options[i].key || !options[i].value) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           "device option " + std::to_string(i) + " has a NULL key or value");
    }
    handle(std::string_view(options[i].key), std::string_view(options[i].value));
  }
}

struct CpuDeviceOptions {
  char processor = '?';
  std::vector<int> cores;      // empty: no restriction
  std::optional<int> threads;  // unset: one per core (thread_count)
  bool pin = true;             // pin workers to `cores`

  int thread_count() const {
    if (threads) return *threads;
    return cores.empty() ? 1 : static_cast<int>(cores.size());
  }
};

// Parses one of the shared CPU options into `out`; returns false, changing nothing, for any
// other key.
bool parse_cpu_device_option(std::string_view key, std::string_view value,
                             CpuDeviceOptions& out);

// "0,2,3" -> {0, 2, 3}; no blanks, no ranges, no CPU twice.
std::vector<int> parse_cores(std::string_view text);

}  // namespace co_up::backends
