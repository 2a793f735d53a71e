// BoundProcessor: a processor letter bound to its backend plugin and device, as every run binds
// it — the first backend of the letter's platform entry whose plugin loaded, with the device
// options "processor", "cores", "threads" and the platform entry's own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/platform.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"

namespace co_up {

// The plugin serving `spec`: the first of its backends whose plugin loaded; nullptr when none did.
std::shared_ptr<const Plugin> find_backend_plugin(const ProcessorSpec& spec,
                                                  const PluginRegistry& plugins);
// The processor's backends for messages: "'cpu-xnnpack' or 'cpu-reference'".
std::string backend_choices(const ProcessorSpec& spec);

struct BoundProcessor {
  char letter = 0;
  const ProcessorSpec* spec = nullptr;  // points into the platform it was bound from
  std::string backend;                  // the plugin's name
  std::shared_ptr<Device> device;
  std::vector<int> host_cores;
};

// Binds `letter` of `order` (named in messages). `context` prefixes the device-creation error
// context ("" for a run). Throws InputError for a letter the platform lacks or a processor whose
// plugins all failed to load (the message says what to do); device errors propagate.
BoundProcessor bind_processor(char letter, const std::string& order, const Platform& platform,
                              const PluginRegistry& plugins, const std::string& context = "");

}  // namespace co_up
