// RunProfile: everything one run measured, independent of the runtime's types, so reports,
// the JSON writer and (later) the planner read one structure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/events.h"

namespace co_up::profiler {

struct LayerInfo {
  uint32_t index = 0;
  std::string name;
  std::string ops;  // "Conv+Relu+LRN+MaxPool"
  std::string output_shape;
  int64_t macs = 0;
  char processor = 0;
  uint32_t subgraph = 0;
};

struct SubGraphInfo {
  uint32_t index = 0;
  char processor = 0;
  std::string backend;
  uint32_t first_layer = 0;
  uint32_t last_layer = 0;
};

struct ReceiverInfo {
  std::string tensor;
  uint32_t source = 0;
  uint32_t destination = 0;
  uint64_t bytes = 0;
  uint32_t capacity = 0;
  uint32_t max_occupancy = 0;
  uint64_t transfers = 0;
  uint64_t full_stalls = 0;
};

struct ProcessorInfo {
  char letter = 0;
  std::string name;
  std::string backend;
  std::string host_cores;  // "0" or "4,5"
  int threads = 0;
};

struct RunProfile {
  std::string graph;
  std::string order;
  std::string mode;
  std::string platform;
  int level = 0;
  uint64_t frames_requested = 0;
  uint64_t frames_completed = 0;
  bool interrupted = false;
  int64_t setup_ns = 0;
  // Per completed frame: when its first sub-graph started, when its last output was delivered.
  std::vector<int64_t> frame_start_ns;
  std::vector<int64_t> frame_end_ns;
  std::vector<ProcessorInfo> processors;
  std::vector<LayerInfo> layers;
  std::vector<SubGraphInfo> subgraphs;
  std::vector<ReceiverInfo> receivers;
  std::vector<Event> events;  // merged from all threads, sorted by begin time
};

}  // namespace co_up::profiler
