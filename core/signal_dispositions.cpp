#include "core/signal_dispositions.h"

#include <pthread.h>

#include <array>
#include <mutex>

namespace co_up {
namespace {

// The one snapshot of every disposition, taken by the first open scope and restored by the last.
struct Snapshot {
  std::mutex mutex;
  int open_scopes = 0;  // guarded by mutex, as are the arrays
  std::array<struct sigaction, NSIG> actions{};
  std::array<bool, NSIG> saved{};  // false where sigaction refused (the C library's own signals)
};

Snapshot& snapshot() {
  static Snapshot s;
  return s;
}

bool can_change(int sig) { return sig != SIGKILL && sig != SIGSTOP; }

bool same_mask(const sigset_t& a, const sigset_t& b) {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&a, sig) != sigismember(&b, sig)) return false;
  }
  return true;
}

// The C library adds SA_RESTORER (its own return trampoline; Linux's value on every architecture
// that has it, and not exported by glibc's headers) to every action it installs, so a disposition
// re-installed unchanged differs from the one the process started with only there.
constexpr int kLibraryFlags = 0x04000000;

bool same_action(const struct sigaction& a, const struct sigaction& b) {
  if ((a.sa_flags & ~kLibraryFlags) != (b.sa_flags & ~kLibraryFlags)) return false;
  const bool same_handler = (a.sa_flags & SA_SIGINFO) != 0 ? a.sa_sigaction == b.sa_sigaction
                                                           : a.sa_handler == b.sa_handler;
  return same_handler && same_mask(a.sa_mask, b.sa_mask);
}

}  // namespace

SignalDispositionGuard::SignalDispositionGuard() {
  pthread_sigmask(SIG_SETMASK, nullptr, &thread_mask_);
  Snapshot& s = snapshot();
  const std::lock_guard lock(s.mutex);
  if (s.open_scopes++ > 0) return;
  for (int sig = 1; sig < NSIG; ++sig) {
    s.actions[sig] = {};
    s.saved[sig] = can_change(sig) && sigaction(sig, nullptr, &s.actions[sig]) == 0;
  }
}

SignalDispositionGuard::~SignalDispositionGuard() {
  if (open_) finish();
}

std::vector<int> SignalDispositionGuard::finish() {
  std::vector<int> restored;
  if (!open_) return restored;
  open_ = false;
  sigset_t mask;
  if (pthread_sigmask(SIG_SETMASK, nullptr, &mask) == 0 && !same_mask(mask, thread_mask_)) {
    pthread_sigmask(SIG_SETMASK, &thread_mask_, nullptr);
  }
  Snapshot& s = snapshot();
  const std::lock_guard lock(s.mutex);
  if (--s.open_scopes > 0) return restored;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (!s.saved[sig]) continue;
    struct sigaction now {};
    if (sigaction(sig, nullptr, &now) != 0 || same_action(now, s.actions[sig])) continue;
    if (sigaction(sig, &s.actions[sig], nullptr) == 0) restored.push_back(sig);
  }
  return restored;
}

std::string signal_names(const std::vector<int>& signals) {
  static constexpr std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"},     {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"},
      {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},     {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"},
      {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},     {SIGTTOU, "SIGTTOU"}, {SIGURG, "SIGURG"},
      {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},     {SIGVTALRM, "SIGVTALRM"},
      {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},   {SIGIO, "SIGIO"},     {SIGSYS, "SIGSYS"},
  };
  std::string text;
  for (int sig : signals) {
    if (!text.empty()) text += ", ";
    const char* name = nullptr;
    for (const auto& [number, n] : kNames) {
      if (number == sig) name = n;
    }
    text += name != nullptr ? std::string(name) : "signal " + std::to_string(sig);
  }
  return text;
}

}  // namespace co_up
