// A child process that spins on given cores until destroyed: foreign work beside a measurement
// (a thread would be this process's own time).
//
// The constructor returns once the child is pinned and spinning, or throws (the child reaped)
// where it could not be pinned: a neighbour that silently runs elsewhere would make a test of
// "foreign time is seen" pass or fail for the wrong reason. The destructor kills and reaps it,
// so a failing assertion leaves no spinner behind; a test process that dies without unwinding
// takes the child with it (PR_SET_PDEATHSIG).
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace co_up::test {

class SpinningProcess {
 public:
  explicit SpinningProcess(const std::vector<int>& cores) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cores) CPU_SET(c, &set);
    int ready[2];
    if (pipe(ready) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) {
      const int error = errno;
      close(ready[0]);
      close(ready[1]);
      throw std::runtime_error(std::string("fork failed: ") + std::strerror(error));
    }
    if (pid_ == 0) {  // only async-signal-safe calls from here on
      close(ready[0]);
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
      const char pinned = sched_setaffinity(0, sizeof set, &set) == 0 ? 1 : 0;
      if (write(ready[1], &pinned, 1) != 1 || pinned == 0) _exit(1);
      close(ready[1]);
      volatile uint64_t spins = 0;
      for (;;) spins = spins + 1;
    }
    close(ready[1]);
    char pinned = 0;
    ssize_t got = 0;
    do {
      got = read(ready[0], &pinned, 1);
    } while (got < 0 && errno == EINTR);
    close(ready[0]);
    if (got != 1 || pinned == 0) {
      reap();
      std::string list;
      for (int c : cores) list += (list.empty() ? "" : ",") + std::to_string(c);
      throw std::runtime_error("the spinning child could not be pinned to core(s) " + list +
                               " (not in this process's allowed cores?)");
    }
  }
  SpinningProcess(const SpinningProcess&) = delete;
  SpinningProcess& operator=(const SpinningProcess&) = delete;
  ~SpinningProcess() { reap(); }

 private:
  void reap() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  pid_t pid_ = -1;
};

}  // namespace co_up::test
