#include "core/plugin.h"

#include <dlfcn.h>

#include <cstddef>

#include "core/error.h"
#include "core/signal_dispositions.h"

namespace co_up {
namespace {

struct StatusReleaser {
  const co_up_plugin_api* api;
  void operator()(co_up_status* s) const { api->status_release(s); }
};

thread_local PluginCall t_plugin_call{nullptr, nullptr};

std::vector<co_up_option> to_c_options(
    const std::vector<std::pair<std::string, std::string>>& options) {
  std::vector<co_up_option> c_options;
  for (const auto& [key, value] : options) c_options.push_back({key.c_str(), value.c_str()});
  return c_options;
}

}  // namespace

PluginCall plugin_call_in_progress() noexcept { return t_plugin_call; }

PluginCallScope::PluginCallScope(const char* backend, const char* entry) noexcept
    : previous_(t_plugin_call) {
  t_plugin_call = {backend, entry};
}

PluginCallScope::~PluginCallScope() { t_plugin_call = previous_; }

void check_status(const co_up_plugin_api& api, co_up_status* status, const std::string& context) {
  if (status == nullptr) return;
  std::unique_ptr<co_up_status, StatusReleaser> owned(status, StatusReleaser{&api});
  const std::string message = owned->message != nullptr ? owned->message : "(no message)";
  if (owned->code == CO_UP_STATUS_UNSUPPORTED) throw UnsupportedByPlugin(context + ": " + message);
  throw RuntimeError(context + ": " + message);
}

Plugin::Plugin(std::string path, void* dl_handle, const co_up_plugin_api* api,
               co_up_factory* factory)
    : path_(std::move(path)), dl_handle_(dl_handle), api_(api), factory_(factory) {}

uint32_t Plugin::boundary_layouts() const {
  // Tables of ABI 1.0 and 1.1 end before the member (struct_size says how far this one goes).
  constexpr size_t kEnd = offsetof(co_up_plugin_api, boundary_layouts) + sizeof(uint32_t);
  return api_->struct_size >= kEnd ? api_->boundary_layouts : 0;
}

uint32_t Plugin::external_io() const {
  // Tables before ABI 1.3 end before the member.
  constexpr size_t kEnd = offsetof(co_up_plugin_api, external_io) + sizeof(uint32_t);
  return api_->struct_size >= kEnd ? api_->external_io : 0;
}

Plugin::~Plugin() {
  // factory_release and dlclose (static destructors) run plugin code; and a handler left pointing
  // into an unmapped library would crash on the next signal.
  const SignalDispositionGuard signals;
  const PluginCallScope scope(api_->name, "factory_release");
  if (factory_ != nullptr) api_->factory_release(factory_);
  if (dl_handle_ != nullptr) dlclose(dl_handle_);
}

std::shared_ptr<Device> Device::create(
    std::shared_ptr<const Plugin> plugin,
    const std::vector<std::pair<std::string, std::string>>& options, const std::string& context) {
  const std::vector<co_up_option> c_options = to_c_options(options);
  co_up_device* device = nullptr;
  const SignalDispositionGuard signals;
  const PluginCallScope scope(plugin->api().name, "device_create");
  check_status(plugin->api(),
               plugin->api().device_create(plugin->factory(), c_options.data(),
                                           static_cast<uint32_t>(c_options.size()), &device),
               context);
  return std::make_shared<Device>(Key{}, std::move(plugin), device);
}

Device::~Device() {
  const SignalDispositionGuard signals;
  const PluginCallScope scope(plugin_->api().name, "device_release");
  if (device_ != nullptr) plugin_->api().device_release(device_);
}

co_up_node_support Device::query_node(const co_up_subgraph_desc& desc, uint32_t node,
                                      const std::string& context) const {
  co_up_node_support support{};
  support.struct_size = sizeof(support);
  const PluginCallScope scope(plugin_->api().name, "device_query_node");
  check_status(plugin_->api(), plugin_->api().device_query_node(device_, &desc, node, &support),
               context);
  support.reason[sizeof(support.reason) - 1] = '\0';  // a plugin may fill all 256 bytes
  return support;
}

CompiledSubGraph::CompiledSubGraph(std::shared_ptr<Device> device, const co_up_subgraph_desc& desc,
                                   const std::string& context)
    : device_(std::move(device)), context_(context) {
  const SignalDispositionGuard signals;  // compilers (PoCL's LLVM) install handlers
  const PluginCallScope scope(api().name, "compiled_create");
  check(api().compiled_create(device_->handle(), &desc, &compiled_), "compile failed");
}

CompiledSubGraph::~CompiledSubGraph() {
  const SignalDispositionGuard signals;
  const PluginCallScope scope(api().name, "compiled_release");
  if (compiled_ != nullptr) api().compiled_release(compiled_);
}

void* CompiledSubGraph::map(co_up_io_direction direction, uint32_t index) {
  void* ptr = nullptr;
  const PluginCallScope scope(api().name, "compiled_map");
  check(api().compiled_map(compiled_, direction, index, &ptr), "map");
  return ptr;
}

void CompiledSubGraph::unmap(co_up_io_direction direction, uint32_t index) {
  const PluginCallScope scope(api().name, "compiled_unmap");
  check(api().compiled_unmap(compiled_, direction, index), "unmap");
}

bool CompiledSubGraph::bind_input(uint32_t index, const void* host_ptr) {
  if (api().compiled_bind_input == nullptr) return false;
  const PluginCallScope scope(api().name, "compiled_bind_input");
  co_up_status* status = api().compiled_bind_input(compiled_, index, host_ptr);
  if (status != nullptr && status->code == CO_UP_STATUS_UNSUPPORTED) {
    api().status_release(status);
    return false;
  }
  check(status, "bind input");
  return true;
}

void CompiledSubGraph::run(const co_up_run_hooks* hooks) {
  const PluginCallScope scope(api().name, "compiled_run");
  check(api().compiled_run(compiled_, hooks), "run");
}

// The message is built only on failure: run, map, unmap and bind_input are called on every
// sub-graph run, and building "<context>: <what>" there cost two allocations a call.
void CompiledSubGraph::check(co_up_status* status, const char* what) const {
  if (status != nullptr) check_status(api(), status, context_ + ": " + what);
}

}  // namespace co_up
