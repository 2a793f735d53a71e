#include <algorithm>
#include <utility>

#include "api/run_options.h"
#include "api/session_internal.h"
#include "core/error.h"
#include "core/mapping.h"

namespace co_up {

SessionOptions::SessionOptions() : values_(std::make_unique<Values>()) {}
SessionOptions::~SessionOptions() = default;
SessionOptions::SessionOptions(const SessionOptions& other)
    : values_(std::make_unique<Values>(*other.values_)) {}
SessionOptions& SessionOptions::operator=(const SessionOptions& other) {
  if (this != &other) values_ = std::make_unique<Values>(*other.values_);
  return *this;
}
// A moved-from SessionOptions holds the defaults again, so it stays usable.
SessionOptions::SessionOptions(SessionOptions&& other) noexcept
    : values_(std::exchange(other.values_, nullptr)) {
  try {
    other.values_ = std::make_unique<Values>();
  } catch (...) {
  }
}
SessionOptions& SessionOptions::operator=(SessionOptions&& other) noexcept {
  if (this != &other) std::swap(values_, other.values_);
  return *this;
}

SessionOptions& SessionOptions::set_order(std::string order) {
  values_->order = std::move(order);
  return *this;
}
SessionOptions& SessionOptions::set_mode(Mode mode) {
  values_->mode = mode_name(mode);
  return *this;
}
SessionOptions& SessionOptions::set_split(std::string split) {
  values_->split = std::move(split);
  return *this;
}
SessionOptions& SessionOptions::set_platform_file(std::string path) {
  values_->platform = std::move(path);
  return *this;
}
SessionOptions& SessionOptions::set_plugins_dir(std::string path) {
  values_->plugins = std::move(path);
  return *this;
}
SessionOptions& SessionOptions::set_sysfs_root(std::string path) {
  values_->sysfs_root = std::move(path);
  return *this;
}
SessionOptions& SessionOptions::set_frequency(std::string levels) {
  values_->frequency = std::move(levels);
  return *this;
}
SessionOptions& SessionOptions::set_dvfs_policy(std::string policy) {
  values_->dvfs = std::move(policy);
  return *this;
}
SessionOptions& SessionOptions::set_profile_level(int level) {
  values_->profile = level;
  return *this;
}
SessionOptions& SessionOptions::set_buffers(uint32_t buffers) {
  values_->buffers = buffers;
  return *this;
}
SessionOptions& SessionOptions::set_share_boundaries(bool share) {
  values_->share_boundaries = share;
  return *this;
}
SessionOptions& SessionOptions::set_threads(int big, int little) {
  values_->threads = big > 0 ? std::optional<int>(big) : std::nullopt;
  values_->threads_little = little > 0 ? std::optional<int>(little) : std::nullopt;
  return *this;
}
SessionOptions& SessionOptions::set_cores(int big, int little) {
  values_->cores = big > 0 ? std::optional<int>(big) : std::nullopt;
  values_->cores_little = little > 0 ? std::optional<int>(little) : std::nullopt;
  return *this;
}
SessionOptions& SessionOptions::set_image_size(int64_t size) {
  values_->image_size = size;
  return *this;
}
SessionOptions& SessionOptions::set_seed(uint64_t seed) {
  values_->seed = seed;
  return *this;
}
SessionOptions& SessionOptions::set_data_dir(std::string path) {
  values_->data = std::move(path);
  return *this;
}
SessionOptions& SessionOptions::set_units(std::string units) {
  values_->units = std::move(units);
  return *this;
}
SessionOptions& SessionOptions::set_input_shape(std::vector<int64_t> shape) {
  values_->input_shape = std::move(shape);
  return *this;
}
SessionOptions& SessionOptions::set_queue_capacity(uint32_t frames) {
  values_->queue_capacity = frames;
  return *this;
}

SessionOptions& SessionOptions::set(const std::string& key, const std::string& value) {
  api::translate_errors([&] {
    const RunOption* option = find_run_option(key);
    if (option != nullptr && option->scope == RunOptionScope::kCommandLine) {
      throw InputError("--" + key + " is command-line only (the meter's report is printed by co_up; a "
                       "Session does not expose it)");
    }
    if (option == nullptr) {
      std::vector<std::string> names;
      for (const RunOption& o : run_options()) {
        if (o.scope != RunOptionScope::kCommandLine) names.emplace_back(o.name);
      }
      std::sort(names.begin(), names.end());
      std::string known;
      for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
      throw InputError("unknown session option '" + key + "' (known: " + known + ")");
    }
    // The command line refuses every empty value itself; here a text option names what is missing.
    if (option->kind == RunOptionKind::kText && value.empty()) throw InputError("--" + key + " needs a value");
    // The command line checks --mode when the run opens (after --order); the API at once.
    if (key == "mode") parse_mode(value);
    option->parse(*values_, value);
  });
  return *this;
}

std::vector<SessionOptions::Key> SessionOptions::known() {
  std::vector<Key> keys;
  for (const RunOption& o : run_options()) {
    keys.push_back({std::string(o.name), std::string(o.keyword), std::string(o.help),
                    o.kind == RunOptionKind::kFlag, o.scope == RunOptionScope::kCommandLine});
  }
  return keys;
}

}  // namespace co_up
