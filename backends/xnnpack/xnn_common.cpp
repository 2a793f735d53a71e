#include "xnn_common.h"

#include "plugin_status.h"

namespace co_up::xnnpack {

const char* xnn_status_name(xnn_status status) {
  switch (status) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
  }
  return "unknown status";
}

void check_xnn(xnn_status status, const std::string& what) {
  if (status == xnn_status_success) return;
  backends::fail(
      status == xnn_status_out_of_memory ? CO_UP_STATUS_OUT_OF_MEMORY : CO_UP_STATUS_RUNTIME_ERROR,
      "XNNPACK " + what + " failed: " + xnn_status_name(status));
}

std::pair<float, float> activation_range(backends::Activation a) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (a) {
    case backends::Activation::kNone: return {-kInf, kInf};
    case backends::Activation::kRelu: return {0.0f, kInf};
    case backends::Activation::kRelu6: return {0.0f, 6.0f};
  }
  return {-kInf, kInf};
}

std::vector<int64_t> internal_dims(const std::vector<int64_t>& d) {
  if (d.size() != 4) return d;
  return {d[0], d[2], d[3], d[1]};
}

int64_t internal_axis(int64_t axis, size_t rank) {
  if (rank != 4) return axis;
  static constexpr int64_t kToNhwc[4] = {0, 3, 1, 2};
  return kToNhwc[axis];
}

void split_at_axis(const std::vector<int64_t>& dims, int64_t axis, int64_t* outer,
                   int64_t* axis_len, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t d = 0; d < axis; ++d) *outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) *inner *= dims[d];
  *axis_len = dims[static_cast<size_t>(axis)];
}

bool needs_transpose(const std::vector<int64_t>& d) {
  return d.size() == 4 && d[1] > 1 && d[2] * d[3] > 1;
}

}  // namespace co_up::xnnpack
