// The optional co_up_run_hooks of compiled_run, checked once per run: a NULL table, a callback
// the host's (older) struct does not reach, or a NULL callback is skipped.
#pragma once

#include <cstddef>
#include <cstdint>

#include "co_up/plugin_abi.h"

namespace co_up::backends {

class LayerHooks {
 public:
  explicit LayerHooks(const co_up_run_hooks* hooks) {
    if (!hooks) return;
    // user_data precedes both callbacks: readable whenever either is.
    if (hooks->struct_size >= offsetof(co_up_run_hooks, layer_begin) + sizeof(hooks->layer_begin)) {
      user_data_ = hooks->user_data;
      begin_ = hooks->layer_begin;
    }
    if (hooks->struct_size >= offsetof(co_up_run_hooks, layer_end) + sizeof(hooks->layer_end)) {
      end_ = hooks->layer_end;
    }
    if (hooks->struct_size >=
        offsetof(co_up_run_hooks, layer_device_time) + sizeof(hooks->layer_device_time)) {
      device_time_ = hooks->layer_device_time;  // ABI 1.1 hosts
    }
  }

  // Lets a backend skip work only the end hook needs (waiting for a device to finish).
  bool has_end() const { return end_ != nullptr; }
  void begin(uint32_t layer) const {
    if (begin_) begin_(user_data_, layer);
  }
  void end(uint32_t layer) const {
    if (end_) end_(user_data_, layer);
  }
  // Whether the host records device times (a backend may then time its device work).
  bool has_device_time() const { return device_time_ != nullptr && end_ != nullptr; }
  void device_time(uint32_t layer, uint64_t device_ns) const {
    if (device_time_) device_time_(user_data_, layer, device_ns);
  }

 private:
  void* user_data_ = nullptr;
  void (*begin_)(void*, uint32_t) = nullptr;
  void (*end_)(void*, uint32_t) = nullptr;
  void (*device_time_)(void*, uint32_t, uint64_t) = nullptr;
};

// Steps run in order, each tagged with its node's layer; a layer's hooks wrap its run of steps.
template <typename Steps>
bool starts_layer(const Steps& steps, size_t s) {
  return s == 0 || steps[s - 1].layer != steps[s].layer;
}
template <typename Steps>
bool ends_layer(const Steps& steps, size_t s) {
  return s + 1 == steps.size() || steps[s + 1].layer != steps[s].layer;
}

}  // namespace co_up::backends
