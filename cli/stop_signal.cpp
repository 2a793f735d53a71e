#include "cli/stop_signal.h"

#include <pthread.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>

#include "power/sysfs_dvfs.h"

namespace co_up::cli {
namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  return set;
}

}  // namespace

StopSignal::StopSignal() {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, &previous_mask_);
  watcher_ = std::thread([this] { watch(); });
}

StopSignal::~StopSignal() {
  done_ = true;
  watcher_.join();
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

void StopSignal::on_stop(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  callback_ = std::move(callback);
  if (signal_ != 0 && callback_) callback_();
}

void StopSignal::watch() {
  pthread_setname_np(pthread_self(), "co_up-signals");  // for top, gdb and the tests
  const sigset_t set = stop_signals();
  const timespec poll{0, 50 * 1000 * 1000};  // how often the destructor's request is noticed
  while (!done_) {
    const int sig = sigtimedwait(&set, nullptr, &poll);
    if (sig <= 0) continue;
    if (signal_ != 0) {
      // A second Ctrl-C means the orderly stop is not wanted (or is stuck): leave now, but never
      // with the machine's clocks left changed.
      const int restored = power::restore_dvfs_async_signal_safe();
      static const char kPlain[] =
          "co_up: second signal, exiting without writing the profile or traces\n";
      static const char kRestored[] =
          "co_up: second signal: DVFS restored, exiting without writing the profile or traces\n";
      static const char kFailed[] =
          "co_up: second signal: exiting without writing the profile or traces; restoring DVFS "
          "failed, run co_up --restore-dvfs\n";
      const char* message = restored < 0 ? kFailed : restored > 0 ? kRestored : kPlain;
      [[maybe_unused]] ssize_t ignored = write(2, message, std::strlen(message));
      std::_Exit(128 + sig);
    }
    signal_ = sig;
    std::lock_guard lock(mutex_);
    if (callback_) callback_();
  }
}

}  // namespace co_up::cli
