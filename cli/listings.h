// co_up's listings (--list-layers, --list-constants, --list-plugins, --list-devices,
// --list-frequencies): what a network, a plugin directory and a platform hold, on std::cout.
#pragma once

#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"

namespace co_up::cli {

void list_layers(const graph::Graph& g, bool constants);
void list_plugins(const PluginRegistry& registry);
void list_devices(const Platform& platform, const PluginRegistry& registry);
void list_frequencies(const Platform& platform);

}  // namespace co_up::cli
