#include "plugin_status.h"

#include <memory>

namespace co_up::backends {
namespace {

// A status the plugin allocated; `message` points into `text`.
struct OwnedStatus : co_up_status {
  std::string text;
};

}  // namespace

void fail(co_up_status_code code, const std::string& message) { throw PluginError(code, message); }

co_up_status* make_status(const StatusOrigin& origin, co_up_status_code code,
                          const std::string& message) noexcept {
  try {
    auto status = std::make_unique<OwnedStatus>();
    status->text = std::string(origin.backend_name) + ": " + message;
    status->struct_size = sizeof(co_up_status);
    status->code = code;
    status->message = status->text.c_str();
    return status.release();
  } catch (...) {
    // Never written through: release_status recognises it and the ABI hands it out read-only.
    return const_cast<co_up_status*>(&origin.out_of_memory);
  }
}

void release_status(const StatusOrigin& origin, co_up_status* status) noexcept {
  if (!status || status == &origin.out_of_memory) return;
  delete static_cast<OwnedStatus*>(status);
}

}  // namespace co_up::backends
