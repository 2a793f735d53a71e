// SysfsDvfs: sets processor clocks through sysfs and puts everything back (ARCHITECTURE.md: every
// change to the machine is an RAII object whose destructor restores it).
//
// CPU clusters go through cpufreq policies: the userspace governor + scaling_setspeed when the
// policy offers both, else scaling_min_freq/scaling_max_freq clamped to the level (kHz). GPUs go
// through devfreq: the userspace governor + userspace/set_freq, else min_freq/max_freq (Hz). The
// first write to a node saves what it changes (governor, setspeed, min, max); restore() writes the
// saved values back, nodes in reverse order of first use.
//
// Every way out restores:
//   - unwinding (normal end, error, an orderly stop on SIGINT/SIGTERM/SIGHUP/SIGQUIT): the
//     destructor;
//   - std::terminate, a second stop signal, a crash signal: restore_dvfs_async_signal_safe(),
//     which writes precomputed path/value byte strings with open/write/close — no lock, no
//     allocation — so it works from a signal handler and while another thread holds the mutex;
//   - SIGKILL and anything else no handler survives: the journal (power/dvfs_journal.h), written
//     before the first write to a node when a journal directory is given, removed after a complete
//     restore; `co_up --restore-dvfs` writes it back.
// Nodes shared by several processors (one cpufreq policy for two clusters) are one node here:
// saved once, and a level set for one processor is the level of all that share it.
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
struct DvfsEmergencyPlan;  // sysfs_dvfs.cpp: what restore_dvfs_async_signal_safe() writes
// "strict" or "best-effort"; throws InputError otherwise.
DvfsPolicy parse_dvfs_policy(const std::string& text);

struct SysfsWrite {
  std::string path;  // full path, root included
  std::string value;
  bool ok = true;
  std::string error;  // what failed when !ok
};

// Writes `value` to `path` (O_WRONLY|O_TRUNC, one write). Returns "" or
// "failed to write V to P: EACCES (Permission denied)".
std::string write_sysfs(const std::filesystem::path& path, const std::string& value);

class SysfsDvfs {
 public:
  // `journal_dir`: where the journal goes (resolve_state_dir); empty: no journal (tests, benches).
  SysfsDvfs(const Platform& platform, std::filesystem::path sysfs_root,
            std::filesystem::path journal_dir = {});
  ~SysfsDvfs();
  SysfsDvfs(const SysfsDvfs&) = delete;
  SysfsDvfs& operator=(const SysfsDvfs&) = delete;

  // The DVFS table of `letter`, or nullptr when the platform declares none.
  const DvfsSpec* spec(char letter) const;
  // Sets `letter` to `level` (0-based index into its table, checked by the caller). Returns ""
  // or what failed; on failure nothing more is written for this request. A journal that cannot be
  // written is a failure before any sysfs write.
  std::string set_level(char letter, int level);
  // The level last set successfully, -1 if none.
  int level(char letter) const;
  // Writes every saved value back and removes the journal when all writes succeeded (else it
  // stays for --restore-dvfs); idempotent. Returns the failures.
  std::vector<std::string> restore();
  // The journal file of this controller ("" without a journal directory); it exists while levels
  // are applied.
  std::filesystem::path journal_file() const { return journal_file_; }

  // Every write in order, restores included (tests check file, value, order).
  std::vector<SysfsWrite> writes() const;

 private:
  struct Node;
  std::string prepare(Node& node);
  std::string write_journal(const Node& adding);
  std::string write(const std::filesystem::path& path, const std::string& value);

  std::filesystem::path root_;
  std::filesystem::path journal_file_;
  std::vector<std::pair<char, DvfsSpec>> specs_;
  mutable std::mutex mutex_;
  std::vector<Node*> touched_;  // first-use order
  std::vector<std::unique_ptr<Node>> nodes_;
  int levels_[26];
  std::vector<SysfsWrite> writes_;
  std::unique_ptr<DvfsEmergencyPlan> emergency_;  // registered for restore_dvfs_async_signal_safe
};

// Writes back what every live SysfsDvfs changed, without locks or allocation (async-signal-safe),
// and removes their journals when all writes succeeded. For the ways out that do not unwind (a
// second stop signal, a crash handler, std::terminate): afterwards no SysfsDvfs writes a level
// again in this process — call it only when the process is about to end. Returns the number of
// nodes written back, or -1 when a write failed (that journal then stays for --restore-dvfs).
int restore_dvfs_async_signal_safe() noexcept;

// Restores every live SysfsDvfs (restore_dvfs_async_signal_safe), then calls the previous
// terminate handler. Call once, early.
void install_terminate_restore();

}  // namespace co_up::power
