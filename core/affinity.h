// CPU affinity for host threads: every co_up thread runs on the cores of its own cluster only.
#pragma once

#include <string>
#include <vector>

namespace co_up {

// Pins the calling thread to `cores`. Throws RuntimeError naming the cores and the OS error.
void pin_current_thread(const std::vector<int>& cores);
// The cores the calling thread may run on.
std::vector<int> current_thread_affinity();
// "0,1" for {0, 1}.
std::string format_cores(const std::vector<int>& cores);

}  // namespace co_up
