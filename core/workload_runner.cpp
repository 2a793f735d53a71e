#include "core/workload_runner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <numeric>
#include <optional>
#include <set>
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
    {
      std::lock_guard lock(take_mutex_);
      taken_ = 0;
    }
    {
      std::lock_guard lock(order_mutex_);
      next_delivered_ = 0;
      done_.clear();
      waiting_.clear();
    }
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

  // Replicas: the next admitted frame nobody took yet, or nullopt.
  std::optional<uint64_t> take() {
    std::lock_guard lock(take_mutex_);
    if (taken_ >= admitted()) return std::nullopt;
    return taken_++;
  }
  bool all_taken() {
    std::lock_guard lock(take_mutex_);
    return taken_ >= batches_;
  }
  // Replicas: outputs in frame order. A frame's outputs go straight through when every earlier
  // frame was delivered; otherwise they are copied and wait for deliver_completed() to reach
  // them. The user's on_output runs under order_mutex_ (one call at a time, in order), never
  // under an executor's scheduling lock.
  void ordered_output(uint64_t frame, uint32_t output, std::span<const float> values) {
    std::lock_guard lock(order_mutex_);
    if (frame == next_delivered_) {
      this->output(frame, output, values);
    } else {
      waiting_[frame].emplace_back(output, std::vector<float>(values.begin(), values.end()));
    }
  }
  // Under an executor's scheduling lock: only records the completion.
  void completed(uint64_t frame) {
    std::lock_guard lock(order_mutex_);
    done_.insert(frame);
  }
  // Outside every executor lock (FrameStream::after_frames_completed): delivers the waiting
  // outputs of the frames now complete in order.
  void deliver_completed() {
    std::lock_guard lock(order_mutex_);
    while (done_.erase(next_delivered_) > 0) {
      ++next_delivered_;
      auto it = waiting_.find(next_delivered_);
      if (it == waiting_.end()) continue;
      for (const auto& [output, values] : it->second) this->output(next_delivered_, output, values);
      waiting_.erase(it);
    }
  }
  uint64_t completed_in_order() {
    std::lock_guard lock(order_mutex_);
    return next_delivered_;
  }

 private:
  const WorkloadStreamSpec& spec_;
  const uint32_t batch_;
  const uint64_t batches_;
  std::vector<std::vector<std::vector<float>>> batched_;  // batch > 1: per batch, per input
  int64_t start_ = 0;
  std::atomic<uint64_t> admitted_{0};
  std::atomic<bool> closed_{false};
  std::mutex take_mutex_;
  uint64_t taken_ = 0;  // guarded by take_mutex_
  std::mutex order_mutex_;  // guards the three below
  uint64_t next_delivered_ = 0;
  std::set<uint64_t> done_;
  std::map<uint64_t, std::vector<std::pair<uint32_t, std::vector<float>>>> waiting_;
};

// One executor of a replicated network: its frames are the network's frames it reserved, in the
// order it reserved them (so each executor still sees its own frames 0, 1, 2, ...).
class WorkloadRunner::Replica final : public FrameStream {
 public:
  explicit Replica(Stream& stream) : stream_(stream) {}

  // The network's frame behind this executor's `frame` (reserved: frame < admitted()).
  uint64_t network_frame(uint64_t frame) const {
    std::lock_guard lock(mutex_);
    return frame_of_[frame];
  }
  uint64_t reserved() const {
    std::lock_guard lock(mutex_);
    return reserved_;
  }

  // Reserves one more frame only when the executor started every frame it has: the thread that
  // asks is looking for work, and a frame reserved here is one the other processors cannot take.
  uint64_t admitted() const override {
    std::lock_guard lock(mutex_);
    if (reserved_ == started_.load(std::memory_order_acquire)) {
      if (const std::optional<uint64_t> f = stream_.take()) {
        frame_of_.push_back(*f);
        ++reserved_;
      }
    }
    return reserved_;
  }
  // Read before admitted() (FrameStream): once every frame is taken, none comes after.
  bool closed() const override { return stream_.closed() && stream_.all_taken(); }
  const float* input(uint64_t frame, uint32_t input) override {
    uint64_t started = started_.load(std::memory_order_relaxed);
    while (started < frame + 1 && !started_.compare_exchange_weak(started, frame + 1)) {
    }
    return stream_.input(network_frame(frame), input);
  }
  void output(uint64_t frame, uint32_t output, std::span<const float> values) override {
    stream_.ordered_output(network_frame(frame), output, values);
  }
  void frames_completed(uint64_t completed) override {
    for (; counted_ < completed; ++counted_) stream_.completed(network_frame(counted_));
  }
  void after_frames_completed() override { stream_.deliver_completed(); }

 private:
  Stream& stream_;
  mutable std::mutex mutex_;  // guards reserved_ and frame_of_
  mutable uint64_t reserved_ = 0;
  // Grows with the frames reserved (a run may request far more frames than it will ever reach).
  mutable std::deque<uint64_t> frame_of_;
  std::atomic<uint64_t> started_{0};
  uint64_t counted_ = 0;  // frames_completed runs under the group's scheduling lock
};

WorkloadRunner::WorkloadRunner(std::vector<WorkloadStreamSpec> streams, GroupPolicy policy, bool affinity)
    : specs_(std::move(streams)), policy_(policy), affinity_(affinity) {
  for (const WorkloadStreamSpec& s : specs_) {
    if (s.executor == nullptr || s.input_sets.empty() || s.frames == 0 || s.batch == 0) {
      throw InputError("a workload stream needs an executor, an input, a batch and at least one request");
    }
    if (s.rate && !(*s.rate > 0)) throw InputError("a workload stream's rate must be > 0");
    streams_.push_back(std::make_unique<Stream>(s));
    for (const Executor* e : s.replicas) {
      if (e == nullptr || e == s.executor) throw InputError("a workload stream's replicas must be other executors");
    }
  }
  replicas_.resize(specs_.size());
}

namespace {

// One network's run from its executors' runs (`executor` first, then the replicas): frames in
// the network's numbering, sub-graphs numbered on from one executor to the next.
RunResult merge_replica_runs(std::vector<RunResult> runs, const std::vector<std::vector<uint64_t>>& frame_of,
                             uint64_t completed_in_order, uint64_t requested) {
  RunResult merged = std::move(runs.front());
  profiler::RunProfile& m = merged.profile;
  std::vector<int64_t> start(completed_in_order, 0), end(completed_in_order, 0);
  std::vector<profiler::Event> events;
  uint32_t offset = 0;
  bool interrupted = false;
  for (size_t k = 0; k < runs.size(); ++k) {
    const profiler::RunProfile& p = k == 0 ? m : runs[k].profile;
    interrupted = interrupted || p.interrupted;
    for (size_t f = 0; f < p.frame_end_ns.size(); ++f) {
      const uint64_t g = frame_of[k][f];
      if (g < completed_in_order) {
        start[g] = p.frame_start_ns[f];
        end[g] = p.frame_end_ns[f];
      }
    }
    for (profiler::Event e : p.events) {
      e.subgraph += offset;
      if (e.kind == profiler::EventKind::kTransfer && e.peer != UINT32_MAX) e.peer += offset;
      e.frame = frame_of[k][e.frame];
      events.push_back(e);
    }
    if (k > 0) {
      for (profiler::SubGraphInfo info : p.subgraphs) {
        info.index += offset;
        m.subgraphs.push_back(info);
      }
      for (const profiler::ProcessorInfo& info : p.processors) {
        const bool known = std::any_of(m.processors.begin(), m.processors.end(),
                                       [&](const profiler::ProcessorInfo& q) { return q.letter == info.letter; });
        if (!known) m.processors.push_back(info);
      }
      // Each executor's layers under its own processors and sub-graphs: a layer a replica ran is
      // listed (and its time reported) under the processor that ran it.
      for (profiler::LayerInfo info : p.layers) {
        info.subgraph += offset;
        m.layers.push_back(std::move(info));
      }
      for (profiler::ReceiverInfo info : p.receivers) {
        info.source += offset;
        info.destination += offset;
        m.receivers.push_back(info);
      }
      m.order += "|" + p.order;
    }
    offset = static_cast<uint32_t>(m.subgraphs.size());
  }
  std::sort(events.begin(), events.end(),
            [](const profiler::Event& a, const profiler::Event& b) { return a.begin_ns < b.begin_ns; });
  m.events = std::move(events);
  // A frame that finished before an earlier one was delivered, in order, when that one finished:
  // its end (and so its latency) is the later of the two.
  for (size_t g = 1; g < end.size(); ++g) end[g] = std::max(end[g], end[g - 1]);
  m.frame_start_ns = std::move(start);
  m.frame_end_ns = std::move(end);
  m.frames_completed = completed_in_order;
  m.frames_requested = requested;
  m.interrupted = interrupted || completed_in_order < requested;
  return merged;
}

}  // namespace

WorkloadRunner::~WorkloadRunner() = default;

void WorkloadRunner::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (const WorkloadStreamSpec& s : specs_) {
    s.executor->request_stop();
    for (Executor* e : s.replicas) e->request_stop();
  }
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

void WorkloadRunner::add_replica_members(size_t i, std::vector<GroupMember>& members) {
  const WorkloadStreamSpec& spec = specs_[i];
  Stream* s = streams_[i].get();
  for (size_t k = 0; k < replicas_[i].size(); ++k) {
    Replica* r = replicas_[i][k].get();
    GroupMember g;
    g.executor = k == 0 ? spec.executor : spec.replicas[k - 1];
    g.stream = r;
    g.priority = spec.priority;
    g.network = static_cast<int>(i);
    if (spec.rate) g.arrival_ns = [s, r](uint64_t frame) { return s->arrival(r->network_frame(frame)); };
    if (spec.plan_rank) {
      g.plan_rank = [rank = spec.plan_rank, batch = spec.batch, r](uint64_t frame) {
        return rank(r->network_frame(frame) * batch);
      };
    }
    members.push_back(std::move(g));
  }
}

WorkloadRunResult WorkloadRunner::run() {
  std::vector<GroupMember> members;
  const int64_t start = profiler::now_ns();
  for (auto& s : streams_) s->start(start);
  for (size_t i = 0; i < specs_.size(); ++i) {
    replicas_[i].clear();  // a new run takes frames afresh
    if (!specs_[i].replicas.empty()) {  // the network's own executor, then each replica's
      for (size_t k = 0; k <= specs_[i].replicas.size(); ++k) {
        replicas_[i].push_back(std::make_unique<Replica>(*streams_[i]));
      }
    }
    if (!replicas_[i].empty()) {
      add_replica_members(i, members);
      continue;
    }
    GroupMember g;
    g.executor = specs_[i].executor;
    g.stream = streams_[i].get();
    g.priority = specs_[i].priority;
    g.network = static_cast<int>(i);
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
  std::vector<RunResult> member_runs;
  try {
    member_runs = Executor::run_group(members, policy_, affinity_);
  } catch (...) {
    end_arrivals();
    throw;
  }
  end_arrivals();

  // Back to one run per stream: a replicated stream's executors merged.
  std::vector<RunResult> runs;
  for (size_t i = 0, next = 0; i < specs_.size(); ++i) {
    if (replicas_[i].empty()) {
      runs.push_back(std::move(member_runs[next++]));
      continue;
    }
    std::vector<RunResult> parts;
    std::vector<std::vector<uint64_t>> frame_of;
    for (const auto& r : replicas_[i]) {
      parts.push_back(std::move(member_runs[next++]));
      std::vector<uint64_t> map(r->reserved());
      for (uint64_t f = 0; f < map.size(); ++f) map[f] = r->network_frame(f);
      frame_of.push_back(std::move(map));
    }
    // Requested: the network's frames (batches), whichever executor reserved them.
    runs.push_back(merge_replica_runs(std::move(parts), frame_of, streams_[i]->completed_in_order(),
                                      streams_[i]->batches()));
  }

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
