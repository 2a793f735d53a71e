// Executor: sets up a Partition on its processors and runs frames through it.
//
// Setup (constructor): takes a Placement (core/placement.h: devices bound, nodes checked), compiles
// every sub-graph, all in parallel; one Receiver per (boundary edge, destination) with the
// capacity the pipeline depth needs.
//
// Run: one host thread per *processor* (not per sub-graph), pinned to that processor's host
// cores. A processor that owns several sub-graphs (order "BLB") runs whichever has a frame ready,
// oldest frame first; a sub-graph is ready when every input holds its next frame and every
// receiver it feeds has a free slot — slots are reserved before the run starts, so no thread ever
// blocks half-way through a frame and non-contiguous mappings cannot deadlock.
//   pipeline mode: frames overlap across processors (throughput);
//   switch mode:   frame f+1 enters only after frame f has left (latency), the same machinery
//                  with one frame in flight.
//   overlap mode:  switch, except that frame f+1 may enter while f is in flight (never while
//                  f-1 is), and runs on a processor only once f has nothing left to run there:
//                  it fills the processors' idle tails of f without delaying f.
// Frames are numbered; receivers check the numbers, so a lost, duplicated or reordered frame is
// an error, never a silent wrong answer.
//
// Streaming: run_stream() runs frames as a FrameStream admits them, until the stream is closed
// and drained (or stopped); run() is run_stream() over a fixed request.
//
// Threading: run()/run_stream() are called from one thread at a time; request_stop() and
// notify_stream() from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/exit_policy.h"
#include "core/layer_observer.h"
#include "core/mapping.h"
#include "core/partition.h"
#include "core/placement.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "graph/graph.h"
#include "profiler/run_profile.h"

namespace co_up {

// The executor's name for the Mode of a Mapping (core/mapping.h): the same type.
using ExecutionMode = Mode;

struct ExecutorOptions {
  Mode mode = Mode::kPipeline;
  // Receive buffers of an edge between adjacent stages; edges that skip stages get
  // proportionally more (see receiver_capacities). The consumer holds one while it runs a frame:
  // with 2 the producer fills the other and then waits, so the stages run in lock step and every
  // period is the slower of the two frames in flight; 3 lets one finished frame wait between
  // them, so a frame that is slow on one stage does not stall the other.
  uint32_t receiver_buffers = 3;
  int profile_level = 0;  // 0: frames; 1: + sub-graphs and transfers; 2: + layers
  // Switch and overlap modes: boundary tensors between backends that take runtime memory (ABI
  // 1.3 io_memory) live in one shared buffer each, written and read in place, and a channel Concat of
  // convolution results from other sub-graphs is written in place by them and not run: no copy
  // at those boundaries. False: every boundary copies (what `co_up profile` times as transfers,
  // the cost a pipeline still pays).
  bool share_boundaries = true;
  // How long an idle processor thread spins for new work before it sleeps, when no other
  // processor thread shares its cores. Sleeping at once cost a balanced B/L pipeline 15-20 % on
  // the development host (the idle core comes back slow: cold caches, or another physical core
  // under a hypervisor); spinning costs power while waiting. 0 sleeps at once (with
  // spin_wait_in_frame_us 0 too).
  uint32_t spin_wait_us = 1000;
  // How long in all such a thread spins instead while its processor still owes work to an admitted
  // frame and the work it waits on runs on another processor thread that owns its cores (a CPU
  // cluster), none on a thread that shares cores (an accelerator's host thread: spinning would
  // take the cores it or its driver computes on). Inside a switch-mode frame a processor often
  // waits longer than spin_wait_us for the other's branch, and a thread that slept came back
  // 10-200 us late on the development host (a halted virtual core), on every such wait; the
  // planner's cost model assumes no such wake-up. A cap, not unbounded: spinning costs power on a
  // board, a long wait (a slow stage of an unbalanced pipeline) is better slept through, and a
  // real-time (SCHED_FIFO) process whose threads spin all their idle time meets the kernel's
  // real-time throttling (stalls of tens of ms about once a second: set 0 there).
  // 0, or at most spin_wait_us: every wait spins spin_wait_us only.
  uint32_t spin_wait_in_frame_us = 20000;
  // Called at layer and sub-graph boundaries on the processor threads (DVFS, GPIO tags). Not
  // owned; they must outlive the Executor.
  std::vector<LayerObserver*> observers;
  // Multi-exit networks (graph::Graph::has_exits): when a frame stops at an exit. A stopped frame
  // completes at that exit: each later exit's output is the stopping exit's, delivered there, and
  // no later sub-graph sees it (no hand-off, no run, no event); frames still complete in order.
  // Default: never stop early. Setup throws InputError when it does not fit the network.
  ExitPolicy exit_policy;
};

struct RunRequest {
  uint64_t frames = 1;
  // Frame f reads input_sets[f % input_sets.size()]; a set holds one f32 tensor per graph input.
  std::vector<std::vector<std::vector<float>>> input_sets;
  // Optional: each frame's graph outputs, in frame order, on the thread that produced them. In a
  // multi-exit network, a frame that stops early gets its later exits' outputs from the stopping
  // sub-graph's thread at once, so those may arrive before an earlier frame's.
  std::function<void(uint64_t frame, uint32_t output, std::span<const float> values)> on_output;
};

// Where a streaming run's frames come from and where their outputs go (run_stream). The executor
// pulls: on every scheduling pass it reads admitted() and closed(), so a producer publishes a
// frame by making its inputs readable, then raising admitted(), then calling
// Executor::notify_stream() to wake idle processor threads.
class FrameStream {
 public:
  virtual ~FrameStream() = default;
  // Frames [0, admitted()) may run. Never decreases. Called under the executor's scheduling lock:
  // must not block or call the Executor (an atomic load).
  virtual uint64_t admitted() const = 0;
  // True once no frame beyond admitted() will come: the run ends when those have completed.
  // Read before admitted(), so a producer closes only after its last admission. Same rules.
  virtual bool closed() const = 0;
  // Graph input `input` of an admitted frame: f32, the input's element count, readable until
  // frame_completed() counts the frame. Called on processor threads, outside the lock.
  virtual const float* input(uint64_t frame, uint32_t input) = 0;
  // Graph output `output` of `frame`, on the producing processor thread, outside the lock;
  // `values` are valid only during the call. Each (frame, output) exactly once (a frame stopped
  // at an exit gets every later exit's output from the stopping sub-graph, see RunRequest).
  virtual void output(uint64_t frame, uint32_t output, std::span<const float> values) = 0;
  // Frames [0, completed) have delivered all their outputs (in order: completed only grows).
  // Called under the scheduling lock: must not block for long or call the Executor.
  virtual void frames_completed(uint64_t completed) = 0;
  // After frames_completed(), on the same processor thread, outside the scheduling lock: where a
  // stream hands completed frames to its consumer without waking a thread of its own. May call
  // notify_stream(); the thread's next sub-graph waits until it returns. Default: nothing.
  virtual void after_frames_completed() {}
};

struct RunResult {
  profiler::RunProfile profile;
  std::vector<std::vector<float>> last_outputs;  // graph outputs of the last completed frame
};

// Several executors sharing processor threads (a workload of several networks): each is
// constructed with the same ExecutorShare — one scheduling lock and one wake-up for all — and
// Executor::run_group() runs them together. Opaque; make_executor_share() creates one.
struct ExecutorShare;
std::shared_ptr<ExecutorShare> make_executor_share();
class Executor;

// How a processor thread serving several networks chooses among their ready sub-graphs. Within
// one network it is always the oldest frame first (as for a single network).
enum class GroupPolicy {
  kOldest,    // the request that arrived first (GroupMember::arrival_ns), then the lower frame
              // number, then the member listed first
  kPriority,  // the higher GroupMember::priority, then as kOldest
  kPlan,      // the lower GroupMember::plan_rank (the plan's order of requests)
};

struct GroupMember {
  Executor* executor = nullptr;  // constructed with the group's ExecutorShare
  FrameStream* stream = nullptr;
  int priority = 0;
  // When frame `frame` of this member arrived (CLOCK_MONOTONIC ns), for kOldest; called under
  // the scheduling lock (must be cheap, must not block). Empty: a request arrives when a
  // processor can take it (as fast as possible), so it is younger than any waiting one.
  std::function<int64_t(uint64_t frame)> arrival_ns;
  // The position of `frame` of this member in the plan's order of requests (kPlan); same rules.
  std::function<uint64_t(uint64_t frame)> plan_rank;
  // Members with the same network >= 0 are orders of one network (replicas): with affinity, a
  // processor thread changing network prefers one no other thread is on. -1: a network of its own.
  int network = -1;
};

class Executor {
 public:
  // Throws RuntimeError when a sub-graph does not compile. The placement's graph must outlive
  // the Executor.
  Executor(Placement placement, ExecutorOptions options);
  // The same, as a member of a group sharing `share` (run_group); nullptr: its own.
  Executor(Placement placement, ExecutorOptions options, std::shared_ptr<ExecutorShare> share);
  // The same with Placement::create(graph, partition, platform, plugins) first: throws what that
  // throws too (unknown letter, missing plugin, unsupported node).
  Executor(const graph::Graph& graph, Partition partition, const Platform& platform,
           const PluginRegistry& plugins, ExecutorOptions options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs until all frames completed or request_stop(); then the profile says how far it got.
  // Rethrows the first error any processor thread hit, after all threads stopped.
  RunResult run(const RunRequest& request);
  // Runs frames as `stream` admits them, until it is closed and every admitted frame completed,
  // or request_stop(). The profile's frames_requested is what was admitted. Rethrows the first
  // error of a processor thread after all threads stopped.
  RunResult run_stream(FrameStream& stream);
  // Wakes the processor threads of a running run_stream() to read admitted()/closed() again.
  void notify_stream();
  // Asks a running run() — or the next one, if none is running — to stop after the sub-graph
  // runs in progress. Idempotent.
  void request_stop();

  // Runs every member's stream at once on shared processor threads: one host thread per
  // processor letter across all members, never two on one processor; each runs the ready
  // sub-graph of any member that `policy` prefers. Returns one result per member, in order.
  // Stops the whole group when any member fails or is asked to stop (request_stop()); after all
  // threads stopped, rethrows an error of a member (the first member's that has one). Members
  // need distinct executors that share one ExecutorShare (else InputError). Not concurrently
  // with run()/run_stream() of a member.
  // `affinity`: a thread that ran a sub-graph of member m runs m's next ready one before the one
  // `policy` prefers, as long as both members run whole on its processor (an executor of one
  // processor, so no other processor waits on the choice), have no arrival_ns (as fast as
  // possible: no arrival to honour) and, under kPriority, equal priorities. A frame run after
  // another network's was slower than one run after its own network's (0.15-0.3 ms for a small
  // network on the 2-core development host: caches and TLBs, presumably). A thread changing
  // network (its own has nothing ready) takes, among the members affinity may reorder, the
  // policy's first whose network (GroupMember::network) no other thread ran last, when one is
  // ready: with replicas, each processor then keeps to a network of its own, not all processors
  // to the policy's first network at once.
  static std::vector<RunResult> run_group(const std::vector<GroupMember>& members, GroupPolicy policy,
                                          bool affinity = false);

  const Partition& partition() const;
  int64_t setup_ns() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace co_up
