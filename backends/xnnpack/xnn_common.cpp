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

void initialize_xnnpack(const std::string& advice) {
  const xnn_status st = xnn_initialize(nullptr);
  if (st != xnn_status_success) {
    backends::fail(CO_UP_STATUS_NO_DEVICE, std::string("xnn_initialize failed: ") +
                                               xnn_status_name(st) +
                                               " (this CPU lacks the instructions XNNPACK needs; " +
                                               advice + ")");
  }
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

std::vector<float> conv_weights_ohwi(const float* w, const backends::Conv2dShape& s) {
  const int64_t gin = s.in_channels / s.group, taps = s.kernel_h * s.kernel_w;
  std::vector<float> ohwi(static_cast<size_t>(s.out_channels * gin * taps));
  for (int64_t m = 0; m < s.out_channels; ++m) {
    for (int64_t ci = 0; ci < gin; ++ci) {
      for (int64_t t = 0; t < taps; ++t) {
        ohwi[static_cast<size_t>((m * taps + t) * gin + ci)] = w[(m * gin + ci) * taps + t];
      }
    }
  }
  return ohwi;
}

const float* fc_weights_for_nhwc(const float* w, const std::vector<int64_t>& input_dims,
                                 int64_t fc_out, int64_t fc_in, std::vector<float>& storage) {
  if (!needs_transpose(input_dims)) return w;
  const int64_t ch = input_dims[1], plane = input_dims[2] * input_dims[3];
  storage.resize(static_cast<size_t>(fc_out * fc_in));
  for (int64_t m = 0; m < fc_out; ++m) {
    for (int64_t ci = 0; ci < ch; ++ci) {
      for (int64_t q = 0; q < plane; ++q) {
        storage[static_cast<size_t>(m * fc_in + q * ch + ci)] = w[m * fc_in + ci * plane + q];
      }
    }
  }
  return storage.data();
}

}  // namespace co_up::xnnpack
