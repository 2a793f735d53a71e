// ForeignCpuTime: how much of a set of cores' time, across an interval, went to work other than
// this process's — another process (or another guest of the hypervisor) on the cores a
// measurement runs on.
//
// Why this and not run-queue waits: a measurement that runs under a real-time policy (as the
// profile does under `chrt -f`) preempts a normal-priority neighbour at once, so its threads
// never wait for the core; the neighbour runs in the gaps instead (switch mode leaves one core
// idle while the other computes) and evicts the caches the next read needs. Measured on this
// project's host: a `co_up plan` on one core of the pair made cross-core reads five times dearer
// without our threads waiting for it. So what is counted is the cores' busy time, from the
// kernel's per-CPU counters (/proc/stat: user, nice, system, irq, softirq and steal), less this
// process's own CPU time (/proc/self/stat: utime + stime, every thread, dead ones included),
// over the cores' elapsed time (busy + idle + iowait). The kernel does not say on which core a
// thread spent its time, so the subtraction assumes this process ran on those cores only: its
// time elsewhere hides as much foreign time (the share errs low, never high). Resolution is
// the kernel's tick (USER_HZ, 10 ms): an interval of a second resolves about 1 % of one core.
//
// Where /proc or a core's counters cannot be read (another OS, a sandbox that hides them) the
// share is unknown (std::nullopt), never a made-up 0.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace co_up {

class ForeignCpuTime {
 public:
  // Starts the interval now. `proc` is the procfs root (tests pass a simulated tree).
  explicit ForeignCpuTime(std::vector<int> cores, std::filesystem::path proc = "/proc");

  struct Share {
    double foreign = 0;     // other work's share of the cores' time, 0-1
    double resolution = 0;  // one tick of the counters over the cores' elapsed ticks
  };
  // Since construction; std::nullopt where the counters cannot be read or no tick elapsed.
  std::optional<Share> share() const;
  const std::vector<int>& cores() const { return cores_; }

 private:
  struct Counters {
    uint64_t busy = 0, elapsed = 0, own = 0;  // clock ticks
  };
  std::optional<Counters> read() const;

  std::vector<int> cores_;
  std::filesystem::path proc_;
  std::optional<Counters> start_;
};

}  // namespace co_up
