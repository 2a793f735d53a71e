// The npu-int8 backend's calibration: it runs each compiled sub-graph's first frames in f32 to
// calibrate its int8 activations, as many as its device option "calibration_frames" says.
#pragma once

#include <string>

#include "core/platform.h"
#include "core/plugin_registry.h"

namespace co_up {

// Processors of `platform` served by npu-int8 (the first loaded backend, as the Executor picks):
// sets their device option "calibration_frames" to `frames` (a run's --calibration) and returns
// their letters.
std::string set_calibration_frames(Platform& platform, const PluginRegistry& plugins, int frames);

}  // namespace co_up
