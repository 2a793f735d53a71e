#include "core/receiver.h"

#include <algorithm>
#include <new>
#include <stdexcept>

namespace co_up {

Receiver::Receiver(std::string tensor_name, size_t bytes, uint32_t capacity, uint32_t source,
                   uint32_t destination)
    : tensor_name_(std::move(tensor_name)), bytes_(bytes), source_(source),
      destination_(destination), slots_(std::max(capacity, 1u)) {
  constexpr size_t kAlignment = 64;  // cache line; also what SIMD kernels like
  const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  for (Slot& slot : slots_) {
    slot.data.reset(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
    if (!slot.data) throw std::bad_alloc();
  }
}

void Receiver::reset() {
  head_ = used_ = published_ = claimed_ = 0;
  transfers_ = full_stalls_ = 0;
  max_used_ = 0;
}

void* Receiver::reserve() {
  if (!can_reserve()) throw std::logic_error("receiver '" + tensor_name_ + "' is full");
  Slot& slot = slots_[(head_ + used_) % slots_.size()];
  ++used_;
  max_used_ = std::max<uint32_t>(max_used_, static_cast<uint32_t>(used_));
  return slot.data.get();
}

void Receiver::publish(uint64_t frame) {
  if (claimed_ + published_ >= used_) {
    throw std::logic_error("receiver '" + tensor_name_ + "': publish without reserve");
  }
  slots_[(head_ + claimed_ + published_) % slots_.size()].frame = frame;
  ++published_;
  ++transfers_;
}

void Receiver::cancel() {
  if (claimed_ + published_ >= used_) {
    throw std::logic_error("receiver '" + tensor_name_ + "': cancel without reserve");
  }
  --used_;  // one sender per receiver, one frame at a time: the reservation is the newest slot
}

uint64_t Receiver::front_frame() const {
  if (published_ == 0) throw std::logic_error("receiver '" + tensor_name_ + "' is empty");
  return slots_[(head_ + claimed_) % slots_.size()].frame;
}

void Receiver::discard(uint64_t frame) {
  if (claimed_ != 0) {
    throw std::logic_error("receiver '" + tensor_name_ + "': discard while a frame is claimed");
  }
  claim(frame);
  release();
}

const void* Receiver::claim(uint64_t frame) {
  if (published_ == 0) throw std::logic_error("receiver '" + tensor_name_ + "' is empty");
  Slot& slot = slots_[(head_ + claimed_) % slots_.size()];
  if (slot.frame != frame) {
    throw std::logic_error("receiver '" + tensor_name_ + "' expected frame " +
                           std::to_string(frame) + " but holds frame " +
                           std::to_string(slot.frame) + " (frame lost, duplicated or reordered)");
  }
  --published_;
  ++claimed_;
  return slot.data.get();
}

void Receiver::release() {
  if (claimed_ == 0) throw std::logic_error("receiver '" + tensor_name_ + "': release without claim");
  head_ = (head_ + 1) % slots_.size();
  --claimed_;
  --used_;
}

}  // namespace co_up
