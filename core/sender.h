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

  // The receivers without a free slot (empty: the sender may start a frame).
  std::vector<Receiver*> full_receivers() const {
    std::vector<Receiver*> full;
    for (Receiver* r : receivers_) {
      if (!r->can_reserve()) full.push_back(r);
    }
    return full;
  }
  // One slot per receiver, in receivers() order.
  std::vector<void*> reserve() {
    std::vector<void*> slots;
    for (Receiver* r : receivers_) slots.push_back(r->reserve());
    return slots;
  }
  void publish(uint64_t frame) {
    for (Receiver* r : receivers_) r->publish(frame);
  }

 private:
  uint32_t output_index_;
  std::vector<Receiver*> receivers_;
};

}  // namespace co_up
