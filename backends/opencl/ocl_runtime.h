// OpenCL plumbing of the opencl backend, independent of the plugin ABI's graph types: device
// discovery and selection, RAII handles, error names, and programs built once per device with an
// on-disk program-binary cache.
//
// Nothing here assumes one vendor: only the ICD loader's OpenCL 1.2 API is used, and every
// device-specific choice (work-group size, cache key) is queried from the device.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plugin_status.h"

namespace co_up::opencl {

// Failures are backends/common's PluginErrors, turned into statuses at the ABI boundary.
using backends::fail;
using backends::PluginError;

// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error_name(cl_int code);

// OOM-like OpenCL errors become CO_UP_STATUS_OUT_OF_MEMORY, others RUNTIME_ERROR.
[[noreturn]] void fail_cl(cl_int code, const std::string& what);
inline void check_cl(cl_int code, const char* what) {
  if (code != CL_SUCCESS) fail_cl(code, what);
}
inline void check_cl(cl_int code, const std::string& what) {
  if (code != CL_SUCCESS) fail_cl(code, what);
}

// Owns one reference to an OpenCL object.
template <typename T, cl_int (*Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T handle) : handle_(handle) {}
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;
  ClHandle(ClHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ClHandle& operator=(ClHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~ClHandle() { reset(); }
  void reset() {
    if (handle_) Release(handle_);
    handle_ = nullptr;
  }
  T get() const { return handle_; }
  T* ptr() { return &handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  T handle_ = nullptr;
};

using ClContext = ClHandle<cl_context, clReleaseContext>;
using ClQueue = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using ClProgram = ClHandle<cl_program, clReleaseProgram>;
using ClKernel = ClHandle<cl_kernel, clReleaseKernel>;
using ClMem = ClHandle<cl_mem, clReleaseMemObject>;
using ClEvent = ClHandle<cl_event, clReleaseEvent>;

// One device as the ICD loader sees it.
struct DeviceInfo {
  uint32_t platform_index = 0;
  uint32_t device_index = 0;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platform_name;
  std::string platform_version;
  std::string name;
  std::string version;         // CL_DEVICE_VERSION
  std::string driver_version;  // CL_DRIVER_VERSION
  std::string type;            // "GPU", "CPU", "accelerator", ...
  bool is_gpu = false;
  uint32_t compute_units = 0;
  uint64_t global_mem_bytes = 0;
  uint64_t max_alloc_bytes = 0;
  size_t max_work_group_size = 0;
  bool host_unified_memory = false;

  // "platform 0 'Portable Computing Language', device 0 'pthread-…' (CPU, OpenCL 3.0 …)".
  std::string summary() const;
};

// Every device of every platform. Returns an empty list with `*out_error` set when the ICD
// loader finds no platform (or fails).
std::vector<DeviceInfo> enumerate_devices(std::string* out_error);

// Picks a device by the "platform" / "device" options: a decimal index, or a case-insensitive
// name substring; empty matches all. Without a "device" option a GPU is preferred. Throws
// PluginError(INVALID_ARGUMENT) listing what exists when nothing matches.
const DeviceInfo& select_device(const std::vector<DeviceInfo>& devices, const std::string& platform,
                                const std::string& device);

// Builds `source` for one device, through the binary cache in `cache_dir` (empty: no cache).
// Throws PluginError(RUNTIME_ERROR) with the build log when the build fails.
struct BuildResult {
  ClProgram program;
  bool from_cache = false;
  std::string cache_file;  // where the binary was read or written; empty without a cache
};
BuildResult build_program(cl_context context, const DeviceInfo& device, const std::string& source,
                          const std::string& options, const std::string& cache_dir);

// $XDG_CACHE_HOME/co_up/opencl, else $HOME/.cache/co_up/opencl, else empty (no cache).
std::string default_cache_dir();

}  // namespace co_up::opencl
