// PluginRegistry: finds backend plugins in a directory and loads them with dlopen.
//
// Every *.so file in the directory is tried, in name order. A file that is not a co_up plugin,
// speaks another ABI major, or fails to load is *refused*; a plugin whose hardware is absent
// *declines* (CO_UP_STATUS_NO_DEVICE). Neither stops the others from loading, and neither is
// silent: records() keeps every outcome with its reason for --list-plugins and error messages.
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
