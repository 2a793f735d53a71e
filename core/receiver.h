// Receiver: the receive side of one sub-graph boundary edge (ARM-CO-UP §4.1, Fig. 7b).
//
// A bounded ring of preallocated, 64-byte-aligned frame buffers between one sender and one
// receiving sub-graph; nothing is allocated per frame. The producer reserves the next free slot
// *before* it starts a frame (so it never blocks half-way, which is what keeps BLB-style mappings
// deadlock-free), fills it, and publishes it with the frame number. The consumer claims the oldest
// published slot — checking that it carries the frame it expects — reads it (often in place: the
// slot is bound directly as the sub-graph's input), and releases it.
//
// Threading: the bookkeeping methods are not synchronised; the Executor calls them under its
// scheduling lock. Slot *contents* are written by the producer between reserve() and publish()
// and read by the consumer between claim() and release(), outside the lock; the lock's
// acquire/release ordering makes those accesses race-free.
// Shutdown: a Receiver never blocks; waiting happens in the Executor, which stops on request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace co_up {

class Receiver {
 public:
  // `capacity` >= 1 buffers of `bytes` each.
  Receiver(std::string tensor_name, size_t bytes, uint32_t capacity, uint32_t source,
           uint32_t destination);

  const std::string& tensor_name() const { return tensor_name_; }
  size_t bytes() const { return bytes_; }
  uint32_t capacity() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t source() const { return source_; }
  uint32_t destination() const { return destination_; }

  // Empties the ring and clears statistics; keeps the buffers (no page faults on the next run).
  void reset();

  // Producer side.
  bool can_reserve() const { return used_ < slots_.size(); }
  void* reserve();                  // precondition: can_reserve()
  void publish(uint64_t frame);     // the oldest reserved, unpublished slot now holds `frame`
  // Gives back the newest reserved, unpublished slot unpublished: its frame stopped at an exit
  // before this receiver's sub-graph, which will never see it (no hand-off, no transfer counted).
  void cancel();

  // Consumer side.
  bool has_frame() const { return published_ > 0; }
  // The oldest published slot. Throws std::logic_error if it holds another frame than `frame`:
  // a lost, duplicated or reordered frame is a bug the runtime must not hide.
  const void* claim(uint64_t frame);
  void release();  // frees the oldest claimed slot
  // The frame of the oldest published slot; precondition: has_frame().
  uint64_t front_frame() const;
  // Drops the oldest published slot unread, which must hold `frame` and have no claimed slot
  // before it (a frame that stopped at an exit after its sender ran it); throws std::logic_error
  // otherwise, like claim().
  void discard(uint64_t frame);

  // Statistics.
  uint64_t transfers() const { return transfers_; }
  uint32_t max_occupancy() const { return max_used_; }
  // Times the sender was ready to start a frame and this buffer alone held it back.
  uint64_t full_stalls() const { return full_stalls_; }
  void count_full_stall() { ++full_stalls_; }

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const { std::free(p); }
  };
  struct Slot {
    std::unique_ptr<std::byte, AlignedFree> data;
    uint64_t frame = 0;
  };

  std::string tensor_name_;
  size_t bytes_;
  uint32_t source_;
  uint32_t destination_;
  std::vector<Slot> slots_;
  // Ring positions: [head_, head_ + used_) is in use: claimed, then published, then reserved.
  size_t head_ = 0;       // oldest slot in use (next to claim or release)
  size_t used_ = 0;       // reserved + published + claimed
  size_t published_ = 0;  // published and not yet claimed
  size_t claimed_ = 0;    // claimed and not yet released
  uint64_t transfers_ = 0;
  uint32_t max_used_ = 0;
  uint64_t full_stalls_ = 0;
};

}  // namespace co_up
