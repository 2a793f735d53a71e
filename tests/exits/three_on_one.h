// The platform the stage-and-exit command-line tests run on: three processors on core 0, all on
// cpu-reference (the one CPU backend that lets processors share a core), so every mapping computes
// the same bits on any machine.
#pragma once

#include <string>

namespace co_up::test {

// Platform JSON: B on core 0, one thread; `second` and `third` hosted on B.
inline std::string three_on_one_platform(char second = 'D', char third = 'E') {
  return std::string(R"({
  "name": "three-on-one",
  "processors": [
    {"letter": "B", "name": "core 0", "kind": "cpu", "backend": "cpu-reference", "cores": [0], "threads": 1},
    {"letter": ")") + second + R"(", "name": "second", "kind": "dsp", "backend": "cpu-reference", "host": "B"},
    {"letter": ")" + third + R"(", "name": "third", "kind": "dsp", "backend": "cpu-reference", "host": "B"}
  ]
})";
}

}  // namespace co_up::test
