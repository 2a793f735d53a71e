#include "core/calibration.h"

#include <memory>

#include "core/bound_processor.h"

namespace co_up {

std::string set_calibration_frames(Platform& platform, const PluginRegistry& plugins, int frames) {
  std::string letters;
  for (ProcessorSpec& p : platform.processors) {
    const std::shared_ptr<const Plugin> plugin = find_backend_plugin(p, plugins);
    if (!plugin || plugin->name() != "npu-int8") continue;
    letters += p.letter;
    std::erase_if(p.options, [](const auto& kv) { return kv.first == "calibration_frames"; });
    p.options.emplace_back("calibration_frames", std::to_string(frames));
  }
  return letters;
}

}  // namespace co_up
