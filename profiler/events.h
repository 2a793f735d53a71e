// Profiler events. One clock for everything: CLOCK_MONOTONIC nanoseconds, so layer, transfer,
// DVFS and sensor timelines line up.
#pragma once

#include <time.h>

#include <cstdint>

namespace co_up::profiler {

inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// CPU time of the calling thread: with now_ns around the same stretch, how much of it the thread
// actually ran (the rest it waited, e.g. for a core another process held).
inline int64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

enum class EventKind : uint8_t {
  kSubGraph,  // one run of a sub-graph's nodes (level >= 1)
  kLayer,     // one layer unit inside a sub-graph run (level 2)
  // Crossing a sub-graph boundary (level >= 1): on the sending side the copy into a receiver
  // (peer = receiving sub-graph), incl. map/unmap; on the receiving side binding or copying the
  // input in (peer = subgraph), where backends convert layouts.
  kTransfer,
};

struct Event {
  EventKind kind = EventKind::kSubGraph;
  uint32_t subgraph = 0;  // the sub-graph on whose thread it ran
  uint32_t layer = 0;     // kLayer: the unit; kTransfer: the layer whose output crossed
  // kLayer: the last unit the event covers. Equal to `layer` for per-node backends; an
  // accelerator runs its whole partition as one node, so its event spans first..last layer.
  uint32_t last_layer = 0;
  uint32_t peer = 0;      // kTransfer: the receiving sub-graph (UINT32_MAX: the user/output)
  uint64_t frame = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  uint64_t bytes = 0;  // kTransfer
  // kLayer: the device's own time for the layer as its backend measured it (OpenCL event
  // profiling; ABI 1.1 layer_device_time), -1 when the backend reports none (CPU backends).
  int64_t device_ns = -1;
  // kSubGraph: CPU time of the processor's host thread during the run (thread_cpu_ns), -1 when
  // not measured. All of the run's work for a backend that computes on the calling thread (a CPU
  // backend with one thread); only the caller's share where worker threads or a device do it.
  int64_t thread_cpu_ns = -1;
};

}  // namespace co_up::profiler
