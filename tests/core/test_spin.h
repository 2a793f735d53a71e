// How long an executor-heavy test's processor threads spin through a wait inside a frame.
//
// ctest -j runs two tests at once, and the processor threads of each pin themselves to the same
// host cores (B to the first half, L to the second). The executor's in-frame spin
// (ExecutorOptions::spin_wait_in_frame_us, 20 ms by default) assumes one co_up per board: beside
// another test, a thread spinning through a wait takes the core that the other test's working
// thread is pinned to, and under a sanitizer, where a frame takes long, most such waits spin the
// whole 20 ms. The tests that run many mappings through options of their own spin only
// spin_wait_us per wait (0 here), as the executor did before it spun inside frames: what they
// assert (outputs, frame order, placement) does not depend on how an idle thread waits.
// ExecutorTest.CpuProcessorSpinsThroughAWaitInsideAFrame tests the in-frame spin itself, and the
// tests that run co_up or the API run it with the default.
#pragma once

#include <cstdint>

namespace co_up::testing {

inline constexpr uint32_t kSpinWaitInFrameUs = 0;

}  // namespace co_up::testing
