// co_up --restore-dvfs, and the warning before other commands: the DVFS journals that runs which
// died left behind (power/dvfs_journal.h).
#pragma once

#include "cli/options.h"

namespace co_up::cli {

// One warning on stderr when journals of dead runs for this sysfs root are waiting.
void warn_about_dead_journals(const Options& o);

// Writes back what the journals of dead runs saved, reporting each write. Returns the exit code;
// throws InputError/RuntimeError.
int restore_dvfs(const Options& o);

}  // namespace co_up::cli
