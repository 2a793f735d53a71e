// The RKNPU2 runtime ABI as the fake librknnrt.so sees it, written for the fake alone from
// Rockchip's documented rknn_api.h field lists (rknn-toolkit2, rknpu2/runtime/.../rknn_api.h), on
// purpose NOT shared with the shim's declarations (backends/rknn/rknn_api_types.h): the shim and
// the fake meet only at the C symbols and the bytes of these structs, as the shim and the real
// runtime do, so a layout mistake in one of them shows up as a test failure instead of cancelling
// out. The offsets below are the documented C layout on LP64 (x86-64, aarch64), spelled out.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fake_rknn_abi {

using rknn_context = uint64_t;  // LP64 builds of librknnrt

constexpr int RKNN_SUCC = 0;
constexpr int RKNN_ERR_FAIL = -1;
constexpr int RKNN_ERR_PARAM_INVALID = -5;
constexpr int RKNN_ERR_MODEL_INVALID = -6;
constexpr int RKNN_ERR_CTX_INVALID = -7;
constexpr int RKNN_ERR_INPUT_INVALID = -8;
constexpr int RKNN_ERR_OUTPUT_INVALID = -9;

constexpr uint32_t RKNN_MAX_DIMS = 16;
constexpr uint32_t RKNN_MAX_NAME_LEN = 256;

// C enums of the header; int-sized.
enum rknn_query_cmd : int {
  RKNN_QUERY_IN_OUT_NUM = 0,
  RKNN_QUERY_INPUT_ATTR = 1,
  RKNN_QUERY_OUTPUT_ATTR = 2,
};

enum rknn_tensor_type : int {
  RKNN_TENSOR_FLOAT32 = 0,
  RKNN_TENSOR_FLOAT16 = 1,
  RKNN_TENSOR_INT8 = 2,
  RKNN_TENSOR_UINT8 = 3,
};

enum rknn_tensor_qnt_type : int {
  RKNN_TENSOR_QNT_NONE = 0,
  RKNN_TENSOR_QNT_DFP = 1,
  RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC = 2,
};

enum rknn_tensor_format : int {
  RKNN_TENSOR_NCHW = 0,
  RKNN_TENSOR_NHWC = 1,
  RKNN_TENSOR_NC1HWC2 = 2,
  RKNN_TENSOR_UNDEFINED = 3,
};

// RKNN_QUERY_IN_OUT_NUM
struct rknn_input_output_num {
  uint32_t n_input;
  uint32_t n_output;
};

// RKNN_QUERY_INPUT_ATTR / RKNN_QUERY_OUTPUT_ATTR
struct rknn_tensor_attr {
  uint32_t index;                  // in: which tensor
  uint32_t n_dims;
  uint32_t dims[RKNN_MAX_DIMS];
  char name[RKNN_MAX_NAME_LEN];
  uint32_t n_elems;
  uint32_t size;                   // bytes
  rknn_tensor_format fmt;
  rknn_tensor_type type;
  rknn_tensor_qnt_type qnt_type;
  int8_t fl;
  int32_t zp;
  float scale;
  uint32_t w_stride;
  uint32_t size_with_stride;
  uint8_t pass_through;
  uint32_t h_stride;
};

struct rknn_input {
  uint32_t index;
  void* buf;
  uint32_t size;
  uint8_t pass_through;
  rknn_tensor_type type;
  rknn_tensor_format fmt;
};

struct rknn_output {
  uint8_t want_float;
  uint8_t is_prealloc;
  uint32_t index;
  void* buf;
  uint32_t size;
};

// Only passed through by the fake (it reads no field of them).
struct rknn_init_extend;
struct rknn_run_extend;
struct rknn_output_extend;

static_assert(sizeof(void*) == 8, "the fake models the LP64 runtime");
static_assert(sizeof(rknn_input_output_num) == 8);
static_assert(offsetof(rknn_tensor_attr, dims) == 8);
static_assert(offsetof(rknn_tensor_attr, name) == 72);
static_assert(offsetof(rknn_tensor_attr, n_elems) == 328);
static_assert(offsetof(rknn_tensor_attr, size) == 332);
static_assert(offsetof(rknn_tensor_attr, fmt) == 336);
static_assert(offsetof(rknn_tensor_attr, type) == 340);
static_assert(offsetof(rknn_tensor_attr, qnt_type) == 344);
static_assert(offsetof(rknn_tensor_attr, fl) == 348);
static_assert(offsetof(rknn_tensor_attr, zp) == 352);
static_assert(offsetof(rknn_tensor_attr, scale) == 356);
static_assert(offsetof(rknn_tensor_attr, w_stride) == 360);
static_assert(offsetof(rknn_tensor_attr, size_with_stride) == 364);
static_assert(offsetof(rknn_tensor_attr, pass_through) == 368);
static_assert(offsetof(rknn_tensor_attr, h_stride) == 372);
static_assert(sizeof(rknn_tensor_attr) == 376);
static_assert(offsetof(rknn_input, buf) == 8);
static_assert(offsetof(rknn_input, size) == 16);
static_assert(offsetof(rknn_input, pass_through) == 20);
static_assert(offsetof(rknn_input, type) == 24);
static_assert(offsetof(rknn_input, fmt) == 28);
static_assert(sizeof(rknn_input) == 32);
static_assert(offsetof(rknn_output, is_prealloc) == 1);
static_assert(offsetof(rknn_output, index) == 4);
static_assert(offsetof(rknn_output, buf) == 8);
static_assert(offsetof(rknn_output, size) == 16);
static_assert(sizeof(rknn_output) == 24);

}  // namespace fake_rknn_abi
