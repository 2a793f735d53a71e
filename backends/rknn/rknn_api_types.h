// The part of Rockchip's RKNN runtime C API (RKNPU2: librknnrt.so, rknn_api.h of rknpu2 /
// rknn-toolkit2's runtime) that co_up's rknn shim calls, declared here from its public
// documentation so that co_up builds without Rockchip's SDK. Layouts, constant values and function
// signatures are the documented ones — the shim dlopens the vendor's binary and passes these
// structs to it — so nothing here may be reordered or resized.
//
// Only what the shim uses: init/destroy, query (in/out count, tensor attributes), inputs_set,
// run, outputs_get/release. Zero-copy memory (rknn_set_io_mem), multi-core masks and the perf
// queries are left out.
//
// RKNPU1 (RK1808 / RK3399Pro, librknn_api.so) shares the function names but not every detail:
// its tensor attribute struct ends at `scale` and lists dims innermost first; the shim targets
// RKNPU2.
#pragma once

#include <cstdint>

namespace co_up::rknn {

// A context handle: 32 bits on 32-bit Arm builds of the runtime, 64 bits elsewhere.
#if defined(__arm__)
using rknn_context = uint32_t;
#else
using rknn_context = uint64_t;
#endif

// Return codes (0 = success).
inline constexpr int RKNN_SUCC = 0;
inline constexpr int RKNN_ERR_FAIL = -1;
inline constexpr int RKNN_ERR_TIMEOUT = -2;
inline constexpr int RKNN_ERR_DEVICE_UNAVAILABLE = -3;
inline constexpr int RKNN_ERR_MALLOC_FAIL = -4;
inline constexpr int RKNN_ERR_PARAM_INVALID = -5;
inline constexpr int RKNN_ERR_MODEL_INVALID = -6;
inline constexpr int RKNN_ERR_CTX_INVALID = -7;
inline constexpr int RKNN_ERR_INPUT_INVALID = -8;
inline constexpr int RKNN_ERR_OUTPUT_INVALID = -9;
inline constexpr int RKNN_ERR_DEVICE_UNMATCH = -10;
inline constexpr int RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL = -11;
inline constexpr int RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION = -12;
inline constexpr int RKNN_ERR_TARGET_PLATFORM_UNMATCH = -13;

inline constexpr uint32_t RKNN_MAX_DIMS = 16;
inline constexpr uint32_t RKNN_MAX_NAME_LEN = 256;

// C enums: int-sized on every ABI the runtime ships for.
enum rknn_query_cmd : int32_t {
  RKNN_QUERY_IN_OUT_NUM = 0,  // -> rknn_input_output_num
  RKNN_QUERY_INPUT_ATTR = 1,  // -> rknn_tensor_attr, `index` set by the caller
  RKNN_QUERY_OUTPUT_ATTR = 2,
  RKNN_QUERY_PERF_DETAIL = 3,
  RKNN_QUERY_PERF_RUN = 4,
  RKNN_QUERY_SDK_VERSION = 5,
};

enum rknn_tensor_type : int32_t {
  RKNN_TENSOR_FLOAT32 = 0,
  RKNN_TENSOR_FLOAT16 = 1,
  RKNN_TENSOR_INT8 = 2,
  RKNN_TENSOR_UINT8 = 3,
  RKNN_TENSOR_INT16 = 4,
  RKNN_TENSOR_UINT16 = 5,
  RKNN_TENSOR_INT32 = 6,
  RKNN_TENSOR_UINT32 = 7,
  RKNN_TENSOR_INT64 = 8,
  RKNN_TENSOR_BOOL = 9,
};

enum rknn_tensor_qnt_type : int32_t {
  RKNN_TENSOR_QNT_NONE = 0,
  RKNN_TENSOR_QNT_DFP = 1,               // dynamic fixed point: real = q * 2^-fl
  RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC = 2,  // real = (q - zp) * scale
};

enum rknn_tensor_format : int32_t {
  RKNN_TENSOR_NCHW = 0,
  RKNN_TENSOR_NHWC = 1,
  RKNN_TENSOR_NC1HWC2 = 2,  // the NPU's native blocked layout (zero-copy I/O only)
  RKNN_TENSOR_UNDEFINED = 3,
};

struct rknn_input_output_num {
  uint32_t n_input;
  uint32_t n_output;
};

struct rknn_tensor_attr {
  uint32_t index;  // set by the caller before rknn_query
  uint32_t n_dims;
  uint32_t dims[RKNN_MAX_DIMS];  // outermost first, in `fmt`'s order
  char name[RKNN_MAX_NAME_LEN];
  uint32_t n_elems;
  uint32_t size;  // bytes
  rknn_tensor_format fmt;
  rknn_tensor_type type;
  rknn_tensor_qnt_type qnt_type;
  int8_t fl;  // RKNN_TENSOR_QNT_DFP
  int32_t zp;  // RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC
  float scale;
  uint32_t w_stride;  // read-only; 0: equal to the width
  uint32_t size_with_stride;
  uint8_t pass_through;
  uint32_t h_stride;
};

struct rknn_input {
  uint32_t index;
  void* buf;
  uint32_t size;  // bytes in buf
  // 1: buf is already in the model's native type and layout; 0: the runtime converts from
  // `type`/`fmt` below to what the model wants.
  uint8_t pass_through;
  rknn_tensor_type type;
  rknn_tensor_format fmt;
};

struct rknn_output {
  uint8_t want_float;   // 1: deliver f32 whatever the model's output type
  uint8_t is_prealloc;  // 1: `buf`/`size` are the caller's; 0: the runtime allocates `buf`,
                        // valid until rknn_outputs_release
  uint32_t index;
  void* buf;
  uint32_t size;
};

struct rknn_init_extend {
  rknn_context ctx;
  uint8_t reserved[128];
};

struct rknn_run_extend {
  uint64_t frame_id;
  int32_t non_block;
  int32_t timeout_ms;
  int32_t fence_fd;
};

struct rknn_output_extend {
  uint64_t frame_id;
};

// The seven entry points, as function pointer types for dlsym. `model` holds `size` bytes of a
// .rknn file (or, with size 0, is the path of one).
using rknn_init_fn = int (*)(rknn_context* context, void* model, uint32_t size, uint32_t flag,
                             rknn_init_extend* extend);
using rknn_destroy_fn = int (*)(rknn_context context);
using rknn_query_fn = int (*)(rknn_context context, rknn_query_cmd cmd, void* info, uint32_t size);
using rknn_inputs_set_fn = int (*)(rknn_context context, uint32_t n_inputs, rknn_input inputs[]);
using rknn_run_fn = int (*)(rknn_context context, rknn_run_extend* extend);
using rknn_outputs_get_fn = int (*)(rknn_context context, uint32_t n_outputs, rknn_output outputs[],
                                    rknn_output_extend* extend);
using rknn_outputs_release_fn = int (*)(rknn_context context, uint32_t n_outputs,
                                        rknn_output outputs[]);

// The documented layouts, where the compiler would lay a struct out differently by mistake.
static_assert(sizeof(rknn_input_output_num) == 8);
static_assert(sizeof(void*) != 8 || sizeof(rknn_tensor_attr) == 376);
static_assert(sizeof(void*) != 8 || sizeof(rknn_input) == 32);
static_assert(sizeof(void*) != 8 || sizeof(rknn_output) == 24);

// "RKNN_ERR_MODEL_INVALID" for messages.
inline const char* rknn_error_name(int code) {
  switch (code) {
    case RKNN_SUCC: return "RKNN_SUCC";
    case RKNN_ERR_FAIL: return "RKNN_ERR_FAIL";
    case RKNN_ERR_TIMEOUT: return "RKNN_ERR_TIMEOUT";
    case RKNN_ERR_DEVICE_UNAVAILABLE: return "RKNN_ERR_DEVICE_UNAVAILABLE";
    case RKNN_ERR_MALLOC_FAIL: return "RKNN_ERR_MALLOC_FAIL";
    case RKNN_ERR_PARAM_INVALID: return "RKNN_ERR_PARAM_INVALID";
    case RKNN_ERR_MODEL_INVALID: return "RKNN_ERR_MODEL_INVALID";
    case RKNN_ERR_CTX_INVALID: return "RKNN_ERR_CTX_INVALID";
    case RKNN_ERR_INPUT_INVALID: return "RKNN_ERR_INPUT_INVALID";
    case RKNN_ERR_OUTPUT_INVALID: return "RKNN_ERR_OUTPUT_INVALID";
    case RKNN_ERR_DEVICE_UNMATCH: return "RKNN_ERR_DEVICE_UNMATCH";
    case RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL: return "RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL";
    case RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION:
      return "RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION";
    case RKNN_ERR_TARGET_PLATFORM_UNMATCH: return "RKNN_ERR_TARGET_PLATFORM_UNMATCH";
    default: return "unknown RKNN error";
  }
}

}  // namespace co_up::rknn
