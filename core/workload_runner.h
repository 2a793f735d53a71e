// WorkloadRunner: runs several networks' request streams at once on shared processor threads
// (Executor::run_group), each network a stream of requests: evenly spaced at a rate, or as fast
// as the processors take them.
//
// Arrivals: request f of a network with a rate arrives at start + f / rate (CLOCK_MONOTONIC);
// one arrivals thread admits requests as they arrive and wakes the processor threads. Latency is
// counted from the arrival, not from when a processor took the request. A request of a network
// without a rate arrives when its first sub-graph takes it (a closed loop: the next enters as
// soon as the pipeline has room).
//
// Threading: run() from one thread at a time; request_stop() from any thread (a signal's).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "core/executor.h"

namespace co_up {

struct WorkloadStreamSpec {
  Executor* executor = nullptr;  // made with the group's ExecutorShare; not owned
  uint64_t frames = 1;  // requests
  // Requests per executor frame: the executor's graph takes `batch` requests stacked along its
  // inputs' first dimension (and gives its outputs so). A batch enters when its last request has
  // arrived; a last, partial batch is filled with copies of its last request, whose outputs are
  // dropped.
  uint32_t batch = 1;
  std::optional<double> rate;  // requests per second (> 0); empty: as fast as possible
  int priority = 0;
  // Request f reads input_sets[f % input_sets.size()]: one f32 tensor per graph input, of one
  // request (the graph input's element count / batch).
  std::vector<std::vector<std::vector<float>>> input_sets;
  // Optional: each request's graph outputs (its slice of a batch), on the processor thread that
  // produced them.
  std::function<void(uint64_t frame, uint32_t output, std::span<const float> values)> on_output;
  // Optional (policy kPlan): the request's position in the plan's order (a batch goes by its
  // first request).
  std::function<uint64_t(uint64_t frame)> plan_rank;
  // Optional, run-time balancing: more executors of the same network (made with the group's
  // ExecutorShare), each on another order that computes the same bits (the whole network on B and
  // on L, both CPU backends, for instance). Each executor frame (batch) then runs on exactly one
  // of `executor` and these: a free executor reserves the next waiting one when its processor
  // thread looks for work (at most one reserved and not yet started per executor), so a processor
  // that falls idle takes the frames another would have run. on_output still sees every request
  // once, in request order (outputs that finish early wait, copied, for the earlier ones); the
  // result merges the executors' runs (sub-graphs numbered on, events' frames the network's; a
  // frame's end is when it was delivered, the later of its own end and the previous frame's).
  std::vector<Executor*> replicas;
};

struct WorkloadStreamResult {
  RunResult run;  // its profile counts executor frames (batches)
  // Per completed request: when it arrived (rate: its scheduled time; as fast as possible: when
  // its first sub-graph took it (its batch's)) and when its last output was delivered, ns.
  std::vector<int64_t> arrival_ns;
  std::vector<int64_t> end_ns;
  bool rate_limited = false;
};

struct WorkloadRunResult {
  int64_t start_ns = 0;  // the first arrival time
  std::vector<WorkloadStreamResult> streams;
};

class WorkloadRunner {
 public:
  // `affinity`: Executor::run_group's (a processor keeps to the network it ran last, between
  // networks whole on it as fast as possible).
  WorkloadRunner(std::vector<WorkloadStreamSpec> streams, GroupPolicy policy, bool affinity = false);
  ~WorkloadRunner();
  WorkloadRunner(const WorkloadRunner&) = delete;
  WorkloadRunner& operator=(const WorkloadRunner&) = delete;

  // Runs until every stream's requests completed or request_stop(); rethrows a processor
  // thread's error after all threads stopped.
  WorkloadRunResult run();
  // Stops the arrivals and every executor after the sub-graph runs in progress. Idempotent.
  void request_stop();

 private:
  class Stream;
  class Replica;
  void admit_arrivals(int64_t start);
  void add_replica_members(size_t stream, std::vector<GroupMember>& members);

  std::vector<WorkloadStreamSpec> specs_;
  GroupPolicy policy_;
  bool affinity_ = false;
  std::vector<std::unique_ptr<Stream>> streams_;
  // Per stream with replicas: one per executor (`executor` first); empty otherwise.
  std::vector<std::vector<std::unique_ptr<Replica>>> replicas_;
  std::mutex mutex_;  // guards stop_ (the arrivals thread waits on it)
  std::condition_variable wake_;
  bool stop_ = false;
};

}  // namespace co_up
