#include "cli/crash_handler.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/plugin.h"
#include "power/sysfs_dvfs.h"

namespace co_up::cli {
namespace {

struct Handled {
  int number;
  const char* name;
  bool crash;  // a crash ("crashed with"); else another signal whose default ends the process
};
constexpr Handled kSignals[] = {
    {SIGSEGV, "SIGSEGV", true},  {SIGBUS, "SIGBUS", true},    {SIGILL, "SIGILL", true},
    {SIGFPE, "SIGFPE", true},    {SIGABRT, "SIGABRT", true},  {SIGTRAP, "SIGTRAP", true},
    {SIGSYS, "SIGSYS", true},    {SIGUSR1, "SIGUSR1", false}, {SIGUSR2, "SIGUSR2", false},
    {SIGALRM, "SIGALRM", false}, {SIGVTALRM, "SIGVTALRM", false}, {SIGPROF, "SIGPROF", false},
    {SIGXCPU, "SIGXCPU", false}, {SIGXFSZ, "SIGXFSZ", false}, {SIGIO, "SIGIO", false},
    {SIGPWR, "SIGPWR", false},
};
constexpr size_t kCount = sizeof(kSignals) / sizeof(kSignals[0]);
constexpr size_t kAltStackBytes = 64 * 1024;

// Signal-handler state (the documented exception to "no hidden globals"): the dispositions the
// handler hands signals on to, and whether a crash is already being handled.
struct sigaction g_previous[kCount];
std::atomic<bool> g_handling{false};

// Appends `text` to buf (size `capacity`, used `*length`), truncating: async-signal-safe.
void append(char* buf, size_t capacity, size_t* length, const char* text) {
  if (text == nullptr) text = "?";
  for (; *text != '\0' && *length + 1 < capacity; ++text) buf[(*length)++] = *text;
}

void write_line(const Handled& s) {
  char line[512];
  size_t n = 0;
  if (s.crash) {
    append(line, sizeof line, &n, "co_up: crashed with ");
    append(line, sizeof line, &n, s.name);
    const PluginCall call = plugin_call_in_progress();
    if (call.backend != nullptr) {
      append(line, sizeof line, &n, " inside plugin '");
      append(line, sizeof line, &n, call.backend);
      append(line, sizeof line, &n, "' (");
      append(line, sizeof line, &n, call.entry);
      append(line, sizeof line, &n,
             "); plugins run as trusted code in co_up's process \xE2\x80\x94 report this to the "
             "plugin's author");
    } else {
      append(line, sizeof line, &n, " inside co_up; please report this as a co_up bug");
    }
  } else {
    append(line, sizeof line, &n, "co_up: ended by ");
    append(line, sizeof line, &n, s.name);
    append(line, sizeof line, &n,
           " without an orderly stop (SIGINT, SIGTERM, SIGHUP or SIGQUIT write the profile); "
           "DVFS is restored");
  }
  line[n++] = '\n';
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(STDERR_FILENO, line + done, n - done);
    if (w <= 0 && errno != EINTR) break;
    if (w > 0) done += static_cast<size_t>(w);
  }
}

void on_signal(int sig, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;
  size_t index = 0;
  while (index + 1 < kCount && kSignals[index].number != sig) ++index;
  // A signal while handling one (a fault in the DVFS writes, say) goes straight on.
  if (!g_handling.exchange(true)) {
    write_line(kSignals[index]);
    power::restore_dvfs_async_signal_safe();
  }
  sigaction(sig, &g_previous[index], nullptr);
  // A fault the kernel reports for an instruction (si_code > 0) happens again when we return to
  // it, now into the previous disposition (with its real address, for a sanitizer's report).
  // Anything else (kill, raise, abort, a trap or syscall that returns) is raised again; it is
  // delivered when we return.
  const bool refaults = (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
                        info != nullptr && info->si_code > 0;
  if (!refaults) raise(sig);
  errno = saved_errno;
}

}  // namespace

void install_crash_handler() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) != 0) {
    void* memory = mmap(nullptr, kAltStackBytes, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (memory != MAP_FAILED) {  // kept for the life of the process
      stack_t alt{};
      alt.ss_sp = memory;
      alt.ss_size = kAltStackBytes;
      sigaltstack(&alt, nullptr);
    }
  }
  struct sigaction action {};
  action.sa_sigaction = on_signal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < kCount; ++i) {
    sigaction(kSignals[i].number, nullptr, &g_previous[i]);
    // Left alone: a signal someone chose to ignore or handle before us (a sanitizer's SIGSEGV
    // handler is chained to instead: the crash signals are always ours first).
    const bool defaulted = (g_previous[i].sa_flags & SA_SIGINFO) == 0 && g_previous[i].sa_handler == SIG_DFL;
    if (!kSignals[i].crash && !defaulted) continue;
    if ((g_previous[i].sa_flags & SA_SIGINFO) == 0 && g_previous[i].sa_handler == SIG_IGN) {
      if (!kSignals[i].crash) continue;
      g_previous[i].sa_handler = SIG_DFL;  // an ignored fault would fault again for ever
    }
    sigaction(kSignals[i].number, &action, nullptr);
  }
  // A closed stdout must not end a run with the clocks changed: writes fail with EPIPE instead,
  // and the run ends (and restores) as usual.
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace co_up::cli
