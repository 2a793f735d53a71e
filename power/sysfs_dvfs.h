// SysfsDvfs: sets processor clocks through sysfs and puts everything back (ARCHITECTURE.md: every
// change to the machine is an RAII object whose destructor restores it).
//
// CPU clusters go through cpufreq policies: the userspace governor + scaling_setspeed when the
// policy offers both, else scaling_min_freq/scaling_max_freq clamped to the level (kHz). GPUs go
// through devfreq: the userspace governor + userspace/set_freq, else min_freq/max_freq (Hz). The
// first write to a node saves what it changes (governor, setspeed, min, max); restore() writes the
// saved values back, nodes in reverse order of first use — from the destructor, so every exit
// path that unwinds (normal end, error, an orderly SIGINT/SIGTERM stop) restores, and from a
// std::terminate handler (install_terminate_restore) for exceptions nothing catches.
//
// Paths are `sysfs_root / node / file`; --sysfs-root points tests at a simulated tree.
// Threading: set_level and restore may be called from any thread; one mutex serialises them.
// Errors are values: set_level returns an empty string or the message, never throws.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/platform.h"

namespace co_up::power {

enum class DvfsPolicy { kStrict, kBestEffort };
// "strict" or "best-effort"; throws InputError otherwise.
DvfsPolicy parse_dvfs_policy(const std::string& text);

struct SysfsWrite {
  std::string path;  // full path, root included
  std::string value;
  bool ok = true;
};

// Writes `value` to `path` (O_WRONLY|O_TRUNC, one write). Returns "" or
// "failed to write V to P: EACCES (Permission denied)".
std::string write_sysfs(const std::filesystem::path& path, const std::string& value);

class SysfsDvfs {
 public:
  SysfsDvfs(const Platform& platform, std::filesystem::path sysfs_root);
  ~SysfsDvfs();
  SysfsDvfs(const SysfsDvfs&) = delete;
  SysfsDvfs& operator=(const SysfsDvfs&) = delete;

  // The DVFS table of `letter`, or nullptr when the platform declares none.
  const DvfsSpec* spec(char letter) const;
  // Sets `letter` to `level` (0-based index into its table, checked by the caller). Returns ""
  // or what failed; on failure nothing more is written for this request.
  std::string set_level(char letter, int level);
  // The level last set successfully, -1 if none.
  int level(char letter) const;
  // Writes every saved value back; idempotent. Returns the failures (each also logged).
  std::vector<std::string> restore();

  // Every write in order, restores included (tests check file, value, order).
  std::vector<SysfsWrite> writes() const;

 private:
  struct Node;
  std::string prepare(Node& node);
  std::string write(const std::filesystem::path& path, const std::string& value);

  std::filesystem::path root_;
  std::vector<std::pair<char, DvfsSpec>> specs_;
  mutable std::mutex mutex_;
  std::vector<Node*> touched_;  // first-use order
  std::vector<std::unique_ptr<Node>> nodes_;
  int levels_[26];
  std::vector<SysfsWrite> writes_;
};

// Restores every live SysfsDvfs, then calls the previous terminate handler. Call once, early.
void install_terminate_restore();

}  // namespace co_up::power
