#include "core/workload_runner.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "core/error.h"
#include "profiler/events.h"

namespace co_up {

class WorkloadRunner::Stream final : public FrameStream {
 public:
  explicit Stream(const WorkloadStreamSpec& spec)
      : spec_(spec), batch_(spec.batch), batches_((spec.frames + spec.batch - 1) / spec.batch) {
    // Batched inputs repeat with the period of (request mod input sets) at batch starts.
    const size_t sets = spec.input_sets.size();
    const size_t period = sets / std::gcd(sets, static_cast<size_t>(batch_));
    for (size_t k = 0; k < period && batch_ > 1; ++k) {
      std::vector<std::vector<float>> batched(spec.input_sets.front().size());
      for (uint32_t j = 0; j < batch_; ++j) {
        const auto& set = spec.input_sets[(k * batch_ + j) % sets];
        for (size_t i = 0; i < set.size(); ++i) batched[i].insert(batched[i].end(), set[i].begin(), set[i].end());
      }
      batched_.push_back(std::move(batched));
    }
  }

  // Rate: request r arrives at start + r / rate. A batch goes by its first request when the
  // processors choose (the oldest waiting), and enters when its last has arrived.
  int64_t request_arrival(uint64_t request) const {
    return start_ + static_cast<int64_t>(static_cast<double>(request) * 1e9 / *spec_.rate);
  }
  int64_t arrival(uint64_t frame) const { return request_arrival(frame * batch_); }
  uint64_t last_request(uint64_t frame) const {
    return std::min<uint64_t>((frame + 1) * batch_, spec_.frames) - 1;
  }
  uint64_t batches() const { return batches_; }
  uint32_t batch() const { return batch_; }

  void start(int64_t start_ns) {
    start_ = start_ns;
    admitted_.store(0, std::memory_order_relaxed);
    closed_.store(false, std::memory_order_relaxed);
    if (!spec_.rate) {  // as fast as possible: everything admitted from the start
      admitted_.store(batches_, std::memory_order_release);
      closed_.store(true, std::memory_order_release);
    }
  }
  // Admits what has arrived by `now`; returns the next arrival, or INT64_MAX when all are in.
  int64_t admit_until(int64_t now) {
    uint64_t n = admitted_.load(std::memory_order_relaxed);
    while (n < batches_ && request_arrival(last_request(n)) <= now) ++n;
    admitted_.store(n, std::memory_order_release);
    if (n == batches_) {
      closed_.store(true, std::memory_order_release);  // after the last admission
      return INT64_MAX;
    }
    return request_arrival(last_request(n));
  }

  uint64_t admitted() const override { return admitted_.load(std::memory_order_acquire); }
  bool closed() const override { return closed_.load(std::memory_order_acquire); }
  const float* input(uint64_t frame, uint32_t input) override {
    if (batch_ > 1) return batched_[frame % batched_.size()][input].data();
    return spec_.input_sets[frame % spec_.input_sets.size()][input].data();
  }
  void output(uint64_t frame, uint32_t output, std::span<const float> values) override {
    if (!spec_.on_output) return;
    const size_t each = values.size() / batch_;
    for (uint32_t j = 0; j < batch_; ++j) {
      const uint64_t request = frame * batch_ + j;
      if (request < spec_.frames) spec_.on_output(request, output, values.subspan(j * each, each));
    }
  }
  void frames_completed(uint64_t) override {}

 private:
  const WorkloadStreamSpec& spec_;
  const uint32_t batch_;
  const uint64_t batches_;
  std::vector<std::vector<std::vector<float>>> batched_;  // batch > 1: per batch, per input
  int64_t start_ = 0;
  std::atomic<uint64_t> admitted_{0};
  std::atomic<bool> closed_{false};
};

WorkloadRunner::WorkloadRunner(std::vector<WorkloadStreamSpec> streams, GroupPolicy policy)
    : specs_(std::move(streams)), policy_(policy) {
  for (const WorkloadStreamSpec& s : specs_) {
    if (s.executor == nullptr || s.input_sets.empty() || s.frames == 0 || s.batch == 0) {
      throw InputError("a workload stream needs an executor, an input, a batch and at least one request");
    }
    if (s.rate && !(*s.rate > 0)) throw InputError("a workload stream's rate must be > 0");
    streams_.push_back(std::make_unique<Stream>(s));
  }
}

WorkloadRunner::~WorkloadRunner() = default;

void WorkloadRunner::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (const WorkloadStreamSpec& s : specs_) s.executor->request_stop();
}

void WorkloadRunner::admit_arrivals(int64_t start) {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const int64_t now = profiler::now_ns();
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (specs_[i].rate) next = std::min(next, streams_[i]->admit_until(std::max(now, start)));
    }
    specs_.front().executor->notify_stream();  // the group shares one wake-up
    if (next == INT64_MAX) return;
    wake_.wait_for(lock, std::chrono::nanoseconds(std::max<int64_t>(next - profiler::now_ns(), 0)),
                   [this] { return stop_; });
  }
}

WorkloadRunResult WorkloadRunner::run() {
  std::vector<GroupMember> members;
  for (size_t i = 0; i < specs_.size(); ++i) {
    GroupMember g;
    g.executor = specs_[i].executor;
    g.stream = streams_[i].get();
    g.priority = specs_[i].priority;
    if (specs_[i].rate) {
      Stream* s = streams_[i].get();
      g.arrival_ns = [s](uint64_t frame) { return s->arrival(frame); };
    }
    if (specs_[i].plan_rank) {
      const uint32_t batch = specs_[i].batch;
      g.plan_rank = [rank = specs_[i].plan_rank, batch](uint64_t frame) { return rank(frame * batch); };
    }
    members.push_back(std::move(g));
  }
  const int64_t start = profiler::now_ns();
  for (auto& s : streams_) s->start(start);
  std::thread arrivals([this, start] { admit_arrivals(start); });
  const auto end_arrivals = [&] {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;  // all done, stopped or failed: no arrival is waited for any more
    }
    wake_.notify_all();
    arrivals.join();
    std::lock_guard lock(mutex_);
    stop_ = false;
  };
  std::vector<RunResult> runs;
  try {
    runs = Executor::run_group(members, policy_);
  } catch (...) {
    end_arrivals();
    throw;
  }
  end_arrivals();

  WorkloadRunResult result;
  result.start_ns = start;
  for (size_t i = 0; i < runs.size(); ++i) {
    WorkloadStreamResult r;
    r.rate_limited = specs_[i].rate.has_value();
    const profiler::RunProfile& p = runs[i].profile;
    const Stream& s = *streams_[i];
    const uint64_t done = std::min<uint64_t>(p.frame_end_ns.size() * s.batch(), specs_[i].frames);
    for (uint64_t request = 0; request < done; ++request) {
      const uint64_t frame = request / s.batch();
      r.end_ns.push_back(p.frame_end_ns[frame]);
      r.arrival_ns.push_back(r.rate_limited ? s.request_arrival(request) : p.frame_start_ns[frame]);
    }
    r.run = std::move(runs[i]);
    result.streams.push_back(std::move(r));
  }
  return result;
}

}  // namespace co_up
