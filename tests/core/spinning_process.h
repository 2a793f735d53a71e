// A child process that spins on given cores until destroyed: foreign work beside a measurement
// (a thread would be this process's own time).
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace co_up::test {

class SpinningProcess {
 public:
  explicit SpinningProcess(const std::vector<int>& cores) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cores) CPU_SET(c, &set);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {  // only async-signal-safe calls from here on
      if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(1);
      volatile uint64_t spins = 0;
      for (;;) spins = spins + 1;
    }
  }
  SpinningProcess(const SpinningProcess&) = delete;
  SpinningProcess& operator=(const SpinningProcess&) = delete;
  ~SpinningProcess() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace co_up::test
