// DVFS journal: what co_up changed in sysfs, kept on disk while the change lasts, so that a run
// that nothing could clean up after (SIGKILL, a power cut of co_up's process, a crash in the
// crash handler) can be undone later by `co_up --restore-dvfs`.
//
// One JSON file per SysfsDvfs, <state dir>/dvfs-<pid>-<n>.json:
//   {"co_up_dvfs_journal": 1, "pid": 4242, "start_time": 123456, "sysfs_root": "/sys",
//    "nodes": [{"dir": "devices/system/cpu/cpufreq/policy0", "driver": "cpufreq",
//               "mode": "userspace", "governor": "schedutil", "setspeed": ""},
//              {"dir": "...policy4", "driver": "cpufreq", "mode": "clamp",
//               "min": "408000", "max": "1800000"}]}
// nodes in order of first use, each with the values co_up found there before its first write.
// SysfsDvfs writes it (atomically: a temporary file renamed over it) before its first write to a
// node, and removes it once every saved value is back. `start_time` (field 22 of
// /proc/<pid>/stat) tells the writer from a later process that reuses its pid.
//
// State directory, first that applies: --state-dir=DIR, $CO_UP_STATE_DIR, /var/lib/co_up when it
// is (or can be created as) a writable directory — root runs, the usual case for real DVFS —,
// $XDG_STATE_HOME/co_up, $HOME/.local/state/co_up. With none of these (no HOME, not root) runs
// keep no journal.
//
// Errors: functions that write throw RuntimeError naming the file and what to do.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "power/sysfs_dvfs.h"

namespace co_up::power {

// The state directory for `option` (--state-dir, may be empty) as the rule above says; empty when
// no rule gives one (no HOME). Creates nothing.
std::filesystem::path resolve_state_dir(const std::string& option);

// One sysfs directory co_up changed and what it found there first.
struct JournalNode {
  std::string dir;       // relative to the sysfs root
  bool devfreq = false;  // file names (and Hz) of devfreq, else cpufreq
  bool userspace = false;  // changed through the userspace governor, else by clamping min/max
  std::string governor, setspeed;  // userspace: saved governor; setspeed "" unless it was userspace
  std::string min, max;            // clamp: saved min and max
};

struct Journal {
  std::filesystem::path file;  // where it lives
  int64_t pid = 0;
  uint64_t start_time = 0;     // 0: unknown (no /proc)
  std::string sysfs_root;      // absolute
  std::vector<JournalNode> nodes;  // first-use order
};

// File names of a node's governor, setspeed, min and max.
struct NodeFiles {
  const char* governor;
  const char* setspeed;
  const char* min;
  const char* max;
};
NodeFiles node_files(bool devfreq);

// The writes that put `node` back, in order, as (file name inside node.dir, value). `current_min`
// is the min the node has now (clamp mode): max goes first when the saved max is not below it,
// so that min <= max holds after every write.
std::vector<std::pair<std::string, std::string>> restore_writes(const JournalNode& node,
                                                                int64_t current_min);

// Field 22 of /proc/<pid>/stat (start time in clock ticks after boot); 0 when unreadable.
uint64_t process_start_time(pid_t pid);
// Whether the process that wrote `journal` still runs (same pid and start time).
bool journal_owner_alive(const Journal& journal);

// `root` made absolute and canonical where it exists, for comparing journals' roots.
std::string canonical_root(const std::filesystem::path& root);

// Writes `journal` to journal.file atomically. Throws RuntimeError.
void write_journal(const Journal& journal);
// Throws RuntimeError when the file is unreadable or not a journal.
Journal read_journal(const std::filesystem::path& file);

// The journals in `state_dir` (none when it does not exist), sorted by name.
struct JournalScan {
  std::vector<Journal> dead;   // of `sysfs_root`, writer gone: --restore-dvfs restores these
  std::vector<Journal> live;   // of `sysfs_root`, writer still running: never touched
  size_t other_roots = 0;      // journals of other sysfs roots (left alone)
  std::vector<std::string> unreadable;  // "FILE: why"
};
JournalScan scan_journals(const std::filesystem::path& state_dir,
                          const std::filesystem::path& sysfs_root);

// Writes back every saved value of `journal` (nodes in reverse order of first use) and removes
// the file when all writes succeeded. Returns the writes in order, each with its outcome.
std::vector<SysfsWrite> restore_journal(const Journal& journal);

// The one-line warning for dead journals ("" when `scan` has none), with the command to run.
std::string dead_journal_warning(const JournalScan& scan, const std::string& sysfs_root_option,
                                 const std::string& state_dir_option);

}  // namespace co_up::power
