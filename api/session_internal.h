// Internals of the public API (include/co_up/co_up.hpp) shared by its sources: the option values
// and the conversion of internal errors into co_up::Error. Not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "co_up/co_up.hpp"
#include "api/run_options.h"

namespace co_up {

// The run options, as the command line names them (api/run_options.h: one table for the command
// line, SessionOptions and Python).
struct SessionOptions::Values : RunValues {};

namespace api {

// Runs `body`, turning co_up's internal exceptions (InputError, RuntimeError, std::bad_alloc,
// anything else) into co_up::Error with the message the command line would print.
template <typename Body>
auto translate_errors(Body&& body) -> decltype(body());

[[noreturn]] void rethrow_as_error(std::exception_ptr error);

template <typename Body>
auto translate_errors(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (...) {
    rethrow_as_error(std::current_exception());
  }
}

}  // namespace api
}  // namespace co_up
