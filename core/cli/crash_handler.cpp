#include "core/cli/crash_handler.h"

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

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr size_t kAltStackBytes = 64 * 1024;

// Signal-handler state (the documented exception to "no hidden globals"): the dispositions the
// handler hands signals on to, and whether a crash is already being handled.
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];
std::atomic<bool> g_crashing{false};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "a signal";
  }
}

// Appends `text` to buf (size `capacity`, used `*length`), truncating: async-signal-safe.
void append(char* buf, size_t capacity, size_t* length, const char* text) {
  if (text == nullptr) text = "?";
  for (; *text != '\0' && *length + 1 < capacity; ++text) buf[(*length)++] = *text;
}

void write_crash_line(int sig) {
  char line[512];
  size_t n = 0;
  append(line, sizeof line, &n, "co_up: crashed with ");
  append(line, sizeof line, &n, signal_name(sig));
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
  line[n++] = '\n';
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(STDERR_FILENO, line + done, n - done);
    if (w <= 0 && errno != EINTR) break;
    if (w > 0) done += static_cast<size_t>(w);
  }
}

void on_crash(int sig, siginfo_t* info, void* /*context*/) {
  const int saved_errno = errno;
  size_t index = 0;
  while (kSignals[index] != sig) ++index;
  // A crash while handling a crash (in the DVFS writes, say) goes straight on.
  if (!g_crashing.exchange(true)) {
    write_crash_line(sig);
    power::restore_dvfs_async_signal_safe();
  }
  sigaction(sig, &g_previous[index], nullptr);
  // si_code > 0: the kernel reports a fault of the instruction we return to, which faults again
  // into the previous disposition (with its real address, for a sanitizer's report). Otherwise
  // the signal was sent (kill, raise, abort): send it again; it is delivered when we return.
  if (info == nullptr || info->si_code <= 0) raise(sig);
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
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
    sigaction(kSignals[i], &action, &g_previous[i]);
    // An ignored fault would fault again forever: hand it to the default action instead.
    if ((g_previous[i].sa_flags & SA_SIGINFO) == 0 && g_previous[i].sa_handler == SIG_IGN) {
      g_previous[i].sa_handler = SIG_DFL;
    }
  }
}

}  // namespace co_up::cli
