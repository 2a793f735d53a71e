// The benchmark programs' main(): what they print on bad input or a failure, and their exit codes.
#pragma once

#include <exception>
#include <iostream>

#include "core/error.h"

namespace co_up::bench {

// Runs `body` (returning the exit code); a bad option or input is one line "PROGRAM: error: ..."
// and exit 2, any other failure "PROGRAM: failed: ..." and exit 1.
template <class Body>
int bench_main(const char* program, Body&& body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program << ": failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace co_up::bench
