#include "core/bound_processor.h"

#include <utility>

#include "core/affinity.h"
#include "core/error.h"
#include "core/message_text.h"

namespace co_up {

std::shared_ptr<const Plugin> find_backend_plugin(const ProcessorSpec& spec,
                                                  const PluginRegistry& plugins) {
  for (const std::string& backend : spec.backends) {
    if (std::shared_ptr<const Plugin> plugin = plugins.find(backend)) return plugin;
  }
  return nullptr;
}

std::string backend_choices(const ProcessorSpec& spec) {
  std::string wanted;
  for (const std::string& b : spec.backends) wanted += (wanted.empty() ? "'" : " or '") + b + "'";
  return wanted;
}

BoundProcessor bind_processor(char letter, const std::string& order, const Platform& platform,
                              const PluginRegistry& plugins, const std::string& context) {
  const ProcessorSpec* spec = platform.find(letter);
  if (spec == nullptr) {
    throw InputError("order " + order_for_message(order) + " uses '" + std::string(1, letter) +
                     "', but platform '" + platform.name + "' defines only " +
                     platform.letters() + " (see --list-devices)");
  }
  std::shared_ptr<const Plugin> plugin = find_backend_plugin(*spec, plugins);
  if (!plugin) {
    throw InputError("processor '" + std::string(1, letter) + "' (" + spec->name +
                     ") needs backend plugin " + backend_choices(*spec) +
                     ", which is not available in '" + plugins.directory().string() + "' [" +
                     plugins.summary() +
                     "]; map its layers to another processor or install the plugin");
  }
  BoundProcessor p;
  p.letter = letter;
  p.spec = spec;
  p.backend = plugin->name();
  p.host_cores = platform.host_cores(letter);
  std::vector<std::pair<std::string, std::string>> options = {
      {"processor", std::string(1, letter)},
      {"cores", format_cores(p.host_cores)},
      {"threads", std::to_string(spec->is_cpu() ? spec->threads : 1)},
  };
  options.insert(options.end(), spec->options.begin(), spec->options.end());
  p.device = Device::create(plugin, options,
                            context + "creating device '" + std::string(1, letter) +
                                "' on backend '" + p.backend + "'");
  return p;
}

}  // namespace co_up
