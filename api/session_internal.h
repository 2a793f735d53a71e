// Internals of the public API (include/co_up/co_up.hpp) shared by its sources: the option values
// and the conversion of internal errors into co_up::Error. Not installed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "co_up/co_up.hpp"

namespace co_up {

struct SessionOptions::Values {
  std::string order;  // empty: every layer on B
  Mode mode = Mode::kPipeline;
  std::string split;
  std::string platform_file;
  std::string plugins_dir;
  std::string sysfs_root = "/sys";
  std::string frequency;
  std::string dvfs = "strict";
  int profile_level = 0;
  uint32_t buffers = 2;
  std::optional<int> threads, cores, threads_little, cores_little;
  int64_t image_size = 0;
  uint64_t seed = 1;
  std::string data_dir;
  std::string units = "layers";
  std::vector<int64_t> input_shape;
  uint32_t queue_capacity = 0;
};

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
