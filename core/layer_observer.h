// LayerObserver: what the power manager and profiler plug into the run loop.
//
// The executor calls observers on the processor's host thread, right where the backend reports
// a layer boundary (the plugin ABI's layer hooks; an accelerator reports its whole partition as
// one span from first to last layer), and around each sub-graph run. Calls for one processor come
// from one thread, in order; calls for different processors come from different threads at the
// same time, so an observer that keeps shared state synchronises it itself. Observers must be
// cheap (they sit between layers) and must not throw: errors are the observer's to report later.
#pragma once

#include <cstdint>

namespace co_up {

class LayerObserver {
 public:
  virtual ~LayerObserver() = default;

  virtual void on_subgraph_begin(char processor, uint32_t subgraph, uint64_t frame) {}
  virtual void on_layer_begin(char processor, uint32_t layer, uint64_t frame) {}
  virtual void on_layer_end(char processor, uint32_t layer, uint64_t frame) {}
  virtual void on_subgraph_end(char processor, uint32_t subgraph, uint64_t frame) {}
};

}  // namespace co_up
