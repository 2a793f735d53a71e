// Receiver::cancel and Receiver::discard, what a frame that stops at an exit uses: a cancelled
// reservation frees its slot without a transfer, a discarded frame is dropped unread, and the
// frame numbers of what remains are still checked.
#include "core/receiver.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace co_up {
namespace {

TEST(ReceiverCancelTest, ACancelledReservationFreesItsSlotWithoutATransfer) {
  Receiver r("t", 16, 2, 0, 1);
  r.reserve();
  r.publish(0);
  r.reserve();
  EXPECT_FALSE(r.can_reserve());
  r.cancel();  // frame 1 stopped before this receiver's sub-graph
  EXPECT_TRUE(r.can_reserve());
  EXPECT_EQ(r.transfers(), 1u);
  r.reserve();
  r.publish(2);
  EXPECT_NO_THROW(r.claim(0));
  r.release();
  EXPECT_NO_THROW(r.claim(2));
  r.release();
  EXPECT_EQ(r.transfers(), 2u);
  EXPECT_THROW(r.cancel(), std::logic_error);  // nothing reserved
}

TEST(ReceiverCancelTest, ADiscardedFrameIsDroppedUnreadAndChecked) {
  Receiver r("t", 16, 3, 0, 2);
  for (uint64_t f : {4, 5}) {
    r.reserve();
    r.publish(f);
  }
  EXPECT_EQ(r.front_frame(), 4u);
  EXPECT_THROW(r.discard(5), std::logic_error);  // not the oldest frame
  r.discard(4);
  EXPECT_EQ(r.front_frame(), 5u);
  r.claim(5);
  EXPECT_THROW(r.discard(5), std::logic_error);  // a claimed slot before it
  r.release();
  EXPECT_FALSE(r.has_frame());
  EXPECT_THROW(r.front_frame(), std::logic_error);
  EXPECT_THROW(r.discard(6), std::logic_error);
  EXPECT_TRUE(r.can_reserve());
}

}  // namespace
}  // namespace co_up
