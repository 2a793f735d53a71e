#include "core/plugin_registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <utility>

#include "core/elf_check.h"
#include "core/error.h"
#include "core/signal_dispositions.h"

namespace co_up {

const char* outcome_name(PluginRecord::Outcome outcome) {
  switch (outcome) {
    case PluginRecord::Outcome::kLoaded: return "loaded";
    case PluginRecord::Outcome::kDeclined: return "declined";
    case PluginRecord::Outcome::kRefused: return "refused";
  }
  return "?";
}

namespace {

#ifdef CO_UP_KEEP_PLUGINS_MAPPED
// Sanitizer builds keep plugins mapped after dlclose, so that LeakSanitizer can still name the
// library behind a one-time allocation (XNNPACK, PoCL, ...) and its suppressions can match it.
constexpr int kDlopenExtraFlags = RTLD_NODELETE;
#else
constexpr int kDlopenExtraFlags = 0;
#endif

struct DlCloser {
  void operator()(void* handle) const { dlclose(handle); }
};
using DlHandle = std::unique_ptr<void, DlCloser>;

std::string abi_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// Names of the required 1.0 entries that are NULL, comma-separated ("" when none is).
std::string missing_entries(const co_up_plugin_api& api) {
  const std::pair<const char*, bool> required[] = {
      {"status_release", api.status_release != nullptr},
      {"factory_create", api.factory_create != nullptr},
      {"factory_release", api.factory_release != nullptr},
      {"device_create", api.device_create != nullptr},
      {"device_release", api.device_release != nullptr},
      {"device_query_node", api.device_query_node != nullptr},
      {"compiled_create", api.compiled_create != nullptr},
      {"compiled_release", api.compiled_release != nullptr},
      {"compiled_map", api.compiled_map != nullptr},
      {"compiled_unmap", api.compiled_unmap != nullptr},
      {"compiled_run", api.compiled_run != nullptr},
  };
  std::string missing;
  for (const auto& [name, present] : required) {
    if (!present) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  return missing;
}

// Loads one file that passed check_plugin_file(); fills `record`; returns the plugin when it
// loaded.
std::shared_ptr<const Plugin> load_one(const std::filesystem::path& path, PluginRecord& record) {
  dlerror();
  // Until the table names the backend, a crash report names the file.
  const std::string file = path.filename().string();
  DlHandle handle;
  {
    const PluginCallScope scope(file.c_str(), "dlopen (its static initialisers)");
    handle.reset(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kDlopenExtraFlags));
  }
  if (!handle) {
    const char* err = dlerror();
    record.reason = std::string("dlopen failed: ") + (err ? err : "unknown error");
    return nullptr;
  }
  auto get_api = reinterpret_cast<co_up_plugin_get_api_fn>(
      dlsym(handle.get(), CO_UP_PLUGIN_ENTRY_POINT));
  if (get_api == nullptr) {
    record.reason = std::string("not a co_up plugin: no symbol '") + CO_UP_PLUGIN_ENTRY_POINT + "'";
    return nullptr;
  }
  const co_up_plugin_api* api = nullptr;
  {
    const PluginCallScope scope(file.c_str(), CO_UP_PLUGIN_ENTRY_POINT);
    api = get_api(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR);
  }
  if (api == nullptr) {
    record.reason = "the plugin does not support co_up ABI " +
                    abi_string(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR) +
                    " (rebuild it against this co_up's SDK)";
    return nullptr;
  }
  // ABI 1.0's table ends with compiled_run; later minors only append.
  if (api->struct_size < offsetof(co_up_plugin_api, compiled_run) + sizeof(api->compiled_run)) {
    record.reason = "the plugin's function table is truncated (struct_size " +
                    std::to_string(api->struct_size) + ")";
    return nullptr;
  }
  if (api->abi_major != CO_UP_ABI_VERSION_MAJOR) {
    record.reason = "built for co_up ABI " + abi_string(api->abi_major, api->abi_minor) +
                    ", this co_up speaks " +
                    abi_string(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR) +
                    " (majors must match; rebuild the plugin)";
    return nullptr;
  }
  // A newer minor is fine: minors only append, this host reads the 1.0 prefix it knows, and the
  // plugin saw this host's minor in co_up_plugin_get_api, so it relies on nothing newer.
  if (api->name == nullptr || *api->name == '\0') {
    record.reason = "the plugin's function table has no backend name";
    return nullptr;
  }
  if (const std::string missing = missing_entries(*api); !missing.empty()) {
    record.backend = api->name;
    record.reason = "the plugin's function table lacks " + missing +
                    " (NULL; every entry but compiled_bind_input is required)";
    return nullptr;
  }
  record.backend = api->name;
  record.version = api->version != nullptr ? api->version : "";
  record.description = api->description != nullptr ? api->description : "";

  co_up_factory* factory = nullptr;
  co_up_status* status = nullptr;
  {
    const PluginCallScope scope(api->name, "factory_create");
    status = api->factory_create(nullptr, 0, &factory);
  }
  if (status != nullptr) {
    record.outcome = status->code == CO_UP_STATUS_NO_DEVICE ? PluginRecord::Outcome::kDeclined
                                                            : PluginRecord::Outcome::kRefused;
    const std::string message = status->message != nullptr ? status->message : "(no message)";
    // A decline is the plugin's own explanation; any other failure is an init error.
    record.reason = status->code == CO_UP_STATUS_NO_DEVICE ? message
                                                           : "factory_create failed: " + message;
    api->status_release(status);
    return nullptr;
  }
  record.outcome = PluginRecord::Outcome::kLoaded;
  return std::make_shared<const Plugin>(path.string(), handle.release(), api, factory);
}

}  // namespace

PluginRegistry PluginRegistry::load_directory(const std::filesystem::path& directory) {
  PluginRegistry registry;
  registry.directory_ = directory;
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) return registry;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    if (entry.path().extension() == ".so") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    PluginRecord record;
    record.path = file;
    // What dlopen cannot survive (a truncated file: SIGBUS inside the loader) or would block on
    // (a FIFO) is refused before dlopen sees it.
    std::string refusal = check_plugin_file(file);
    std::shared_ptr<const Plugin> plugin;
    if (refusal.empty()) {
      SignalDispositionGuard signals;  // dlopen, get_api and factory_create run plugin code
      plugin = load_one(file, record);
      record.restored_signals = signals.finish();
    } else {
      record.reason = std::move(refusal);
    }
    if (plugin && registry.find(plugin->name())) {
      record.outcome = PluginRecord::Outcome::kRefused;
      record.reason = "backend '" + plugin->name() + "' is already provided by an earlier file";
      plugin.reset();
    }
    if (plugin) registry.plugins_.push_back(std::move(plugin));
    registry.records_.push_back(std::move(record));
  }
  return registry;
}

std::filesystem::path PluginRegistry::default_directory() {
  if (const char* env = std::getenv("CO_UP_PLUGIN_PATH"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "plugins";
  // A build tree keeps plugins/ next to the binary. An installed tree keeps them under lib/ (bin/
  // holds executables only), at a path relative to bin/ that cmake/install.cmake fixes, so the
  // install prefix can still change at install time.
  const std::filesystem::path beside = exe.parent_path() / "plugins";
#ifdef CO_UP_INSTALLED_PLUGIN_DIR
  if (!std::filesystem::is_directory(beside, ec)) {
    const std::filesystem::path installed =
        (exe.parent_path() / CO_UP_INSTALLED_PLUGIN_DIR).lexically_normal();
    if (std::filesystem::is_directory(installed, ec)) return installed;
  }
#endif
  return beside;
}

std::shared_ptr<const Plugin> PluginRegistry::find(const std::string& backend) const {
  for (const auto& plugin : plugins_) {
    if (plugin->name() == backend) return plugin;
  }
  return nullptr;
}

std::string PluginRegistry::summary() const {
  if (records_.empty()) return "no plugin files in '" + directory_.string() + "'";
  std::string text;
  for (const PluginRecord& r : records_) {
    if (!text.empty()) text += "; ";
    text += (r.backend.empty() ? r.path.filename().string() : r.backend) + " " +
            outcome_name(r.outcome);
    if (!r.reason.empty()) text += " (" + r.reason + ")";
  }
  return text;
}

}  // namespace co_up
