// DvfsWorker: applies DVFS requests off the inference threads (ARM-CO-UP's per-layer DVFS; the
// paper's Table 10 measures 0.1–4.5 ms from request to the new clock, too long to wait for).
//
// request() stores the level in the domain's slot (one atomic exchange), logs the issue time and
// wakes the worker (an atomic notify): no lock is held across a sysfs write, so a stalled write
// never blocks inference. A newer request for a domain replaces one the worker has not picked up
// yet (the older is recorded as superseded): the clock should follow the current layer, not
// replay history. Requests for different domains are applied in domain order per wake-up.
//
// DvfsObserver turns a per-layer schedule into requests at layer starts, issuing one only when
// the domain's requested level changes.
//
// Threading: request() from any thread; records() and take_records() after drain() or stop(), with
// no request() in flight. Errors never throw: the first is kept (error()) and passed to `on_error`
// once (the CLI stops the run there under --dvfs=strict).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/layer_observer.h"
#include "power/dvfs_schedule.h"
#include "power/sysfs_dvfs.h"
#include "profiler/run_profile.h"

namespace co_up::power {

class DvfsWorker {
 public:
  DvfsWorker(SysfsDvfs& dvfs, std::function<void(const std::string&)> on_error);
  ~DvfsWorker();  // stop()
  DvfsWorker(const DvfsWorker&) = delete;
  DvfsWorker& operator=(const DvfsWorker&) = delete;

  void request(char domain, int level, uint32_t layer, uint64_t frame);
  // Applies what is pending, then joins the thread (waits for a write in progress).
  void stop();
  // Blocks until every request issued so far was applied or superseded. After stop() it returns at
  // once: a request issued after stop() is never applied (its record has no apply time).
  void drain();

  std::vector<profiler::DvfsEvent> records() const;  // issue order, since the last take_records()
  // The records so far, which then leave the worker (one run's records; the log does not grow
  // over runs).
  std::vector<profiler::DvfsEvent> take_records();
  uint64_t issued() const { return issued_.load(); }
  std::string error() const;

 private:
  void loop();
  profiler::DvfsEvent* entry(uint64_t seq);  // under log_mutex_; null: taken already

  SysfsDvfs& dvfs_;
  std::function<void(const std::string&)> on_error_;
  // Slot per domain letter: 0 = empty, else (sequence << 8) | (level + 1).
  std::atomic<uint64_t> slots_[26];
  std::atomic<uint64_t> next_seq_{1};
  std::atomic<uint64_t> issued_{0};
  // Requests with seq <= this are settled; UINT64_MAX once the thread has left (nothing more
  // will be).
  std::atomic<uint64_t> done_seq_{0};
  std::atomic<uint32_t> wake_{0};
  std::atomic<bool> stop_{false};

  mutable std::mutex log_mutex_;  // issue log (short critical sections, no I/O)
  std::vector<profiler::DvfsEvent> log_;  // index = seq - 1 - log_base_
  uint64_t log_base_ = 0;                 // records handed out by take_records()
  std::string error_;
  std::thread thread_;  // last: starts after the members it uses exist
};

class DvfsObserver : public LayerObserver {
 public:
  // `per_layer[i]`: the settings of layer i. Not owned: `worker` outlives the observer's use.
  DvfsObserver(std::vector<std::vector<DvfsSetting>> per_layer, DvfsWorker& worker);
  void on_layer_begin(char processor, uint32_t layer, uint64_t frame) override;

 private:
  std::vector<std::vector<DvfsSetting>> per_layer_;
  DvfsWorker& worker_;
  std::atomic<int> requested_[26];  // last level requested per domain (-1: none yet)
};

}  // namespace co_up::power
