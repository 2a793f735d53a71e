// co_up: the command-line front end. Parses options and calls the library: a run of one
// network opens a Session (cli/run_command.h); subcommands call theirs.
//
// Errors end as one line on stderr: exit 2 for bad usage or input, 1 for runtime failures,
// 128+signal when interrupted (after writing the profile).
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli/crash_handler.h"
#include "cli/options.h"
#include "cli/plan_command.h"
#include "cli/profile_command.h"
#include "cli/restore_dvfs_command.h"
#include "cli/run_command.h"
#include "cli/run_inference.h"
#include "cli/standard_streams.h"
#include "cli/stop_signal.h"
#include "cli/workload_command.h"
#include "co_up/co_up.hpp"
#include "co_up/plugin_abi.h"
#include "core/error.h"
#include "core/message_text.h"
#include "power/sysfs_dvfs.h"

namespace co_up::cli {
namespace {

constexpr const char* kVersion = "0.1.0";

int run(const Options& o, StopSignal& stop) {
  if (o.help) {
    std::cout << usage();
    return 0;
  }
  if (o.version) {
    std::cout << "co_up " << kVersion << " (plugin ABI " << CO_UP_ABI_VERSION_MAJOR << "."
              << CO_UP_ABI_VERSION_MINOR << ")\n";
    return 0;
  }
  if (o.restore_dvfs) return restore_dvfs(o);
  if (o.command == "profile") return run_profile_command(o, stop);
  if (o.command == "plan") return run_plan_command(o, stop);
  if (o.command == "run" && !o.workload.empty()) return run_workload_command(o, stop);
  if (o.command != "run") {
    throw InputError("'co_up " + o.command +
                     "' is not available in this version yet; run co_up --help for what is");
  }
  return run_network(o, stop);
}

}  // namespace

int run_inference(const Options& o, StopSignal& stop) { return run(o, stop); }

}  // namespace co_up::cli

namespace {

// The outcome of one command: its exit code, or a one-line error and the code it maps to.
int run_command(int argc, char** argv, co_up::cli::StopSignal& stop) {
  using namespace co_up;
  try {
    const cli::Options options =
        cli::parse_options(std::vector<std::string>(argv + 1, argv + argc));
    if (!options.restore_dvfs) cli::warn_about_dead_journals(options);
    return cli::run(options, stop);
  } catch (const Error& e) {  // from the Session: already one line, the same words
    std::cerr << (e.kind() == ErrorKind::kInput ? "co_up: error: " : "co_up: failed: ") << e.what() << "\n";
    return e.kind() == ErrorKind::kInput ? 2 : 1;
  } catch (const InputError& e) {
    std::cerr << "co_up: error: " << cli::one_line(e.what()) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // What build_network's estimate did not foresee (backend buffers, packed weights).
    std::cerr << "co_up: failed: out of memory (this network, --image-size or --buffers need more "
                 "memory than this machine has; use a smaller --image-size)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "co_up: failed: " << cli::one_line(e.what()) << "\n";
    return 1;
  } catch (...) {
    std::cerr << "co_up: failed: unknown exception\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace co_up;
  if (!cli::hold_closed_standard_streams()) {
    std::cerr << "co_up: error: standard output is closed, and co_up prints its results there "
                 "(redirect it to a file, or to /dev/null to discard them)\n";
    return 2;
  }
  cli::StandardOutput standard_output;  // a failed write to stdout is reported after the command
  // Before any thread: threads see its state (and none misses the handlers). It also ignores
  // SIGPIPE: a reader that goes away makes writes fail with EPIPE (handled below) instead of
  // ending co_up before it restores DVFS and writes its output files.
  cli::install_crash_handler();  // one line naming the plugin, DVFS restored, then the signal
  cli::StopSignal stop;  // before other threads: every thread created later inherits the mask
  power::install_terminate_restore();  // DVFS changes are undone even on std::terminate
  const int code = run_command(argc, argv, stop);
  if (const int err = standard_output.flush(); err != 0) {
    return cli::exit_code_after_stdout_error(err, code);
  }
  return code;
}
