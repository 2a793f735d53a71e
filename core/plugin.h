// C++ side of the plugin ABI: RAII owners for the objects a plugin hands out.
//
// Destruction order follows the ABI chain — compiled sub-graphs, then devices, then the factory,
// then dlclose — and is enforced by ownership: a Device keeps its Plugin alive (shared_ptr), a
// CompiledSubGraph keeps its Device alive.
//
// Plugin code that runs outside the run loop — device_create/release, compiled_create/release,
// factory_release and dlclose — runs under a SignalDispositionGuard (core/signal_dispositions.h):
// a signal handler the plugin installs there is put back to what co_up had. The run-loop entries
// (map, unmap, bind_input, run) are not guarded (they are per frame).
//
// Threading: as the ABI says — Plugin and Device may be shared across threads; one
// CompiledSubGraph is used by one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"
#include "core/error.h"

namespace co_up {

// Which plugin entry point the calling thread is inside, for a crash handler's last line. Plugins
// are trusted code running in co_up's process; when one dies from a signal, the one thing co_up
// can still do is say whose code it was. Both pointers are NULL outside a plugin call; `backend`
// is the plugin's name (owned by the loaded plugin), `entry` a string literal. Reading it is
// async-signal-safe: a thread_local pair of pointers, set and cleared by PluginCallScope.
struct PluginCall {
  const char* backend;
  const char* entry;
};
PluginCall plugin_call_in_progress() noexcept;

// Marks the calling thread as inside `entry` of `backend` until the scope ends (nests: restores
// the previous mark).
class PluginCallScope {
 public:
  PluginCallScope(const char* backend, const char* entry) noexcept;
  ~PluginCallScope();
  PluginCallScope(const PluginCallScope&) = delete;
  PluginCallScope& operator=(const PluginCallScope&) = delete;

 private:
  PluginCall previous_;
};

// Throws RuntimeError "<context>: <plugin message>" when `status` is non-NULL; releases it.
void check_status(const co_up_plugin_api& api, co_up_status* status, const std::string& context);

// What check_status throws for CO_UP_STATUS_UNSUPPORTED: a valid request this backend cannot do,
// which the caller may answer by asking for less (compiled_create without io_memory).
class UnsupportedByPlugin : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// One loaded shared object and its factory.
class Plugin {
 public:
  // Takes ownership of the dlopen handle and factory.
  Plugin(std::string path, void* dl_handle, const co_up_plugin_api* api, co_up_factory* factory);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const co_up_plugin_api& api() const { return *api_; }
  co_up_factory* factory() const { return factory_; }
  const std::string& path() const { return path_; }
  std::string name() const { return api_->name; }
  // co_up_plugin_api.boundary_layouts where the plugin's table has it (ABI >= 1.2), else 0.
  uint32_t boundary_layouts() const;
  // co_up_plugin_api.external_io where the plugin's table has it (ABI >= 1.3), else 0.
  uint32_t external_io() const;

 private:
  std::string path_;
  void* dl_handle_;
  const co_up_plugin_api* api_;
  co_up_factory* factory_;
};

// A plugin's device for one processor letter.
class Device {
  struct Key {};  // only create() constructs, always into a shared_ptr

 public:
  Device(Key, std::shared_ptr<const Plugin> plugin, co_up_device* device)
      : plugin_(std::move(plugin)), device_(device) {}
  static std::shared_ptr<Device> create(std::shared_ptr<const Plugin> plugin,
                                        const std::vector<std::pair<std::string, std::string>>& options,
                                        const std::string& context);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Plugin& plugin() const { return *plugin_; }
  co_up_device* handle() const { return device_; }
  // device_query_node for node `node` of `desc`; the reason is NUL-terminated on return. Throws
  // RuntimeError "<context>: <plugin message>" when the query itself fails.
  co_up_node_support query_node(const co_up_subgraph_desc& desc, uint32_t node,
                                const std::string& context) const;

 private:
  std::shared_ptr<const Plugin> plugin_;
  co_up_device* device_;
};

// A sub-graph compiled by a device.
class CompiledSubGraph {
 public:
  CompiledSubGraph(std::shared_ptr<Device> device, const co_up_subgraph_desc& desc,
                   const std::string& context);
  ~CompiledSubGraph();
  CompiledSubGraph(const CompiledSubGraph&) = delete;
  CompiledSubGraph& operator=(const CompiledSubGraph&) = delete;

  void* map(co_up_io_direction direction, uint32_t index);
  void unmap(co_up_io_direction direction, uint32_t index);
  // False when the backend cannot read host memory directly (the caller then maps and copies).
  bool bind_input(uint32_t index, const void* host_ptr);
  void run(const co_up_run_hooks* hooks);

 private:
  const co_up_plugin_api& api() const { return device_->plugin().api(); }
  // check_status with "<context>: <what>"; throws when `status` is non-NULL.
  void check(co_up_status* status, const char* what) const;

  std::shared_ptr<Device> device_;
  co_up_compiled* compiled_ = nullptr;
  std::string context_;
};

}  // namespace co_up
