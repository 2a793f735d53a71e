#include "api/session_setup.h"

#include <dlfcn.h>

#include <cstdlib>

#include "core/error.h"

namespace co_up::api {
namespace {

// The directory of the shared object (libco_up) or program this code is linked into.
std::filesystem::path code_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&code_directory), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path() : file.parent_path();
}

}  // namespace

std::filesystem::path plugin_directory(const std::string& option) {
  if (!option.empty()) {
    if (!std::filesystem::is_directory(option)) {
      throw InputError("--plugins='" + option + "' is not a directory");
    }
    return option;
  }
  if (const char* env = std::getenv("CO_UP_PLUGIN_PATH"); env != nullptr && *env != '\0') return env;
  const std::filesystem::path here = code_directory();
  std::error_code ec;
  for (const char* relative : {"plugins", "co_up/plugins"}) {
    if (!here.empty() && std::filesystem::is_directory(here / relative, ec)) return here / relative;
  }
  return PluginRegistry::default_directory();
}

Platform open_platform(const std::string& file, const std::string& sysfs_root,
                       const CpuOverrides& overrides) {
  Platform platform = file.empty() ? detect_host_platform(sysfs_root) : load_platform(file);
  apply_overrides(platform, overrides);
  return platform;
}

std::vector<profiler::DvfsEvent> apply_setup_levels(power::SysfsDvfs& dvfs, const Platform& platform,
                                                    const power::DvfsSchedule& schedule,
                                                    power::DvfsPolicy policy,
                                                    const std::function<void(const std::string&)>& warn) {
  std::vector<profiler::DvfsEvent> events;
  for (const power::DvfsSetting& s : schedule.at_setup) {
    profiler::DvfsEvent e{s.domain, s.level,
                          platform.find(s.domain)->dvfs.frequencies_khz.at(static_cast<size_t>(s.level)),
                          UINT32_MAX, 0, profiler::now_ns(), 0, false, {}};
    e.error = dvfs.set_level(s.domain, s.level);
    e.apply_ns = e.error.empty() ? profiler::now_ns() : 0;
    if (!e.error.empty()) {
      if (policy == power::DvfsPolicy::kStrict) {
        throw RuntimeError(e.error + " (run as root or use --dvfs=best-effort)");
      }
      warn(e.error + "; continuing without it (--dvfs=best-effort)");
    }
    events.push_back(std::move(e));
  }
  return events;
}

std::unique_ptr<Executor> open_executor(const graph::Graph& graph, Partition partition,
                                        const Platform& platform, const PluginRegistry& plugins,
                                        ExecutorOptions options) {
  check_cores_exist(platform);
  return std::make_unique<Executor>(graph, std::move(partition), platform, plugins, std::move(options));
}

}  // namespace co_up::api
