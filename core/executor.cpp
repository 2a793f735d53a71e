#include "core/executor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/affinity.h"
#include "core/error.h"
#include "core/receiver.h"
#include "core/sender.h"
#include "graph/shared_boundary.h"
#include "profiler/events.h"

namespace co_up {

using profiler::Event;
using profiler::EventKind;
using profiler::now_ns;

namespace {

constexpr uint32_t kToUser = UINT32_MAX;
constexpr uint32_t kNoExit = UINT32_MAX;

struct SubGraphRuntime;

struct Processor {
  char letter = 0;
  const ProcessorSpec* spec = nullptr;
  std::string backend;
  std::shared_ptr<Device> device;
  std::vector<int> host_cores;
  bool owns_its_cores = false;  // no other processor thread of this run shares a host core
  // The same for the thread serving it in the current run (a group's thread serves several
  // executors' processors of one letter: run_group decides). Set before the threads start.
  bool thread_owns_cores = false;
  // Its thread found nothing to run and waits (spinning or asleep), or has left the run; false
  // while it runs a sub-graph or looks for one. Written by its own thread, read without the lock by
  // idle threads deciding whether to keep spinning (ExecutorOptions::spin_wait_in_frame_us).
  std::atomic<bool> waiting{false};
  uint64_t in_frame_sleeps = 0;  // RunProfile's ProcessorInfo::in_frame_sleeps; its thread's
  std::vector<SubGraphRuntime*> subgraphs;
  std::vector<Event> events;  // written only by this processor's thread while running
  // Overlap mode: the oldest frame any of its sub-graphs has still to run (their least
  // next_frame), taken by its thread under the scheduling lock before each choice. A sub-graph
  // may run frame g only when this is g: the frame before has nothing left on this processor.
  uint64_t frame_floor = 0;
};

struct InputPort {
  Receiver* receiver = nullptr;  // nullptr: a graph input
  uint32_t graph_input = 0;
  size_t bytes = 0;
  bool bind_supported = true;  // cleared the first time the backend refuses a binding
  bool in_place = false;       // compiled to read it where its producer wrote it (no copy)
};

struct OutputPort {
  std::optional<Sender> sender;               // when later sub-graphs read it
  std::optional<uint32_t> graph_output;       // when the user reads it
  uint32_t layer = 0;                         // layer unit that produced it
  size_t bytes = 0;
  bool in_place = false;  // compiled to write it where every receiving sub-graph reads it (no copy)
};

struct SubGraphRuntime {
  const SubGraph* subgraph = nullptr;
  Processor* processor = nullptr;
  std::unique_ptr<CompiledSubGraph> compiled;
  std::vector<InputPort> inputs;
  std::vector<OutputPort> outputs;
  bool reads_graph_input = false;
  bool writes_graph_output = false;
  // Scheduling state, guarded by Impl::mutex.
  uint64_t next_frame = 0;
  uint64_t stall_counted_frame = UINT64_MAX;
  // The frame being run: claimed inputs and reserved output slots (per output port).
  std::vector<const void*> claimed_inputs;
  std::vector<std::vector<void*>> reserved_slots;
  // Multi-exit networks (Impl::connect_exits). The exits computed here as (output port, exit),
  // ascending; the exit sub-graphs before this one, which must have decided a frame before this
  // one starts it (so a stopped frame costs later processors nothing).
  std::vector<std::pair<size_t, uint32_t>> exit_ports;
  std::vector<const SubGraphRuntime*> exit_gates;
  // The running frame's exit when it stops here (kNoExit: it goes on), and that exit's output,
  // which the later exits deliver for it. Written and read by the running processor thread only.
  uint32_t stop_exit = kNoExit;
  std::vector<float> exit_values;
  uint64_t frames_skipped = 0;  // guarded by Impl::mutex
  // Per output port and receiver: whether the claimed frame had already stopped before that
  // receiver's sub-graph when it was claimed (then nothing is copied to it). Set under the lock.
  std::vector<std::vector<uint8_t>> unsent;
  // Whether committing a frame that stops here must wake the other processor threads (see
  // Impl::stop_wakes_others); set up once.
  bool stop_wakes_others = true;
  // Overlap mode: the sub-graphs of other processors that read or write a shared buffer this one
  // reads or writes. Frame g runs here only after each of them has finished frame g - 1, so a
  // buffer is never written for frame g while another processor still reads frame g - 1's
  // (one buffer per tensor serves both frames in flight). Set up once.
  std::vector<const SubGraphRuntime*> buffer_guards;
};

// State the layer hooks need; lives on the processor thread's stack during one sub-graph run.
struct HookState {
  std::vector<Event>* events;  // nullptr: layers are not timed (profile level < 2)
  const std::vector<LayerObserver*>* observers;
  char processor;
  uint32_t subgraph;
  uint64_t frame;
  int64_t layer_begin_ns;
  uint32_t layer_begin = 0;  // an accelerator's hooks span its partition: begin(first), end(last)
};

void on_layer_begin(void* user, uint32_t layer) {
  auto* state = static_cast<HookState*>(user);
  for (LayerObserver* o : *state->observers) o->on_layer_begin(state->processor, layer, state->frame);
  state->layer_begin = layer;
  state->layer_begin_ns = now_ns();
}

void on_layer_end(void* user, uint32_t layer) {
  auto* state = static_cast<HookState*>(user);
  const int64_t end = now_ns();
  for (LayerObserver* o : *state->observers) o->on_layer_end(state->processor, layer, state->frame);
  if (state->events == nullptr) return;
  Event e;
  e.kind = EventKind::kLayer;
  e.subgraph = state->subgraph;
  e.layer = state->layer_begin;
  e.last_layer = layer;
  e.frame = state->frame;
  e.begin_ns = state->layer_begin_ns;
  e.end_ns = end;
  state->events->push_back(e);
}

void on_layer_device_time(void* user, uint32_t layer, uint64_t device_ns) {
  auto* state = static_cast<HookState*>(user);
  if (state->events == nullptr || state->events->empty()) return;
  Event& e = state->events->back();  // the layer_end just before
  if (e.kind == EventKind::kLayer && e.last_layer == layer && e.frame == state->frame) {
    e.device_ns = static_cast<int64_t>(device_ns);
  }
}

}  // namespace

// One lock and one wake-up for every executor of a group (or one executor alone).
struct ExecutorShare {
  std::mutex mutex;
  std::condition_variable changed;
  std::atomic<uint64_t> generation{0};
};

std::shared_ptr<ExecutorShare> make_executor_share() { return std::make_shared<ExecutorShare>(); }

struct Executor::Impl {
  // Declared first, destroyed last: the devices, the descriptions the compiled sub-graphs were
  // made from, and the platform the processors' spec pointers point into.
  Placement placement;
  const graph::Graph& graph;
  const Partition& partition;
  const Platform& platform;
  ExecutorOptions options;
  int64_t setup_ns = 0;

  // Destruction order matters: sub-graphs (compiled objects) before processors (devices);
  // receivers outlive both users. Members are destroyed in reverse order of declaration.
  std::vector<std::unique_ptr<Receiver>> receivers;
  std::vector<std::string> receiver_layouts;  // per receiver, for the profile (set by connect)
  std::vector<std::string> receiver_in_place;  // per receiver: ReceiverInfo::in_place
  // Boundary tensors shared in place (plan_shared_tensors): the buffers the compiled sub-graphs
  // write and read directly (they point into them: declared before `subgraphs`, so destroyed
  // after), and per sub-graph the io_memory entries it was compiled with.
  struct AlignedFree {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<std::byte, AlignedFree>> shared_buffers;
  std::vector<std::vector<co_up_io_memory>> io_memory;
  // Placed tensors: whether each is a whole buffer or a channel slice of a Concat's output.
  enum class InPlace { kShared, kSlice };
  std::map<graph::TensorId, InPlace> shared_tensors;
  std::vector<std::unique_ptr<Processor>> processors;
  std::vector<std::unique_ptr<SubGraphRuntime>> subgraphs;

  // Scheduling state. The lock, the wake-up and the generation live in `share`: shared by the
  // executors of a group (run_group), whose processor threads serve them all.
  std::shared_ptr<ExecutorShare> share;
  std::mutex& mutex;
  std::condition_variable& changed;
  bool stop = false;
  // Bumped (under `mutex`) whenever scheduling state changes, so that an idle processor thread
  // can spin on it without the lock before it blocks on `changed`.
  std::atomic<uint64_t>& generation;
  std::exception_ptr error;
  uint64_t frames = 0;    // admitted by the stream so far
  bool closed = false;    // the stream admits no more
  uint64_t completed = 0;
  FrameStream* stream = nullptr;
  std::vector<int64_t> frame_start;
  std::vector<int64_t> frame_end;
  std::vector<std::vector<float>> last_outputs;
  // Multi-exit networks: the sub-graph computing each exit, and each entered frame's exit
  // (kNoExit until decided; guarded by `mutex`). Outputs of one exit may be delivered by two
  // threads (its own sub-graph, or the one where a frame stopped): last_outputs keeps the newest.
  std::vector<uint32_t> exit_subgraph;
  std::vector<uint32_t> frame_exit;
  std::mutex last_outputs_mutex;
  std::vector<uint64_t> last_output_frame;

  Impl(Placement p, ExecutorOptions o, std::shared_ptr<ExecutorShare> s)
      : placement(std::move(p)),
        graph(placement.graph()),
        partition(placement.partition()),
        platform(placement.platform()),
        options(std::move(o)),
        share(s ? std::move(s) : make_executor_share()),
        mutex(share->mutex),
        changed(share->changed),
        generation(share->generation) {}

  // What one processor thread serves: this executor's processor of its letter. A group's
  // thread serves one lane per member using the letter; `member` indexes the group's members.
  struct Lane {
    Impl* impl = nullptr;
    Processor* processor = nullptr;
    size_t member = 0;
  };
  // Whether lane a's frame fa goes before lane b's frame fb (different members).
  using Prefer = std::function<bool(size_t a, uint64_t fa, size_t b, uint64_t fb)>;
  // Whether a thread that last ran member `last` keeps to it (when it has a ready sub-graph)
  // rather than running the one `prefer` chose of member `pick` (run_group's affinity).
  using Keep = std::function<bool(size_t last, size_t pick)>;
  // run_group's affinity across processor threads: the network each thread ran last (written and
  // read under the scheduling lock), so that a thread changing network prefers one that no other
  // thread is on. Two cores on one network's requests at once ran them 7-11 % slower than each
  // beside another network, and with equal request counts the threads otherwise walked through
  // the networks in step (every network on both cores at once).
  struct Spread {
    const std::vector<size_t>* network_of = nullptr;  // member -> network (replicas share one)
    std::vector<size_t>* last = nullptr;              // thread slot -> network (SIZE_MAX: none yet)
    size_t slot = 0;                                  // this thread's
  };
  // `group`: every executor of the run; a stop or error in any of them stops this thread (a
  // stage of another network may wait on a processor that stopped).
  static void serve(const std::vector<Lane>& lanes, const std::vector<Impl*>& group,
                    bool owns_cores, const Prefer& prefer, const Keep& keep = nullptr,
                    const Spread* spread = nullptr);
  void begin_run(FrameStream& stream);
  RunResult end_run(FrameStream& stream);

  void set_up();
  void create_processors();
  void plan_shared_tensors();
  void compile_all();
  void connect();
  void connect_exits();
  void guard_shared_buffers();

  void refresh_admitted();
  bool inputs_ready(const SubGraphRuntime& s) const;
  bool runnable(SubGraphRuntime& s);
  void claim(SubGraphRuntime& s);
  void execute(SubGraphRuntime& s, uint64_t frame);
  bool commit(SubGraphRuntime& s);
  bool exits_decided(const SubGraphRuntime& s) const;
  bool skips(const SubGraphRuntime& s, uint64_t frame) const;
  bool pass_stopped_frames(SubGraphRuntime& s);
  void mark_unsent(SubGraphRuntime& s, uint64_t frame);
  void hand_off(SubGraphRuntime& s, uint64_t frame);
  bool frame_done(uint64_t frame) const;
  bool stop_wakes_others(const SubGraphRuntime& s) const;
  void decide_exit(SubGraphRuntime& s);
  void deliver_output(SubGraphRuntime& s, uint64_t frame, uint32_t output, std::span<const float> values);
  void deliver_later_exits(SubGraphRuntime& s, uint64_t frame);
  void add_exit_profile(profiler::RunProfile& profile) const;
  void processor_loop(Processor& p);
  static bool spin_while_unchanged(const std::vector<Lane>& lanes, const std::vector<char>& owed,
                                   uint64_t seen);
  static bool waits_on_own_cores(const std::vector<Lane>& lanes, const std::vector<char>& owed);
  void fail(std::exception_ptr e);
  profiler::RunProfile make_profile(bool interrupted) const;
};

void Executor::Impl::set_up() {
  const int64_t start = now_ns();
  // Before the (slow) compile: a policy that does not fit the network is the user's to fix.
  options.exit_policy.check_exit_count(graph.has_exits() ? graph.outputs().size() : 0,
                                       "graph '" + graph.name() + "'");
  create_processors();
  plan_shared_tensors();
  compile_all();
  connect();
  connect_exits();
  guard_shared_buffers();
  setup_ns = placement.setup_ns() + (now_ns() - start);
}

void Executor::Impl::create_processors() {
  for (const BoundProcessor& bound : placement.processors()) {
    auto p = std::make_unique<Processor>();
    p->letter = bound.letter;
    p->spec = bound.spec;
    p->backend = bound.backend;
    p->device = bound.device;
    p->host_cores = bound.host_cores;
    processors.push_back(std::move(p));
  }
  for (auto& p : processors) {
    p->owns_its_cores = true;
    for (const auto& other : processors) {
      if (other == p) continue;
      for (int core : p->host_cores) {
        if (std::find(other->host_cores.begin(), other->host_cores.end(), core) !=
            other->host_cores.end()) {
          p->owns_its_cores = false;
        }
      }
    }
  }
  for (const SubGraph& sg : partition.subgraphs()) {
    auto s = std::make_unique<SubGraphRuntime>();
    s->subgraph = &sg;
    for (auto& p : processors) {
      if (p->letter == sg.processor) s->processor = p.get();
    }
    s->processor->subgraphs.push_back(s.get());
    subgraphs.push_back(std::move(s));
  }
}

// Zero-copy boundaries. Processors that share host memory need not copy a tensor from one
// sub-graph to the next: the producer writes it into a buffer the runtime owns and every reader
// reads it there (co_up_io_memory, ABI 1.3). And where a channel Concat gathers convolution
// results from other sub-graphs (the parts of a spread split layer, the branches of an inception
// module), each producer writes its slice of the Concat's output and the Concat is not run.
// Switch mode: frame f + 1 enters after every sub-graph has finished frame f, so one buffer per
// tensor holds every frame in turn. Overlap mode: two frames may be in flight, but a sub-graph
// touching a shared buffer runs frame g only after every other processor's sub-graph touching it
// finished frame g - 1 (guard_shared_buffers), and those of its own processor did (the
// processor's frame floor), so the buffer again holds one frame at a time. A pipeline needs the
// receivers' rings (several frames in flight), where the copies stay. Only 4-D f32 tensors passed in NHWC between backends that
// declare co_up_plugin_api.external_io, never a graph input or output, never with exits.
void Executor::Impl::plan_shared_tensors() {
  const std::vector<SubGraph>& sgs = partition.subgraphs();
  io_memory.assign(sgs.size(), {});
  if (!options.share_boundaries || options.mode == Mode::kPipeline || graph.has_exits()) return;
  const std::set<graph::TensorId>& nhwc = placement.nhwc_tensors();
  auto caps = [&](uint32_t subgraph) { return subgraphs[subgraph]->processor->device->plugin().external_io(); };
  struct Place {
    size_t buffer;
    uint64_t channel_offset = 0, pixel_stride = 0;
  };
  std::map<graph::TensorId, Place> place;
  const auto& edges = partition.edges();
  std::map<graph::TensorId, const Edge*> edge_by_tensor;  // one edge per tensor (Partition)
  for (const Edge& e : edges) edge_by_tensor.emplace(e.tensor, &e);
  auto edge_of = [&](graph::TensorId t) -> const Edge* {
    const auto it = edge_by_tensor.find(t);
    return it == edge_by_tensor.end() ? nullptr : it->second;
  };
  auto shareable = [&](const Edge* e, uint32_t bit) {
    return e != nullptr && e->source != kGraphInput && !e->is_graph_output && !e->destinations.empty() &&
           graph::shareable_boundary(graph, e->tensor) && nhwc.count(e->tensor) != 0 && (caps(e->source) & bit) != 0 &&
           std::all_of(e->destinations.begin(), e->destinations.end(),
                       [&](uint32_t d) { return (caps(d) & bit) != 0; });
  };
  auto new_buffer = [&](graph::TensorId t) {
    constexpr size_t kAlignment = 64;
    const size_t bytes = (graph.tensor(t).desc.byte_size() + kAlignment - 1) / kAlignment * kAlignment;
    shared_buffers.emplace_back(static_cast<std::byte*>(std::aligned_alloc(kAlignment, bytes)));
    if (!shared_buffers.back()) throw std::bad_alloc();
    return shared_buffers.size() - 1;
  };
  auto in_subgraph = [&](const SubGraph& sg, graph::NodeId n) {
    return std::find(sg.nodes.begin(), sg.nodes.end(), n) != sg.nodes.end();
  };
  // Joins first: a Concat of sub-graph c whose inputs are convolution results, of other
  // sub-graphs (through an edge to c alone) or of c itself (read by the Concat alone).
  for (const SubGraph& c : sgs) {
    if ((caps(c.index) & CO_UP_EXTERNAL_IO_CHANNEL_SLICE) == 0) continue;
    for (graph::NodeId id : c.nodes) {
      const graph::Node& n = graph.node(id);
      const graph::TensorDesc& out = graph.tensor(n.outputs.at(0)).desc;
      if (n.op != graph::OpType::kConcat || out.shape.size() != 4 || n.inputs.size() < 2) continue;
      const int64_t axis = n.attrs.get_int("axis");
      if (axis != 1 && axis != -3) continue;
      bool joins = true;
      int slices = 0;
      for (graph::TensorId t : n.inputs) {
        const graph::Tensor& in = graph.tensor(t);
        const bool conv = in.producer != graph::kNoNode && graph.node(in.producer).op == graph::OpType::kConv &&
                          graph.consumers(t) == std::vector<graph::NodeId>{id} && place.count(t) == 0;
        if (!conv) {
          joins = false;
        } else if (in_subgraph(c, in.producer)) {
          joins = joins && std::find(c.outputs.begin(), c.outputs.end(), t) == c.outputs.end();
        } else {
          const Edge* e = edge_of(t);
          joins = joins && shareable(e, CO_UP_EXTERNAL_IO_CHANNEL_SLICE) && e->destinations.size() == 1;
          ++slices;
        }
      }
      if (!joins || slices == 0) continue;
      const size_t buffer = new_buffer(n.outputs[0]);
      const auto stride = static_cast<uint64_t>(out.shape[1]);
      uint64_t offset = 0;
      for (graph::TensorId t : n.inputs) {
        if (!in_subgraph(c, graph.tensor(t).producer)) place[t] = {buffer, offset, stride};
        offset += static_cast<uint64_t>(graph.tensor(t).desc.shape.at(1));
      }
      // The Concat's output is the buffer (the backend learns it from the slices); where later
      // sub-graphs read it, they read it there too, else the runtime copies it on from there.
      const Edge* e = edge_of(n.outputs[0]);
      if (e != nullptr && shareable(e, CO_UP_EXTERNAL_IO_DENSE)) place[n.outputs[0]] = {buffer, 0, 0};
    }
  }
  for (const Edge& e : edges) {
    if (place.count(e.tensor) == 0 && shareable(&e, CO_UP_EXTERNAL_IO_DENSE)) {
      place[e.tensor] = {new_buffer(e.tensor), 0, 0};
    }
  }
  for (const auto& [t, where] : place) shared_tensors[t] = where.pixel_stride == 0 ? InPlace::kShared : InPlace::kSlice;
  for (const SubGraph& sg : sgs) {
    auto add = [&](int32_t direction, size_t index, graph::TensorId t) {
      auto it = place.find(t);
      if (it == place.end()) return;
      co_up_io_memory m{};
      m.struct_size = sizeof(m);
      m.direction = direction;
      m.index = static_cast<uint32_t>(index);
      m.host_ptr = shared_buffers[it->second.buffer].get();
      m.channel_offset = it->second.channel_offset;
      m.pixel_stride = it->second.pixel_stride;
      io_memory[sg.index].push_back(m);
    };
    for (size_t i = 0; i < sg.inputs.size(); ++i) add(CO_UP_IO_INPUT, i, sg.inputs[i]);
    for (size_t o = 0; o < sg.outputs.size(); ++o) add(CO_UP_IO_OUTPUT, o, sg.outputs[o]);
  }
}

void Executor::Impl::compile_all() {
  // Sub-graphs are compiled in parallel (weight packing dominates setup), each on a thread pinned
  // to its processor's host cores so first-touch memory lands near the processor that uses it.
  // The placement has checked every node with the backend already.
  std::vector<std::exception_ptr> errors(subgraphs.size());
  // Per sub-graph: its backend declined the io_memory it was given (CO_UP_STATUS_UNSUPPORTED).
  std::vector<char> declined(subgraphs.size(), 0);
  auto compile = [this, &errors, &declined](size_t i) {
    SubGraphRuntime& s = *subgraphs[i];
    try {
      pin_current_thread(s.processor->host_cores);
      co_up_subgraph_desc desc = placement.desc(s.subgraph->index).get();
      const std::vector<co_up_io_memory>& memory = io_memory[i];
      desc.io_memory = memory.empty() ? nullptr : memory.data();
      desc.io_memory_count = static_cast<uint32_t>(memory.size());
      s.compiled = std::make_unique<CompiledSubGraph>(
          s.processor->device, desc,
          subgraph_label(*s.subgraph) + " on backend '" + s.processor->backend + "'");
    } catch (const UnsupportedByPlugin&) {
      if (io_memory[i].empty()) errors[i] = std::current_exception();
      declined[i] = 1;
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < subgraphs.size(); ++i) threads.emplace_back(compile, i);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  if (std::find(declined.begin(), declined.end(), 1) == declined.end()) return;
  // A backend that cannot take the runtime's memory as described (the ABI lets it decline):
  // the network's boundaries are copied instead, as without share_boundaries. Every sub-graph
  // compiled with io_memory is compiled again without it (a shared tensor's producer and readers
  // must agree), then the buffers they pointed into go.
  threads.clear();
  for (size_t i = 0; i < subgraphs.size(); ++i) {
    if (io_memory[i].empty()) continue;
    subgraphs[i]->compiled.reset();
    io_memory[i].clear();
    declined[i] = 0;
    threads.emplace_back(compile, i);
  }
  for (std::thread& t : threads) t.join();
  shared_tensors.clear();
  shared_buffers.clear();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void Executor::Impl::connect() {
  const auto capacities = receiver_capacities(partition, std::max(options.receiver_buffers, 1u));
  std::map<std::pair<graph::TensorId, uint32_t>, Receiver*> receiver_of;  // (tensor, dest)
  const auto& edges = partition.edges();
  for (size_t e = 0; e < edges.size(); ++e) {
    const Edge& edge = edges[e];
    if (edge.source == kGraphInput) continue;  // the graph input is read in place
    const graph::Tensor& t = graph.tensor(edge.tensor);
    for (size_t k = 0; k < edge.destinations.size(); ++k) {
      // A shared tensor's receivers only count frames: the data stays in the shared buffer.
      const auto shared = shared_tensors.find(edge.tensor);
      const size_t bytes = shared != shared_tensors.end() ? 0 : t.desc.byte_size();
      // ReceiverInfo::in_place's words.
      receiver_in_place.push_back(shared == shared_tensors.end()          ? ""
                                  : shared->second == InPlace::kShared ? "shared"
                                                                       : "slice");
      receivers.push_back(std::make_unique<Receiver>(t.name, bytes, capacities[e][k],
                                                     edge.source, edge.destinations[k]));
      receiver_of[{edge.tensor, edge.destinations[k]}] = receivers.back().get();
      receiver_layouts.push_back(graph::layout_name(
          placement.nhwc_tensors().count(edge.tensor) != 0 ? graph::Layout::kNhwc : t.desc.layout));
    }
  }
  const auto& graph_inputs = graph.inputs();
  const auto& graph_outputs = graph.outputs();
  for (auto& s : subgraphs) {
    const SubGraph& sg = *s->subgraph;
    for (graph::TensorId t : sg.inputs) {
      InputPort port;
      port.bytes = graph.tensor(t).desc.byte_size();
      auto it = std::find(graph_inputs.begin(), graph_inputs.end(), t);
      if (it != graph_inputs.end()) {
        port.graph_input = static_cast<uint32_t>(it - graph_inputs.begin());
        s->reads_graph_input = true;
      } else {
        port.receiver = receiver_of.at({t, sg.index});
      }
      s->inputs.push_back(port);
    }
    for (size_t o = 0; o < sg.outputs.size(); ++o) {
      const graph::TensorId t = sg.outputs[o];
      OutputPort port;
      port.bytes = graph.tensor(t).desc.byte_size();
      port.layer = graph.node(graph.tensor(t).producer).layer;
      std::vector<Receiver*> targets;
      for (const Edge& edge : edges) {
        if (edge.tensor != t) continue;
        for (uint32_t d : edge.destinations) targets.push_back(receiver_of.at({t, d}));
      }
      if (!targets.empty()) port.sender.emplace(static_cast<uint32_t>(o), std::move(targets));
      auto it = std::find(graph_outputs.begin(), graph_outputs.end(), t);
      if (it != graph_outputs.end()) {
        port.graph_output = static_cast<uint32_t>(it - graph_outputs.begin());
        s->writes_graph_output = true;
      }
      s->outputs.push_back(std::move(port));
    }
    for (const co_up_io_memory& m : io_memory[sg.index]) {
      if (m.direction == CO_UP_IO_INPUT) {
        s->inputs[m.index].in_place = true;
      } else {
        s->outputs[m.index].in_place = true;
      }
    }
    s->reserved_slots.resize(s->outputs.size());
    s->claimed_inputs.resize(s->inputs.size());
  }
}

void Executor::Impl::guard_shared_buffers() {
  if (options.mode != Mode::kOverlap) return;
  std::map<const void*, std::vector<SubGraphRuntime*>> touching;  // shared buffer -> sub-graphs
  for (auto& s : subgraphs) {
    for (const co_up_io_memory& m : io_memory[s->subgraph->index]) {
      auto& list = touching[m.host_ptr];
      if (std::find(list.begin(), list.end(), s.get()) == list.end()) list.push_back(s.get());
    }
  }
  for (const auto& [buffer, list] : touching) {
    for (SubGraphRuntime* a : list) {
      for (const SubGraphRuntime* b : list) {
        if (b->processor != a->processor &&
            std::find(a->buffer_guards.begin(), a->buffer_guards.end(), b) == a->buffer_guards.end()) {
          a->buffer_guards.push_back(b);
        }
      }
    }
  }
}

void Executor::Impl::refresh_admitted() {
  // closed() first: a producer closes after its last admission, so admitted() is then final.
  closed = stream->closed();
  frames = std::max(frames, stream->admitted());
}

bool Executor::Impl::inputs_ready(const SubGraphRuntime& s) const {
  if (s.next_frame >= frames || !exits_decided(s)) return false;
  if (s.reads_graph_input && options.mode == Mode::kSwitch && completed < s.next_frame) {
    return false;  // switch mode: one frame in flight
  }
  if (options.mode == Mode::kOverlap) {
    // Frame g enters once g - 2 has left (two frames in flight at most), and runs on a processor
    // only after g - 1 has nothing left there: it fills that processor's idle tail of g - 1 and
    // never delays g - 1 on it.
    if (s.reads_graph_input && completed + 1 < s.next_frame) return false;
    if (s.processor->frame_floor < s.next_frame) return false;
    for (const SubGraphRuntime* g : s.buffer_guards) {
      if (g->next_frame < s.next_frame) return false;
    }
  }
  for (const InputPort& in : s.inputs) {
    if (in.receiver != nullptr && !in.receiver->has_frame()) return false;
  }
  return true;
}

bool Executor::Impl::runnable(SubGraphRuntime& s) {
  if (!inputs_ready(s)) return false;
  Receiver* full = nullptr;
  int full_count = 0;
  for (const OutputPort& out : s.outputs) {
    if (!out.sender) continue;
    for (Receiver* r : out.sender->receivers()) {
      if (!r->can_reserve()) {
        full = r;
        ++full_count;
      }
    }
  }
  if (full_count == 0) return true;
  // Attribute the stall to a receive buffer only when it alone holds the sender back, once per
  // frame: that is the stall a deeper buffer would have avoided.
  if (full_count == 1 && s.stall_counted_frame != s.next_frame) {
    full->count_full_stall();
    s.stall_counted_frame = s.next_frame;
  }
  return false;
}

void Executor::Impl::claim(SubGraphRuntime& s) {
  const uint64_t frame = s.next_frame;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const InputPort& in = s.inputs[i];
    if (in.receiver != nullptr) {
      s.claimed_inputs[i] = in.receiver->claim(frame);
    } else {
      s.claimed_inputs[i] = stream->input(frame, in.graph_input);
    }
  }
  for (size_t o = 0; o < s.outputs.size(); ++o) {
    if (s.outputs[o].sender) s.outputs[o].sender->reserve(s.reserved_slots[o]);
  }
  mark_unsent(s, frame);
  if (s.reads_graph_input) {
    // Grown as frames enter (never sized by the request: --n may be huge, a stream unbounded).
    if (frame_start.size() <= frame) frame_start.resize(frame + 1, 0);
    if (frame_start[frame] == 0) frame_start[frame] = now_ns();
  }
}

void Executor::Impl::execute(SubGraphRuntime& s, uint64_t frame) {
  Processor& p = *s.processor;
  const SubGraph& sg = *s.subgraph;
  const int level = options.profile_level;
  auto record_transfer = [&](int64_t begin, uint32_t layer, uint32_t peer, uint64_t bytes) {
    if (level < 1) return;
    Event e;
    e.kind = EventKind::kTransfer;
    e.subgraph = sg.index;
    e.layer = layer;
    e.peer = peer;
    e.frame = frame;
    e.begin_ns = begin;
    e.end_ns = now_ns();
    e.bytes = bytes;
    p.events.push_back(e);
  };

  // Receive: bind each input buffer in place, or map and copy where the backend cannot. Both are
  // timed as transfer: a backend may convert (layout, dtype) while binding.
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    InputPort& in = s.inputs[i];
    const auto index = static_cast<uint32_t>(i);
    if (in.in_place) continue;  // already where the compiled sub-graph reads it
    const int64_t begin = now_ns();
    if (in.bind_supported && s.compiled->bind_input(index, s.claimed_inputs[i])) {
      record_transfer(begin, sg.first_layer, sg.index, in.bytes);
      continue;
    }
    in.bind_supported = false;
    void* dst = s.compiled->map(CO_UP_IO_INPUT, index);
    std::memcpy(dst, s.claimed_inputs[i], in.bytes);
    s.compiled->unmap(CO_UP_IO_INPUT, index);
    record_transfer(begin, sg.first_layer, sg.index, in.bytes);
  }

  const auto& observers = options.observers;
  HookState hook_state{level >= 2 ? &p.events : nullptr, &observers, p.letter, sg.index, frame, 0, 0};
  co_up_run_hooks hooks{};
  hooks.struct_size = sizeof(hooks);
  hooks.user_data = &hook_state;
  hooks.layer_begin = on_layer_begin;
  hooks.layer_end = on_layer_end;
  hooks.layer_device_time = on_layer_device_time;
  const bool want_hooks = level >= 2 || !observers.empty();
  for (LayerObserver* o : observers) o->on_subgraph_begin(p.letter, sg.index, frame);
  const int64_t cpu_begin = level >= 1 ? profiler::thread_cpu_ns() : 0;
  const int64_t run_begin = now_ns();
  s.compiled->run(want_hooks ? &hooks : nullptr);
  for (LayerObserver* o : observers) o->on_subgraph_end(p.letter, sg.index, frame);
  if (level >= 1) {
    Event e;
    e.thread_cpu_ns = profiler::thread_cpu_ns() - cpu_begin;
    e.kind = EventKind::kSubGraph;
    e.subgraph = sg.index;
    e.layer = sg.first_layer;
    e.frame = frame;
    e.begin_ns = run_begin;
    e.end_ns = now_ns();
    p.events.push_back(e);
  }

  decide_exit(s);
  // Send (Algorithm 1): map once, copy into every receiver's reserved slot, unmap. A frame that
  // stops here sends nothing: every receiver is a later sub-graph, which never sees it.
  for (size_t o = 0; o < s.outputs.size(); ++o) {
    OutputPort& out = s.outputs[o];
    if (out.in_place) continue;  // written where its readers read it; never a graph output
    const auto index = static_cast<uint32_t>(o);
    const int64_t map_begin = now_ns();
    const void* src = s.compiled->map(CO_UP_IO_OUTPUT, index);
    if (out.sender && s.stop_exit == kNoExit) {
      const auto& targets = out.sender->receivers();
      for (size_t k = 0; k < targets.size(); ++k) {
        if (!s.unsent.empty() && s.unsent[o][k] != 0) continue;
        const int64_t begin = k == 0 ? map_begin : now_ns();
        std::memcpy(s.reserved_slots[o][k], src, out.bytes);
        record_transfer(begin, out.layer, targets[k]->destination(), out.bytes);
      }
    }
    if (out.graph_output) {
      const auto* values = static_cast<const float*>(src);
      const size_t count = out.bytes / sizeof(float);
      deliver_output(s, frame, *out.graph_output, std::span<const float>(values, count));
    }
    s.compiled->unmap(CO_UP_IO_OUTPUT, index);
  }
  deliver_later_exits(s, frame);
}

// Returns whether the other processor threads must be woken for this commit (a frame that stops
// here usually concerns none of them: the later sub-graphs never see it).
bool Executor::Impl::commit(SubGraphRuntime& s) {
  const uint64_t frame = s.next_frame;
  const bool stopped = s.stop_exit != kNoExit;
  if (stopped) {
    if (frame_exit.size() <= frame) frame_exit.resize(frame + 1, kNoExit);
    frame_exit[frame] = s.stop_exit;
    s.stop_exit = kNoExit;
  }
  for (InputPort& in : s.inputs) {
    if (in.receiver != nullptr) in.receiver->release();
  }
  hand_off(s, frame);
  ++s.next_frame;
  if (s.writes_graph_output) {
    const int64_t now = now_ns();
    const uint64_t before = completed;
    for (; completed < frames && frame_done(completed); ++completed) frame_end.push_back(now);
    if (completed != before) stream->frames_completed(completed);
  }
  const bool wake = !stopped || stop_wakes_others(s) || (closed && completed >= frames);
  if (wake) generation.fetch_add(1, std::memory_order_release);
  return wake;
}

// Multi-exit networks. A frame's exit is decided by the first sub-graph whose exit stops it (the
// final exit always does); every later sub-graph waits for that decision (exit_gates). A frame
// that stops completes right there: the stopping sub-graph delivers its outputs and hands it to
// no one (its reservations are cancelled), and the later sub-graphs never see it: their frame
// counters pass over it (pass_stopped_frames) without claiming, running or publishing anything,
// so receivers carry the frames that continue, in order, with gaps. Features an earlier stage
// sent towards a later one before the frame stopped are dropped unread.

void Executor::Impl::connect_exits() {
  if (!graph.has_exits()) return;
  const auto& outputs = graph.outputs();
  for (graph::TensorId t : outputs) {
    exit_subgraph.push_back(partition.subgraph_of_layer(graph.node(graph.tensor(t).producer).layer));
  }
  const auto exit_elements = static_cast<size_t>(graph.tensor(outputs[0]).desc.element_count());
  for (auto& s : subgraphs) {
    for (size_t o = 0; o < s->outputs.size(); ++o) {
      if (s->outputs[o].graph_output) s->exit_ports.emplace_back(o, *s->outputs[o].graph_output);
    }
    std::sort(s->exit_ports.begin(), s->exit_ports.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    if (!s->exit_ports.empty()) s->exit_values.resize(exit_elements);
  }
  for (auto& s : subgraphs) {
    for (const auto& other : subgraphs) {
      if (other->subgraph->index < s->subgraph->index && !other->exit_ports.empty()) {
        s->exit_gates.push_back(other.get());
      }
    }
  }
  for (auto& s : subgraphs) {
    s->stop_wakes_others = std::any_of(s->inputs.begin(), s->inputs.end(),
                                       [](const InputPort& in) { return in.receiver != nullptr; });
    for (const auto& other : subgraphs) {
      if (other->processor != s->processor && other->reads_graph_input && other->exit_gates.empty()) {
        s->stop_wakes_others = true;
      }
    }
  }
}

bool Executor::Impl::exits_decided(const SubGraphRuntime& s) const {
  for (const SubGraphRuntime* gate : s.exit_gates) {
    if (gate->next_frame <= s.next_frame) return false;
  }
  return true;
}

bool Executor::Impl::skips(const SubGraphRuntime& s, uint64_t frame) const {
  if (frame >= frame_exit.size() || frame_exit[frame] == kNoExit) return false;
  return exit_subgraph[frame_exit[frame]] < s.subgraph->index;
}

// Under the lock, on s's own processor thread while s is not running (so none of its receivers
// holds a claimed slot). Returns whether it freed a receive slot (a sender may be waiting on it).
bool Executor::Impl::pass_stopped_frames(SubGraphRuntime& s) {
  bool freed = false;
  while (s.next_frame < frames && skips(s, s.next_frame)) {
    for (const InputPort& in : s.inputs) {
      if (in.receiver != nullptr && in.receiver->has_frame() &&
          in.receiver->front_frame() == s.next_frame) {
        in.receiver->discard(s.next_frame);
        freed = true;
      }
    }
    ++s.frames_skipped;
    ++s.next_frame;
  }
  if (freed) generation.fetch_add(1, std::memory_order_release);
  return freed;
}

void Executor::Impl::mark_unsent(SubGraphRuntime& s, uint64_t frame) {
  if (exit_subgraph.empty()) return;
  s.unsent.resize(s.outputs.size());
  for (size_t o = 0; o < s.outputs.size(); ++o) {
    if (!s.outputs[o].sender) continue;
    const auto& targets = s.outputs[o].sender->receivers();
    s.unsent[o].resize(targets.size());
    for (size_t k = 0; k < targets.size(); ++k) {
      s.unsent[o][k] = skips(*subgraphs[targets[k]->destination()], frame) ? 1 : 0;
    }
  }
}

// Publishes the frame to every receiver whose sub-graph will run it; cancels the reservation of
// the others (all of them when the frame stopped here: every receiver is a later sub-graph).
void Executor::Impl::hand_off(SubGraphRuntime& s, uint64_t frame) {
  const bool stopped_here = frame < frame_exit.size() && frame_exit[frame] != kNoExit &&
                            exit_subgraph[frame_exit[frame]] == s.subgraph->index;
  for (OutputPort& out : s.outputs) {
    if (!out.sender) continue;
    for (Receiver* r : out.sender->receivers()) {
      if (stopped_here || skips(*subgraphs[r->destination()], frame)) {
        r->cancel();
      } else {
        r->publish(frame);
      }
    }
  }
}

// Every sub-graph that delivers graph outputs has committed the frame or never sees it.
bool Executor::Impl::frame_done(uint64_t frame) const {
  for (const auto& w : subgraphs) {
    if (w->writes_graph_output && w->next_frame <= frame && !skips(*w, frame)) return false;
  }
  return true;
}

// Whether a frame stopping at s can let another processor thread go on: s frees receive slots
// of earlier senders, or (switch mode) its completion admits the next frame to a sub-graph on
// another processor that waits for no exit. A sub-graph behind an exit gate waits for the next
// frame's decision, which wakes it; the end of the run wakes everyone (commit).
bool Executor::Impl::stop_wakes_others(const SubGraphRuntime& s) const {
  return s.stop_wakes_others;
}

void Executor::Impl::decide_exit(SubGraphRuntime& s) {
  s.stop_exit = kNoExit;
  const auto final_exit = static_cast<uint32_t>(exit_subgraph.size()) - 1;
  for (const auto& [port, exit] : s.exit_ports) {
    if (exit == final_exit) {
      s.stop_exit = exit;
      return;
    }
    if (options.exit_policy.never_stops()) continue;
    const auto index = static_cast<uint32_t>(port);
    const auto* values = static_cast<const float*>(s.compiled->map(CO_UP_IO_OUTPUT, index));
    const std::span<const float> scores(values, s.outputs[port].bytes / sizeof(float));
    const bool stop = options.exit_policy.stops(exit, scores);
    if (stop) std::copy(scores.begin(), scores.end(), s.exit_values.begin());
    s.compiled->unmap(CO_UP_IO_OUTPUT, index);
    if (stop) {
      s.stop_exit = exit;
      return;
    }
  }
}

void Executor::Impl::deliver_output(SubGraphRuntime& s, uint64_t frame, uint32_t output,
                                    std::span<const float> values) {
  // An exit after the one the frame stopped at returns the stopping exit's output.
  if (s.stop_exit != kNoExit && output > s.stop_exit) values = s.exit_values;
  {
    std::lock_guard lock(last_outputs_mutex);
    if (frame >= last_output_frame[output]) {
      std::copy(values.begin(), values.end(), last_outputs[output].begin());
      last_output_frame[output] = frame;
    }
  }
  stream->output(frame, output, values);
}

void Executor::Impl::deliver_later_exits(SubGraphRuntime& s, uint64_t frame) {
  if (s.stop_exit == kNoExit) return;
  for (uint32_t k = s.stop_exit + 1; k < exit_subgraph.size(); ++k) {
    if (exit_subgraph[k] > s.subgraph->index) deliver_output(s, frame, k, s.exit_values);
  }
}

void Executor::Impl::add_exit_profile(profiler::RunProfile& profile) const {
  if (exit_subgraph.empty()) return;
  profile.exit_policy = options.exit_policy.describe();
  for (size_t k = 0; k < exit_subgraph.size(); ++k) {
    profile.exits.push_back({graph.tensor(graph.outputs()[k]).name, exit_subgraph[k]});
  }
  for (uint64_t f = 0; f < completed; ++f) {
    profile.frame_exit.push_back(f < frame_exit.size() ? frame_exit[f] : kNoExit);
  }
  for (const auto& s : subgraphs) profile.subgraph_frames_skipped.push_back(s->frames_skipped);
}

namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Takes the scheduling lock, trying for up to `spin_us` before blocking on it. The other
// processor thread holds it for one scheduling pass (microseconds), typically just when this
// one sees the generation change it made; blocking then put this thread to sleep on the
// mutex's futex, and waking it cost 15-20 us on the development host (the idle vCPU halts),
// paid at most cross-processor hand-offs: GoogLeNet's switch frames made ~80 futex calls each.
void lock_spinning(std::unique_lock<std::mutex>& lock, uint32_t spin_us) {
  if (spin_us > 0) {
    const int64_t deadline = now_ns() + int64_t{spin_us} * 1000;
    do {
      if (lock.try_lock()) return;
      for (int i = 0; i < 4; ++i) cpu_relax();  // fewer atomic attempts on the holder's cache line
    } while (now_ns() < deadline);
  }
  lock.lock();
}

}  // namespace

// Spins until the generation moves past `seen` (returns true) or the spin is over (false): after
// spin_wait_us, or while a lane owes work to an admitted frame (`owed`, per lane) and what it
// waits on runs on cores of its own (waits_on_own_cores), after spin_wait_in_frame_us in all.
bool Executor::Impl::spin_while_unchanged(const std::vector<Lane>& lanes, const std::vector<char>& owed,
                                          uint64_t seen) {
  // A balanced pipeline waits only briefly for its neighbour; blocking at once would let the
  // (virtual) CPU go idle, and it comes back with cold caches or on another physical core.
  const Impl& first = *lanes.front().impl;
  const int64_t start = now_ns();
  const int64_t deadline = start + int64_t{first.options.spin_wait_us} * 1000;
  const bool owes = std::find(owed.begin(), owed.end(), 1) != owed.end();
  const int64_t in_frame_deadline = start + (owes ? int64_t{first.options.spin_wait_in_frame_us} * 1000 : 0);
  while (first.generation.load(std::memory_order_acquire) == seen) {
    const int64_t now = now_ns();
    if (now >= deadline && (now >= in_frame_deadline || !waits_on_own_cores(lanes, owed))) return false;
    cpu_relax();
  }
  return true;
}

// Whether an idle thread owing work to an admitted frame waits on a processor thread that owns
// its cores: one of the owing executors' other processors is busy (not `waiting`), and each busy
// one's thread owns its cores. Nothing busy: the wait has no end in sight (an accelerator's
// thread being woken, say). A busy thread that shares cores: spinning would slow it (on the
// development host the OpenCL device computes on the same CPU cores). Without the lock: a hint.
bool Executor::Impl::waits_on_own_cores(const std::vector<Lane>& lanes, const std::vector<char>& owed) {
  bool busy_own = false;
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (owed[i] == 0) continue;
    for (const auto& p : lanes[i].impl->processors) {
      if (p.get() == lanes[i].processor || p->waiting.load(std::memory_order_relaxed)) continue;
      if (!p->thread_owns_cores) return false;
      busy_own = true;
    }
  }
  return busy_own;
}

void Executor::Impl::fail(std::exception_ptr e) {
  std::lock_guard lock(mutex);
  if (!error) error = e;
  stop = true;
  generation.fetch_add(1, std::memory_order_release);
  changed.notify_all();
}

void Executor::Impl::processor_loop(Processor& p) {
  serve({Lane{this, &p, 0}}, {this}, p.owns_its_cores, nullptr);
}

void Executor::Impl::serve(const std::vector<Lane>& lanes, const std::vector<Impl*>& group,
                           bool owns_cores, const Prefer& prefer, const Keep& keep, const Spread* spread) {
  Impl& first = *lanes.front().impl;  // every lane's impl shares its lock and wake-up
  try {
    pin_current_thread(lanes.front().processor->host_cores);
  } catch (...) {
    first.fail(std::current_exception());
    return;
  }
  const auto stopped = [&] {
    return std::any_of(group.begin(), group.end(), [](const Impl* m) { return m->stop; });
  };
  // Spinning for the lock too only where no other processor thread needs the core.
  const uint32_t lock_spin_us = owns_cores ? first.options.spin_wait_us : 0;
  std::unique_lock lock(first.mutex, std::defer_lock);
  lock_spinning(lock, lock_spin_us);
  const Lane* last_lane = nullptr;  // whose sub-graph this thread ran last
  std::vector<SubGraphRuntime*> bests(lanes.size());  // each lane's ready sub-graph this round
  std::vector<char> owed(lanes.size());  // each lane's processor owes work to an admitted frame
  const auto set_waiting = [&](bool waiting) {
    for (const Lane& lane : lanes) lane.processor->waiting.store(waiting, std::memory_order_relaxed);
  };
  const auto elsewhere = [&](size_t member) {  // another thread ran member's network last
    const size_t net = (*spread->network_of)[member];
    for (size_t t = 0; t < spread->last->size(); ++t) {
      if (t != spread->slot && (*spread->last)[t] == net) return true;
    }
    return false;
  };
  while (!stopped()) {
    const Lane* pick_lane = nullptr;
    SubGraphRuntime* pick = nullptr;
    SubGraphRuntime* last_best = nullptr;
    bool finished = true;
    for (const Lane& lane : lanes) {
      Impl& m = *lane.impl;
      m.refresh_admitted();
      SubGraphRuntime* best = nullptr;
      finished = finished && m.closed;
      if (!m.exit_subgraph.empty()) {
        for (SubGraphRuntime* s : lane.processor->subgraphs) {
          if (m.pass_stopped_frames(*s)) m.changed.notify_all();
        }
      }
      if (m.options.mode == Mode::kOverlap) {  // after passing stopped frames: what is left to run
        uint64_t floor = UINT64_MAX;
        for (const SubGraphRuntime* s : lane.processor->subgraphs) floor = std::min(floor, s->next_frame);
        lane.processor->frame_floor = floor;
      }
      owed[static_cast<size_t>(&lane - lanes.data())] = 0;
      for (SubGraphRuntime* s : lane.processor->subgraphs) {
        if (s->next_frame < m.frames) {
          finished = false;
          owed[static_cast<size_t>(&lane - lanes.data())] = 1;
        }
        // Oldest frame first; among equals, the earlier sub-graph (it feeds the later ones).
        if (m.runnable(*s) && (best == nullptr || s->next_frame < best->next_frame)) best = s;
      }
      if (&lane == last_lane) last_best = best;
      bests[static_cast<size_t>(&lane - lanes.data())] = best;
      if (best != nullptr &&
          (pick == nullptr ||
           (prefer && prefer(lane.member, best->next_frame, pick_lane->member, pick->next_frame)))) {
        pick_lane = &lane;
        pick = best;
      }
    }
    if (finished) break;
    if (last_best != nullptr && pick_lane != last_lane && keep && keep(last_lane->member, pick_lane->member)) {
      pick_lane = last_lane;
      pick = last_best;
    } else if (spread != nullptr && keep && pick != nullptr && pick_lane != last_lane && elsewhere(pick_lane->member)) {
      // Changing network to one another thread is on: the policy's first among the others that
      // affinity may reorder with it, if one is ready.
      const Lane* other_lane = nullptr;
      SubGraphRuntime* other = nullptr;
      for (size_t i = 0; i < lanes.size(); ++i) {
        if (bests[i] == nullptr || &lanes[i] == pick_lane || !keep(pick_lane->member, lanes[i].member) ||
            elsewhere(lanes[i].member)) {
          continue;
        }
        if (other == nullptr || prefer(lanes[i].member, bests[i]->next_frame, other_lane->member, other->next_frame)) {
          other_lane = &lanes[i];
          other = bests[i];
        }
      }
      if (other != nullptr) {
        pick_lane = other_lane;
        pick = other;
      }
    }
    if (pick == nullptr) {
      const uint64_t seen = first.generation.load(std::memory_order_relaxed);
      set_waiting(true);
      // Spinning only where no other processor thread needs the core (a GPU's host thread shares
      // its cluster's cores, for instance).
      if (owns_cores) {
        lock.unlock();
        if (spin_while_unchanged(lanes, owed, seen)) set_waiting(false);  // busy again at once
        lock_spinning(lock, lock_spin_us);
      }
      const auto woken = [&] {
        return stopped() || first.generation.load(std::memory_order_relaxed) != seen;
      };
      if (!woken()) {
        for (size_t i = 0; i < lanes.size(); ++i) lanes[i].processor->in_frame_sleeps += owed[i];
        first.changed.wait(lock, woken);
      }
      set_waiting(false);
      continue;
    }
    Impl& m = *pick_lane->impl;
    last_lane = pick_lane;
    if (spread != nullptr) (*spread->last)[spread->slot] = (*spread->network_of)[pick_lane->member];
    m.claim(*pick);
    const uint64_t frame = pick->next_frame;
    lock.unlock();
    try {
      m.execute(*pick, frame);
    } catch (...) {
      m.fail(std::current_exception());
      return;
    }
    lock_spinning(lock, lock_spin_us);
    const uint64_t completed_before = m.completed;
    const bool wake = m.commit(*pick);
    FrameStream* const completed_stream = m.completed != completed_before ? m.stream : nullptr;
    // Wake the others after releasing the lock, so they do not wake only to wait for it.
    lock.unlock();
    if (wake) first.changed.notify_all();
    if (completed_stream != nullptr) completed_stream->after_frames_completed();
    lock_spinning(lock, lock_spin_us);
  }
  set_waiting(true);  // nothing more from this thread: no one waits on it
}

profiler::RunProfile Executor::Impl::make_profile(bool interrupted) const {
  profiler::RunProfile profile;
  profile.graph = graph.name();
  profile.order = partition.order();
  profile.mode = mode_name(options.mode);
  profile.platform = platform.name;
  profile.level = options.profile_level;
  profile.frames_requested = frames;
  profile.frames_completed = completed;
  profile.interrupted = interrupted;
  profile.setup_ns = setup_ns;
  profile.frame_start_ns.assign(frame_start.begin(), frame_start.begin() + completed);
  profile.frame_end_ns.assign(frame_end.begin(), frame_end.begin() + completed);
  for (const auto& p : processors) {
    profile.processors.push_back({p->letter, p->spec->name, p->backend, format_cores(p->host_cores),
                                  p->spec->is_cpu() ? p->spec->threads : 1, p->in_frame_sleeps});
    profile.events.insert(profile.events.end(), p->events.begin(), p->events.end());
  }
  std::sort(profile.events.begin(), profile.events.end(),
            [](const Event& a, const Event& b) { return a.begin_ns < b.begin_ns; });
  for (const graph::LayerSummary& l : graph::summarize_layers(graph)) {
    const uint32_t sg = partition.subgraph_of_layer(l.index);
    profile.layers.push_back({l.index, l.name, l.ops, l.output_shape, l.macs,
                              partition.subgraphs()[sg].processor, sg});
  }
  for (const auto& s : subgraphs) {
    profile.subgraphs.push_back({s->subgraph->index, s->subgraph->processor, s->processor->backend,
                                 s->subgraph->first_layer, s->subgraph->last_layer});
  }
  for (size_t i = 0; i < receivers.size(); ++i) {
    const Receiver& r = *receivers[i];
    profile.receivers.push_back({r.tensor_name(), r.source(), r.destination(), r.bytes(),
                                 r.capacity(), r.max_occupancy(), r.transfers(), r.full_stalls(),
                                 receiver_layouts[i], receiver_in_place[i]});
  }
  add_exit_profile(profile);
  return profile;
}

Executor::Executor(Placement placement, ExecutorOptions options)
    : Executor(std::move(placement), std::move(options), nullptr) {}

Executor::Executor(Placement placement, ExecutorOptions options, std::shared_ptr<ExecutorShare> share)
    : impl_(std::make_unique<Impl>(std::move(placement), std::move(options), std::move(share))) {
  impl_->set_up();
}

Executor::Executor(const graph::Graph& graph, Partition partition, const Platform& platform,
                   const PluginRegistry& plugins, ExecutorOptions options)
    : Executor(Placement::create(graph, std::move(partition), platform, plugins), std::move(options)) {}

Executor::~Executor() = default;

const Partition& Executor::partition() const { return impl_->partition; }
int64_t Executor::setup_ns() const { return impl_->setup_ns; }

void Executor::notify_stream() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->generation.fetch_add(1, std::memory_order_release);
  }
  impl_->changed.notify_all();
}

void Executor::request_stop() {
  std::lock_guard lock(impl_->mutex);
  impl_->stop = true;
  impl_->generation.fetch_add(1, std::memory_order_release);
  impl_->changed.notify_all();
}

RunResult Executor::run(const RunRequest& request) {
  Impl& m = *impl_;
  const auto& graph_inputs = m.graph.inputs();
  if (request.input_sets.empty()) throw InputError("no input given for the run");
  for (const auto& set : request.input_sets) {
    if (set.size() != graph_inputs.size()) {
      throw InputError("graph '" + m.graph.name() + "' has " +
                       std::to_string(graph_inputs.size()) + " inputs but " +
                       std::to_string(set.size()) + " were given");
    }
    for (size_t i = 0; i < set.size(); ++i) {
      const graph::Tensor& t = m.graph.tensor(graph_inputs[i]);
      if (static_cast<int64_t>(set[i].size()) != t.desc.element_count()) {
        throw InputError("input '" + t.name + "' needs shape " + t.desc.shape_string() + " (" +
                         std::to_string(t.desc.element_count()) + " values) but got " +
                         std::to_string(set[i].size()) + " values");
      }
    }
  }
  // A fixed request is a stream admitted and closed from the start.
  class RequestStream final : public FrameStream {
   public:
    explicit RequestStream(const RunRequest& r) : r_(r) {}
    uint64_t admitted() const override { return r_.frames; }
    bool closed() const override { return true; }
    const float* input(uint64_t frame, uint32_t input) override {
      return r_.input_sets[frame % r_.input_sets.size()][input].data();
    }
    void output(uint64_t frame, uint32_t output, std::span<const float> values) override {
      if (r_.on_output) r_.on_output(frame, output, values);
    }
    void frames_completed(uint64_t) override {}

   private:
    const RunRequest& r_;
  } stream(request);
  return run_stream(stream);
}

RunResult Executor::run_stream(FrameStream& stream) {
  Impl& m = *impl_;
  m.begin_run(stream);
  std::vector<std::thread> threads;
  for (auto& p : m.processors) threads.emplace_back([&m, &p] { m.processor_loop(*p); });
  for (std::thread& t : threads) t.join();
  return m.end_run(stream);
}

void Executor::Impl::begin_run(FrameStream& run_stream) {
  std::lock_guard lock(mutex);
  // A previous, interrupted run may have left frames in flight: start from a clean state.
  for (auto& r : receivers) r->reset();
  for (auto& s : subgraphs) {
    s->next_frame = 0;
    s->stall_counted_frame = UINT64_MAX;
    s->stop_exit = kNoExit;
    s->frames_skipped = 0;
  }
  frame_exit.clear();
  for (auto& p : processors) {
    p->thread_owns_cores = p->owns_its_cores;  // run_group decides for its threads
    p->waiting.store(false, std::memory_order_relaxed);
    p->in_frame_sleeps = 0;
    p->events.clear();
    const size_t per_frame = options.profile_level >= 2 ? p->subgraphs.size() * 8 + 16 : 8;
    p->events.reserve(static_cast<size_t>(std::min<uint64_t>(run_stream.admitted(), 4096)) * per_frame);
  }
  // `stop` is not reset here: a stop requested before run() makes it return at once.
  error = nullptr;
  frames = 0;
  closed = false;
  completed = 0;
  stream = &run_stream;
  frame_start.clear();
  frame_end.clear();
  last_outputs.clear();
  for (graph::TensorId t : graph.outputs()) {
    last_outputs.emplace_back(static_cast<size_t>(graph.tensor(t).desc.element_count()));
  }
  last_output_frame.assign(last_outputs.size(), 0);
}

RunResult Executor::Impl::end_run(FrameStream& run_stream) {
  std::lock_guard lock(mutex);
  stream = nullptr;
  // What the stream admitted in all, also when a stop before run() let no thread look (a signal
  // during setup): the profile then says 0 of N, interrupted.
  frames = std::max(frames, run_stream.admitted());
  const bool interrupted = completed < frames;
  stop = false;  // the request is used up; the next run() starts afresh
  if (error) std::rethrow_exception(error);
  RunResult result;
  result.profile = make_profile(interrupted);
  result.last_outputs = last_outputs;
  return result;
}

std::vector<RunResult> Executor::run_group(const std::vector<GroupMember>& members,
                                           GroupPolicy policy, bool affinity) {
  if (members.empty()) return {};
  for (size_t i = 0; i < members.size(); ++i) {
    const GroupMember& g = members[i];
    if (g.executor == nullptr || g.stream == nullptr ||
        g.executor->impl_->share != members.front().executor->impl_->share) {
      throw InputError("run_group: member " + std::to_string(i) +
                       " needs an executor made with the group's ExecutorShare and a stream");
    }
    for (size_t k = 0; k < i; ++k) {
      if (members[k].executor == g.executor) {
        throw InputError("run_group: members " + std::to_string(k) + " and " + std::to_string(i) +
                         " share one executor; give each its own");
      }
    }
  }
  // A frame of an as-fast-as-possible member arrives when its first sub-graph takes it; one not
  // yet taken could arrive now, so it is younger than any frame waiting (INT64_MAX), and such
  // frames go in frame-number order across members (round robin).
  const auto arrival = [&members](size_t member, uint64_t frame) -> int64_t {
    const GroupMember& g = members[member];
    if (g.arrival_ns) return g.arrival_ns(frame);
    const auto& start = g.executor->impl_->frame_start;
    return frame < start.size() && start[frame] != 0 ? start[frame] : INT64_MAX;
  };
  const Impl::Prefer prefer = [&](size_t a, uint64_t fa, size_t b, uint64_t fb) {
    if (policy == GroupPolicy::kPlan && members[a].plan_rank && members[b].plan_rank) {
      return members[a].plan_rank(fa) < members[b].plan_rank(fb);
    }
    if (policy == GroupPolicy::kPriority && members[a].priority != members[b].priority) {
      return members[a].priority > members[b].priority;
    }
    const int64_t ta = arrival(a, fa), tb = arrival(b, fb);
    if (ta != tb) return ta < tb;
    return fa != fb ? fa < fb : a < b;
  };
  // Affinity: only between members that no other processor waits on (the whole network on one
  // processor) and whose requests have no arrival time to honour (as fast as possible).
  std::vector<bool> movable(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    movable[i] = !members[i].arrival_ns && members[i].executor->impl_->processors.size() == 1;
  }
  const Impl::Keep keep = [&](size_t last, size_t pick) {
    return movable[last] && movable[pick] &&
           (policy != GroupPolicy::kPriority || members[last].priority == members[pick].priority);
  };

  for (const GroupMember& g : members) g.executor->impl_->begin_run(*g.stream);
  // One thread per processor letter, serving every member that uses it.
  std::map<char, std::vector<Impl::Lane>> lanes;
  for (size_t i = 0; i < members.size(); ++i) {
    for (auto& p : members[i].executor->impl_->processors) {
      lanes[p->letter].push_back(Impl::Lane{members[i].executor->impl_.get(), p.get(), i});
    }
  }
  std::vector<Impl*> group;
  for (const GroupMember& g : members) group.push_back(g.executor->impl_.get());
  std::vector<size_t> network_of(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    network_of[i] = members[i].network >= 0 ? static_cast<size_t>(members[i].network) : members.size() + i;
  }
  std::vector<size_t> last_network(lanes.size(), SIZE_MAX);
  std::vector<Impl::Spread> spreads;
  for (size_t t = 0; t < lanes.size(); ++t) spreads.push_back({&network_of, &last_network, t});
  for (auto& [letter, served] : lanes) {
    bool owns_cores = true;  // no other letter's thread shares one of its host cores
    for (const auto& [other, other_lanes] : lanes) {
      if (other == letter) continue;
      for (int core : served.front().processor->host_cores) {
        const auto& theirs = other_lanes.front().processor->host_cores;
        if (std::find(theirs.begin(), theirs.end(), core) != theirs.end()) owns_cores = false;
      }
    }
    for (const Impl::Lane& lane : served) lane.processor->thread_owns_cores = owns_cores;
  }
  std::vector<std::thread> threads;
  for (auto& [letter, served] : lanes) {
    const Impl::Spread* spread = &spreads[threads.size()];
    const bool owns_cores = served.front().processor->thread_owns_cores;
    threads.emplace_back([&served, &group, owns_cores, &prefer, &keep, affinity, spread] {
      Impl::serve(served, group, owns_cores, prefer, affinity ? keep : nullptr, affinity ? spread : nullptr);
    });
  }
  for (std::thread& t : threads) t.join();

  std::vector<RunResult> results;
  std::exception_ptr first_error;
  for (const GroupMember& g : members) {
    try {
      results.push_back(g.executor->impl_->end_run(*g.stream));
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace co_up
