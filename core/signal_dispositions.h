// SignalDispositionGuard: co_up's signal dispositions survive the plugin code that runs at setup.
//
// Plugins are trusted code, but what they load may install signal handlers for its own ends:
// PoCL's LLVM takes SIGQUIT, SIGSEGV, SIGTERM and a dozen more to print a stack trace, so with the
// opencl plugin merely loaded, SIGQUIT no longer quits co_up and a crash elsewhere is reported by
// LLVM instead of co_up. Every place that runs plugin code outside the run loop (dlopen and its
// static initialisers, co_up_plugin_get_api, factory_create/release, device_create/release,
// compiled_create/release, dlclose) holds one of these guards: it snapshots the disposition of
// every signal (sigaction for 1..NSIG-1 but SIGKILL and SIGSTOP) before, and when it ends puts
// back each one whose handler, flags or mask changed. It also puts back the calling thread's
// signal mask. Consequence for plugins: a handler a plugin installs does not outlive the call
// that installed it; co_up's dispositions (its stop signals, its crash handler) win.
//
// Scopes nest and overlap across threads (sub-graphs compile in parallel). Dispositions are
// process-wide, so the first scope to open takes the snapshot and the last to close restores it;
// that bookkeeping is process-wide state, like a signal handler's, behind a mutex that is not held
// while plugin code runs. Contract for co_up's own code: install signal handlers before any plugin
// code runs (at startup, as main() does), not while a guard is open on another thread, or the
// last guard to close takes them back out.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace co_up {

class SignalDispositionGuard {
 public:
  SignalDispositionGuard();
  // Calls finish() when it was not called.
  ~SignalDispositionGuard();
  SignalDispositionGuard(const SignalDispositionGuard&) = delete;
  SignalDispositionGuard& operator=(const SignalDispositionGuard&) = delete;

  // Ends the scope now. Returns the signals whose disposition this call restored, ascending:
  // empty when nothing changed, and also when another scope is still open (the last one to close
  // restores, and reports, them).
  std::vector<int> finish();

 private:
  bool open_ = true;
  sigset_t thread_mask_;
};

// "SIGQUIT, SIGSEGV" (names of `signals`, comma-separated; "signal 40" for one without a name).
std::string signal_names(const std::vector<int>& signals);

}  // namespace co_up
