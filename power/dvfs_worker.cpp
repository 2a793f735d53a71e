#include "power/dvfs_worker.h"

#include <algorithm>
#include <limits>

#include "profiler/events.h"

namespace co_up::power {

DvfsWorker::DvfsWorker(SysfsDvfs& dvfs, std::function<void(const std::string&)> on_error)
    : dvfs_(dvfs), on_error_(std::move(on_error)) {
  for (auto& s : slots_) s.store(0);
  log_.reserve(4096);
  thread_ = std::thread([this] { loop(); });
}

DvfsWorker::~DvfsWorker() { stop(); }

void DvfsWorker::request(char domain, int level, uint32_t layer, uint64_t frame) {
  const int64_t now = profiler::now_ns();
  const uint64_t seq = next_seq_.fetch_add(1);
  {
    std::lock_guard lock(log_mutex_);
    if (log_.size() < seq - log_base_) log_.resize(seq - log_base_);
    profiler::DvfsEvent& e = log_[seq - 1 - log_base_];
    e.processor = domain;
    e.level = level;
    e.layer = layer;
    e.frame = frame;
    e.issue_ns = now;
  }
  issued_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t previous = slots_[domain - 'A'].exchange((seq << 8) | static_cast<uint64_t>(level + 1));
  if (previous != 0) {
    std::lock_guard lock(log_mutex_);
    if (profiler::DvfsEvent* e = entry(previous >> 8)) e->superseded = true;
  }
  wake_.fetch_add(1, std::memory_order_release);
  wake_.notify_one();
}

void DvfsWorker::loop() {
  for (;;) {
    const uint32_t seen = wake_.load(std::memory_order_acquire);
    const bool stopping = stop_.load();
    bool did = false;
    for (int d = 0; d < 26; ++d) {
      const uint64_t slot = slots_[d].exchange(0);
      if (slot == 0) continue;
      did = true;
      const uint64_t seq = slot >> 8;
      const int level = static_cast<int>(slot & 0xff) - 1;
      const char domain = static_cast<char>('A' + d);
      const std::string error = dvfs_.set_level(domain, level);
      const int64_t applied = profiler::now_ns();
      const DvfsSpec* spec = dvfs_.spec(domain);
      bool first_error = false;
      {
        std::lock_guard lock(log_mutex_);
        if (profiler::DvfsEvent* e = entry(seq)) {
          e->khz = spec != nullptr ? spec->frequencies_khz.at(static_cast<size_t>(level)) : 0;
          if (error.empty()) e->apply_ns = applied;
          if (!error.empty()) e->error = error;
        }
        if (!error.empty()) {
          first_error = error_.empty();
          if (first_error) error_ = error;
        }
      }
      if (first_error && on_error_) on_error_(error);
    }
    // Everything issued before `seen` was read is settled once the slots were emptied above.
    if (!did) {
      const uint64_t issued_now = next_seq_.load() - 1;
      bool empty = true;
      for (auto& s : slots_) empty = empty && s.load() == 0;
      if (empty) {
        done_seq_.store(issued_now);
        done_seq_.notify_all();
      }
      if (stopping) {
        // A drain() now or later must not wait for requests nobody will apply.
        done_seq_.store(std::numeric_limits<uint64_t>::max());
        done_seq_.notify_all();
        return;
      }
      wake_.wait(seen, std::memory_order_acquire);
    }
  }
}

void DvfsWorker::drain() {
  const uint64_t target = next_seq_.load() - 1;
  for (uint64_t done = done_seq_.load(); done < target; done = done_seq_.load()) {
    wake_.fetch_add(1);
    wake_.notify_one();
    done_seq_.wait(done);
  }
}

void DvfsWorker::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  wake_.fetch_add(1, std::memory_order_release);
  wake_.notify_one();
  thread_.join();
}

profiler::DvfsEvent* DvfsWorker::entry(uint64_t seq) {
  if (seq <= log_base_ || seq - 1 - log_base_ >= log_.size()) return nullptr;
  return &log_[seq - 1 - log_base_];
}

std::vector<profiler::DvfsEvent> DvfsWorker::take_records() {
  std::lock_guard lock(log_mutex_);
  std::vector<profiler::DvfsEvent> taken = std::move(log_);
  log_.clear();
  log_base_ += taken.size();
  return taken;
}

std::vector<profiler::DvfsEvent> DvfsWorker::records() const {
  std::lock_guard lock(log_mutex_);
  return log_;
}

std::string DvfsWorker::error() const {
  std::lock_guard lock(log_mutex_);
  return error_;
}

DvfsObserver::DvfsObserver(std::vector<std::vector<DvfsSetting>> per_layer, DvfsWorker& worker)
    : per_layer_(std::move(per_layer)), worker_(worker) {
  for (auto& r : requested_) r.store(-1);
}

void DvfsObserver::on_layer_begin(char processor, uint32_t layer, uint64_t frame) {
  if (layer >= per_layer_.size()) return;
  for (const DvfsSetting& s : per_layer_[layer]) {
    if (requested_[s.domain - 'A'].exchange(s.level, std::memory_order_relaxed) != s.level) {
      worker_.request(s.domain, s.level, layer, frame);
    }
  }
}

}  // namespace co_up::power
