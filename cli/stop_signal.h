// StopSignal: turns SIGINT, SIGTERM, SIGHUP and SIGQUIT into an orderly stop (ARCHITECTURE.md
// "Errors"): the run stops, the profile is written, DVFS is restored, exit 128+signal.
//
// Construct it in main() before any other thread starts: it blocks these signals in the calling
// thread, so every thread created later inherits the mask, and one watcher thread receives them
// with sigtimedwait — no async-signal-safety puzzles, the stop callback runs in normal context.
// A second signal skips the orderly stop (the first may be stuck): the watcher restores DVFS
// without locks (power::restore_dvfs_async_signal_safe, works while another thread holds the
// SysfsDvfs mutex), says so in one line and exits 128+signal without flushing profiles or traces.
// The destructor stops the watcher and restores the signal mask.
#pragma once

#include <signal.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace co_up::cli {

class StopSignal {
 public:
  StopSignal();
  ~StopSignal();
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  // Called (on the watcher thread) when a signal arrives; set it to nullptr to detach. If a
  // signal already arrived, the callback runs immediately.
  void on_stop(std::function<void()> callback);
  bool stopped() const { return signal_ != 0; }
  int signal_number() const { return signal_; }

 private:
  void watch();

  sigset_t previous_mask_;
  std::atomic<bool> done_{false};
  std::atomic<int> signal_{0};
  std::mutex mutex_;
  std::function<void()> callback_;
  std::thread watcher_;  // last: starts after the members it uses exist
};

}  // namespace co_up::cli
