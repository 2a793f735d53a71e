#include "cli/restore_dvfs_command.h"

#include <filesystem>
#include <iostream>
#include <string>

#include "core/error.h"
#include "power/dvfs_journal.h"

namespace co_up::cli {
namespace {

// Where this run keeps its DVFS journal; empty (no journal) only when no rule gives a directory.
std::filesystem::path journal_dir(const Options& o) { return power::resolve_state_dir(o.state_dir); }

}  // namespace

// One warning when journals of dead runs for this sysfs root are waiting for --restore-dvfs.
void warn_about_dead_journals(const Options& o) {
  try {
    const std::string warning = power::dead_journal_warning(
        power::scan_journals(journal_dir(o), o.sysfs_root), o.sysfs_root, o.state_dir);
    if (!warning.empty()) std::cerr << "co_up: warning: " << warning << "\n";
  } catch (const std::exception&) {  // a warning never stops a run
  }
}

// co_up --restore-dvfs: writes back what the journals of dead runs saved, reporting each write.
int restore_dvfs(const Options& o) {
  const std::filesystem::path dir = journal_dir(o);
  if (dir.empty()) {
    throw InputError("no state directory for DVFS journals (no HOME); give the one the run used "
                     "with --state-dir=DIR or CO_UP_STATE_DIR");
  }
  const power::JournalScan scan = power::scan_journals(dir, o.sysfs_root);
  for (const std::string& why : scan.unreadable) std::cerr << "co_up: warning: skipping " << why << "\n";
  std::string failure;
  size_t restored = 0;
  for (const power::Journal& j : scan.dead) {
    std::cout << "restoring DVFS left by co_up pid " << j.pid << " (journal " << j.file.string() << "):\n";
    size_t failed = 0;
    for (const power::SysfsWrite& w : power::restore_journal(j)) {
      std::cout << "  " << w.path << " <- " << w.value << (w.ok ? "" : "  (failed)") << "\n";
      if (!w.ok && failure.empty()) failure = w.error;
      failed += w.ok ? 0 : 1;
      restored += w.ok ? 1 : 0;
    }
    std::cout << (failed == 0 ? "  done; journal removed\n" : "  incomplete; journal kept\n");
  }
  if (!failure.empty()) {
    throw RuntimeError(failure + " (journals of incomplete restores are kept; run as root and "
                                 "try co_up --restore-dvfs again)");
  }
  if (!scan.live.empty()) {
    const power::Journal& j = scan.live.front();
    throw RuntimeError("the DVFS journal " + j.file.string() + " belongs to co_up pid " +
                       std::to_string(j.pid) + ", which is still running and restores its own " +
                       "levels when it ends; not touched (stop that run first)");
  }
  if (scan.dead.empty()) {
    std::cout << "no DVFS journal of a dead co_up run for sysfs root " << power::canonical_root(o.sysfs_root)
              << " in " << dir.string() << "; nothing to restore";
    if (scan.other_roots > 0) {
      std::cout << " (" << scan.other_roots << " journal(s) of other sysfs roots there: pass their --sysfs-root)";
    }
    std::cout << "\n";
  } else {
    std::cout << "restored " << restored << " value(s)\n";
  }
  return 0;
}

}  // namespace co_up::cli
