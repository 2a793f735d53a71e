// PluginRegistry: finds backend plugins in a directory and loads them with dlopen.
//
// Every *.so entry in the directory is tried, in name order. Before dlopen, check_plugin_file()
// (core/elf_check.h) refuses what is not a regular file or not a sane ELF shared object for this
// architecture (a partial copy, an arm64 .so on x86-64, a FIFO), so that such a file can neither
// crash nor block co_up. A file refused there, one that is not a co_up plugin, speaks another ABI
// major, or fails to load is *refused*; a plugin whose hardware is absent *declines*
// (CO_UP_STATUS_NO_DEVICE). Neither stops the others from loading, and neither is silent:
// records() keeps every outcome with its reason for --list-plugins and error messages.
//
// Loading runs each plugin's static initialisers, co_up_plugin_get_api and factory_create (the
// latter two must not start hardware beyond finding it: devices are created later, and only for
// processors a run uses), under a SignalDispositionGuard (core/signal_dispositions.h), so a plugin
// that installs signal handlers while loading does not keep them.
//
// Directory: --plugins=DIR, else $CO_UP_PLUGIN_PATH, else plugins/ next to the executable (a build
// tree), else lib/co_up/plugins/ of the install prefix (an installed tree: bin/co_up).
//
// ABI versions: a plugin is refused when its major differs from this co_up's; any minor loads
// (older ones are read as far as their struct_size reaches, newer ones up to what this co_up
// knows). Every function-table entry but compiled_bind_input is required.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/plugin.h"

namespace co_up {

struct PluginRecord {
  enum class Outcome { kLoaded, kDeclined, kRefused };
  std::filesystem::path path;
  Outcome outcome = Outcome::kRefused;
  std::string backend;  // the plugin's name, when it got that far
  std::string version;
  std::string description;
  std::string reason;  // why refused or declined
  // Signals whose disposition the plugin changed while it loaded (dlopen, get_api,
  // factory_create), each put back as co_up had it (see core/signal_dispositions.h); ascending.
  std::vector<int> restored_signals;
};

const char* outcome_name(PluginRecord::Outcome outcome);

class PluginRegistry {
 public:
  // A missing directory is not an error here (records() is then empty); using a backend is.
  static PluginRegistry load_directory(const std::filesystem::path& directory);
  // The directory co_up uses when --plugins is not given.
  static std::filesystem::path default_directory();

  // nullptr when no loaded plugin has that backend name.
  std::shared_ptr<const Plugin> find(const std::string& backend) const;
  const std::vector<PluginRecord>& records() const { return records_; }
  const std::filesystem::path& directory() const { return directory_; }
  // "cpu-reference (loaded), opencl (declined: no OpenCL platform)" for error messages.
  std::string summary() const;

 private:
  std::filesystem::path directory_;
  std::vector<PluginRecord> records_;
  std::vector<std::shared_ptr<const Plugin>> plugins_;
};

}  // namespace co_up
