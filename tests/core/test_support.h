// Shared helpers for runtime tests: the plugins of this build and this host's platform.
#pragma once

#include <cstdlib>
#include <string>

#include "core/platform.h"
#include "core/plugin_registry.h"

namespace co_up::testing {

inline const PluginRegistry& build_plugins() {
  static const PluginRegistry registry = [] {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    return PluginRegistry::load_directory(dir != nullptr ? dir : "plugins");
  }();
  return registry;
}

// B = first half of the cores, L = second half (core 0 / core 1 on a 2-core machine).
inline Platform host_platform() { return detect_host_platform("/nonexistent-sysfs"); }

}  // namespace co_up::testing
