// One loaded backend plugin, driven through the C ABI (co_up/plugin_abi.h) as the runtime drives
// it: the shared dlopen harness of the backend tests (the conformance suite, cpu-xnnpack's and
// npu-int8's own tests), so each does not carry its own copy.
//
// Header-only. Plugins are never dlclose'd: XNNPACK, OpenCL drivers and CLBlast keep
// process-wide state that outlives a factory.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"

namespace co_up::testing {

class AbiPlugin {
 public:
  // Loads `file` from $CO_UP_PLUGIN_PATH (else ./plugins) and creates its factory. Throws
  // std::runtime_error with dlerror() or the factory's message (a plugin without its device
  // declines here, CO_UP_STATUS_NO_DEVICE).
  explicit AbiPlugin(const std::string& file) {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    const std::string path = std::string(dir ? dir : "plugins") + "/" + file;
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error(dlerror());
    get_api_ = reinterpret_cast<co_up_plugin_get_api_fn>(dlsym(handle_, CO_UP_PLUGIN_ENTRY_POINT));
    if (!get_api_) throw std::runtime_error(path + " has no " CO_UP_PLUGIN_ENTRY_POINT);
    api_ = get_api_(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR);
    if (!api_) throw std::runtime_error(path + " returned no API table");
    check(api_->factory_create(nullptr, 0, &factory_));
  }
  ~AbiPlugin() {
    if (factory_) api_->factory_release(factory_);
  }
  AbiPlugin(const AbiPlugin&) = delete;
  AbiPlugin& operator=(const AbiPlugin&) = delete;

  // The status code (OK for NULL) and message; releases the status.
  std::pair<int32_t, std::string> take(co_up_status* s) const {
    if (!s) return {CO_UP_STATUS_OK, ""};
    std::pair<int32_t, std::string> r{s->code, s->message ? s->message : ""};
    api_->status_release(s);
    return r;
  }
  // Throws std::runtime_error with the message unless `s` is OK.
  void check(co_up_status* s) const {
    auto [code, message] = take(s);
    if (code != CO_UP_STATUS_OK) throw std::runtime_error(message);
  }
  std::pair<int32_t, std::string> make_device(
      const std::vector<std::pair<std::string, std::string>>& opts, co_up_device** out) const {
    std::vector<co_up_option> o;
    for (const auto& [k, v] : opts) o.push_back({k.c_str(), v.c_str()});
    return take(api_->device_create(factory_, o.data(), uint32_t(o.size()), out));
  }

  const co_up_plugin_api* api() const { return api_; }
  co_up_factory* factory() const { return factory_; }
  co_up_plugin_get_api_fn get_api() const { return get_api_; }

 private:
  void* handle_ = nullptr;
  co_up_plugin_get_api_fn get_api_ = nullptr;
  const co_up_plugin_api* api_ = nullptr;
  co_up_factory* factory_ = nullptr;
};

}  // namespace co_up::testing
