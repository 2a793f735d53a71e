// Receiver: a bounded ring of preallocated buffers that checks frame numbers.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "core/receiver.h"

namespace co_up {
namespace {

TEST(ReceiverTest, DeliversFramesInOrderUpToCapacity) {
  Receiver r("t", 16, 3, 0, 1);
  EXPECT_EQ(r.capacity(), 3u);
  for (uint64_t f = 0; f < 3; ++f) {
    ASSERT_TRUE(r.can_reserve());
    void* slot = r.reserve();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(slot) % 64, 0u) << "slots are cache-line aligned";
    std::memset(slot, static_cast<int>(f), 16);
    r.publish(f);
  }
  EXPECT_FALSE(r.can_reserve());
  for (uint64_t f = 0; f < 3; ++f) {
    ASSERT_TRUE(r.has_frame());
    const auto* data = static_cast<const unsigned char*>(r.claim(f));
    EXPECT_EQ(data[0], f);
    r.release();
  }
  EXPECT_FALSE(r.has_frame());
  EXPECT_EQ(r.transfers(), 3u);
  EXPECT_EQ(r.max_occupancy(), 3u);
}

TEST(ReceiverTest, SlotStaysInUseWhileClaimed) {
  Receiver r("t", 8, 1, 0, 1);
  r.reserve();
  r.publish(0);
  r.claim(0);
  EXPECT_FALSE(r.can_reserve()) << "a claimed slot is still being read";
  r.release();
  EXPECT_TRUE(r.can_reserve());
}

TEST(ReceiverTest, ReservedButUnpublishedSlotIsNotVisible) {
  Receiver r("t", 8, 2, 0, 1);
  r.reserve();
  EXPECT_FALSE(r.has_frame());
  r.publish(0);
  EXPECT_TRUE(r.has_frame());
}

TEST(ReceiverTest, WrongFrameNumberIsDetected) {
  Receiver r("t", 8, 2, 0, 1);
  r.reserve();
  r.publish(5);
  EXPECT_THROW(r.claim(4), std::logic_error);
}

TEST(ReceiverTest, MisuseIsALogicError) {
  Receiver r("t", 8, 1, 0, 1);
  EXPECT_THROW(r.claim(0), std::logic_error);
  EXPECT_THROW(r.release(), std::logic_error);
  EXPECT_THROW(r.publish(0), std::logic_error);
  r.reserve();
  EXPECT_THROW(r.reserve(), std::logic_error);
}

TEST(ReceiverTest, WrapsAroundManyTimes) {
  Receiver r("t", 4, 2, 0, 1);
  for (uint64_t f = 0; f < 1000; ++f) {
    *static_cast<uint32_t*>(r.reserve()) = static_cast<uint32_t>(f);
    r.publish(f);
    if (f >= 1) {
      EXPECT_EQ(*static_cast<const uint32_t*>(r.claim(f - 1)), f - 1);
      r.release();
    }
  }
}

}  // namespace
}  // namespace co_up
