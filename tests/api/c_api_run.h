// One synchronous run through the C API, for the tests that compare it with the C++ API and the
// command line: the input passed as a tensor view, every output copied out as a Tensor.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "co_up/co_up.h"
#include "co_up/co_up.hpp"

namespace co_up::test {

// A non-null status fails the test with its message and is released.
inline bool c_api_ok(co_up_error* status) {
  if (status == nullptr) return true;
  ADD_FAILURE() << co_up_error_message(status);
  co_up_error_release(status);
  return false;
}

inline std::vector<Tensor> run_through_c_api(co_up_session* session, const Tensor& input) {
  co_up_tensor_view view{};
  view.struct_size = sizeof(view);
  view.data = input.data();
  view.element_count = input.size();
  view.shape = input.shape().data();
  view.rank = input.shape().size();
  co_up_result* result = nullptr;
  std::vector<Tensor> outputs;
  if (!c_api_ok(co_up_session_run(session, &view, 1, &result)) || result == nullptr) return outputs;
  for (size_t i = 0; i < co_up_result_output_count(result); ++i) {
    co_up_tensor_view out{};
    if (!c_api_ok(co_up_result_output(result, i, &out))) break;
    outputs.emplace_back(std::vector<int64_t>(out.shape, out.shape + out.rank),
                         std::vector<float>(out.data, out.data + out.element_count));
  }
  co_up_result_release(result);
  return outputs;
}

}  // namespace co_up::test
