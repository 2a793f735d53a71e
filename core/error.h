// Error types shared by every co_up library. Messages say what failed, on what, and what to do:
//   "order 'BBX' has unknown letter 'X' at position 3 (platform 'host' defines B, L, G, N)".
// The CLI maps InputError to exit code 2 and RuntimeError to exit code 1.
#pragma once

#include <stdexcept>
#include <string>

namespace co_up {

// Bad user input: options, order strings, files, platform descriptions, models.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Something failed while doing valid work: a plugin, a device, the OS.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace co_up
