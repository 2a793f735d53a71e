// The steps of opening a network for a run that the public API's Session and the co_up command
// line share, so both find plugins, read platforms, set DVFS levels and build the Executor alike
// (same behaviour, same error messages). Internal: not installed.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/partition.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"
#include "power/dvfs_schedule.h"
#include "power/sysfs_dvfs.h"
#include "profiler/run_profile.h"

namespace co_up::api {

// `option` (--plugins; InputError when it is not a directory), else $CO_UP_PLUGIN_PATH, else
// plugins/ beside the library or program holding this code (a build tree), else co_up/plugins/
// beside it (an installed libdir), else PluginRegistry::default_directory().
std::filesystem::path plugin_directory(const std::string& option);

// --platform=FILE, or the host platform read under `sysfs_root`; then the CPU overrides.
Platform open_platform(const std::string& file, const std::string& sysfs_root,
                       const CpuOverrides& overrides);

// Sets the schedule's setup-time levels, one profile event each. A failed write throws
// RuntimeError (with what to do) under kStrict; under kBestEffort it goes to `warn`.
std::vector<profiler::DvfsEvent> apply_setup_levels(power::SysfsDvfs& dvfs, const Platform& platform,
                                                    const power::DvfsSchedule& schedule,
                                                    power::DvfsPolicy policy,
                                                    const std::function<void(const std::string&)>& warn);

// The Executor of `partition`: the platform's cores checked, one device per letter, every
// sub-graph compiled. `graph` must outlive it.
std::unique_ptr<Executor> open_executor(const graph::Graph& graph, Partition partition,
                                        const Platform& platform, const PluginRegistry& plugins,
                                        ExecutorOptions options);

}  // namespace co_up::api
