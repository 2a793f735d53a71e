// Sender: the send side of a sub-graph boundary edge (ARM-CO-UP §4.1, Algorithm 1).
//
// One produced tensor goes to every receiving sub-graph: the executor maps the tensor once, the
// Sender copies it into a slot reserved in each Receiver, and the executor unmaps it. Slots are
// reserved before the producing sub-graph starts its frame, so copying never waits.
//
// Threading: reserve/publish run under the executor's scheduling lock; copy runs outside it, on
// the producing processor's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "core/receiver.h"

namespace co_up {

class Sender {
 public:
  Sender(uint32_t output_index, std::vector<Receiver*> receivers)
      : output_index_(output_index), receivers_(std::move(receivers)) {}

  uint32_t output_index() const { return output_index_; }  // position in the sub-graph's outputs
  const std::vector<Receiver*>& receivers() const { return receivers_; }

  // One slot per receiver, in receivers() order.
  // Reserves one slot per receiver, in receivers() order, into `slots` (reused: no allocation
  // per frame once it has the right size).
  void reserve(std::vector<void*>& slots) {
    slots.resize(receivers_.size());
    for (size_t i = 0; i < receivers_.size(); ++i) slots[i] = receivers_[i]->reserve();
  }
  void publish(uint64_t frame) {
    for (Receiver* r : receivers_) r->publish(frame);
  }

 private:
  uint32_t output_index_;
  std::vector<Receiver*> receivers_;
};

}  // namespace co_up
