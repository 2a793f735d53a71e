// Statuses of a backend plugin, and the catch-everything helper at its ABI boundary.
//
// Inside a plugin, failures are PluginError exceptions carrying a co_up_status_code. Every ABI
// function runs its body inside `guarded`, which turns whatever the body throws into a
// co_up_status, so nothing throws across the boundary. Messages are prefixed with the backend's
// name ("cpu-reference: node 'conv1' (Conv): ..."), so the user sees which plugin said it.
//
// Part of co_up_backend_common: linked statically into each plugin, never exported.
#pragma once

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "co_up/plugin_abi.h"

namespace co_up::backends {

class PluginError : public std::runtime_error {
 public:
  PluginError(co_up_status_code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  co_up_status_code code() const { return code_; }

 private:
  co_up_status_code code_;
};

[[noreturn]] void fail(co_up_status_code code, const std::string& message);

// How one plugin's statuses read: a constexpr constant per plugin, passed to every call below.
struct StatusOrigin {
  const char* backend_name;  // every message starts with "<backend_name>: "
  // Returned when not even a status can be allocated. Static and immutable; release_status
  // recognises it by its address and keeps it.
  co_up_status out_of_memory;
  // std::bad_alloc reaching the boundary reads "<call>: <out_of_memory_hint>".
  const char* out_of_memory_hint;
};

// Allocates a status the caller releases with release_status; `message` is copied.
co_up_status* make_status(const StatusOrigin& origin, co_up_status_code code,
                          const std::string& message) noexcept;

// The body of every plugin's `status_release` (NULL and `origin.out_of_memory` are ignored).
void release_status(const StatusOrigin& origin, co_up_status* status) noexcept;

// Runs `body` and returns NULL, or the status for what it threw; `call` names the ABI function
// for exceptions that are not PluginErrors.
template <typename F>
co_up_status* guarded(const StatusOrigin& origin, const char* call, F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const PluginError& e) {
    return make_status(origin, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_status(origin, CO_UP_STATUS_OUT_OF_MEMORY,
                       std::string(call) + ": " + origin.out_of_memory_hint);
  } catch (const std::exception& e) {
    return make_status(origin, CO_UP_STATUS_RUNTIME_ERROR, std::string(call) + ": " + e.what());
  } catch (...) {
    return make_status(origin, CO_UP_STATUS_RUNTIME_ERROR, std::string(call) + ": unknown exception");
  }
}

}  // namespace co_up::backends
