#include "rknn_runtime.h"

#include <dlfcn.h>

#include "plugin_status.h"

namespace co_up::rknn {
namespace {

constexpr const char* kInstallHint =
    "install Rockchip's RKNPU2 runtime (librknnrt.so from github.com/airockchip/rknn-toolkit2, "
    "rknpu2/runtime/Linux/librknn_api/aarch64) into /usr/lib, or name it in $CO_UP_RKNN_LIBRARY";

template <typename Fn>
void lookup(void* handle, const std::string& library, const char* symbol, Fn& out) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    const char* err = dlerror();
    backends::fail(CO_UP_STATUS_NO_DEVICE,
                   "'" + library + "' has no " + symbol + " (" + (err ? err : "symbol is NULL") +
                       "): not an RKNPU2 runtime; " + kInstallHint);
  }
  out = reinterpret_cast<Fn>(address);
}

}  // namespace

std::shared_ptr<const RknnRuntime> RknnRuntime::open(const std::string& library) {
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    backends::fail(CO_UP_STATUS_NO_DEVICE, "cannot load the NPU runtime: " +
                                               std::string(err ? err : "dlopen failed") + " (" +
                                               kInstallHint + ")");
  }
  // Owns the handle from here on, so a missing symbol still closes it.
  std::shared_ptr<RknnRuntime> runtime(new RknnRuntime(library, handle));
  lookup(handle, library, "rknn_init", runtime->init);
  lookup(handle, library, "rknn_destroy", runtime->destroy);
  lookup(handle, library, "rknn_query", runtime->query);
  lookup(handle, library, "rknn_inputs_set", runtime->inputs_set);
  lookup(handle, library, "rknn_run", runtime->run);
  lookup(handle, library, "rknn_outputs_get", runtime->outputs_get);
  lookup(handle, library, "rknn_outputs_release", runtime->outputs_release);
  return runtime;
}

RknnRuntime::~RknnRuntime() { dlclose(handle_); }

}  // namespace co_up::rknn
