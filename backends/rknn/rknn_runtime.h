// RknnRuntime: Rockchip's NPU runtime library, dlopened, with its entry points looked up by name
// (the shim never links it, so co_up builds and loads on machines without it).
//
// Threading: immutable after open(); the RKNN API itself is called per context, and one context
// is used by one thread at a time (the plugin ABI's rule for a compiled sub-graph).
#pragma once

#include <memory>
#include <string>

#include "rknn_api_types.h"

namespace co_up::rknn {

// The library the plugin opens when nothing says otherwise, found through the dynamic linker's
// search path (/usr/lib on the boards that ship it).
inline constexpr const char* kDefaultLibrary = "librknnrt.so";
// Environment variable naming another library (a path or a file name) for the factory.
inline constexpr const char* kLibraryEnvironment = "CO_UP_RKNN_LIBRARY";

class RknnRuntime {
 public:
  // dlopen + dlsym of the seven functions. Throws PluginError(NO_DEVICE) with the dlerror text
  // and what to install when the library or one of its symbols is missing.
  static std::shared_ptr<const RknnRuntime> open(const std::string& library);
  ~RknnRuntime();
  RknnRuntime(const RknnRuntime&) = delete;
  RknnRuntime& operator=(const RknnRuntime&) = delete;

  const std::string& library() const { return library_; }

  rknn_init_fn init = nullptr;
  rknn_destroy_fn destroy = nullptr;
  rknn_query_fn query = nullptr;
  rknn_inputs_set_fn inputs_set = nullptr;
  rknn_run_fn run = nullptr;
  rknn_outputs_get_fn outputs_get = nullptr;
  rknn_outputs_release_fn outputs_release = nullptr;

 private:
  RknnRuntime(std::string library, void* handle) : library_(std::move(library)), handle_(handle) {}

  std::string library_;
  void* handle_;  // dlclose'd by the destructor
};

}  // namespace co_up::rknn
