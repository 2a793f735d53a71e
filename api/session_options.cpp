#include <functional>
#include <map>
#include <utility>

#include "api/session_internal.h"
#include "core/cluster_split.h"
#include "core/error.h"
#include "core/exit_policy.h"
#include "core/option_value.h"
#include "graph/onnx/onnx_importer.h"

namespace co_up {
namespace {

// core/option_value.h: the same words as the command line.
int64_t parse_int(const std::string& name, const std::string& value, int64_t min, int64_t max) {
  return parse_int_option(name, value, min, max);
}

void check_not_empty(const std::string& name, const std::string& value) {
  if (value.empty()) throw InputError("--" + name + " needs a value");
}

bool parse_flag(const std::string& name, const std::string& value) {
  if (value == "1" || value == "true" || value.empty()) return true;
  if (value == "0" || value == "false") return false;
  throw InputError("--" + name + "='" + value + "' must be 1 or 0");
}

}  // namespace

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
  values_->mode = mode;
  return *this;
}
SessionOptions& SessionOptions::set_split(std::string split) {
  values_->split = std::move(split);
  return *this;
}
SessionOptions& SessionOptions::set_platform_file(std::string path) {
  values_->platform_file = std::move(path);
  return *this;
}
SessionOptions& SessionOptions::set_plugins_dir(std::string path) {
  values_->plugins_dir = std::move(path);
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
  values_->profile_level = level;
  return *this;
}
SessionOptions& SessionOptions::set_buffers(uint32_t buffers) {
  values_->buffers = buffers;
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
  values_->data_dir = std::move(path);
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
    Values& v = *values_;
    using Setter = std::function<void(const std::string&)>;
    auto to_int = [](int64_t x) { return static_cast<int>(x); };
    const std::map<std::string, Setter> setters = {
        {"order", [&](const std::string& s) { check_not_empty("order", s); v.order = s; }},
        {"mode", [&](const std::string& s) {
           if (s != "pipeline" && s != "switch") {
             throw InputError("unknown mode '" + s + "' (use --mode=pipeline or --mode=switch)");
           }
           v.mode = s == "pipeline" ? Mode::kPipeline : Mode::kSwitch;
         }},
        {"split", [&](const std::string& s) { check_not_empty("split", s); v.split = s; }},
        {"platform", [&](const std::string& s) { check_not_empty("platform", s); v.platform_file = s; }},
        {"plugins", [&](const std::string& s) { check_not_empty("plugins", s); v.plugins_dir = s; }},
        {"sysfs-root", [&](const std::string& s) { check_not_empty("sysfs-root", s); v.sysfs_root = s; }},
        {"frequency", [&](const std::string& s) { check_not_empty("frequency", s); v.frequency = s; }},
        {"dvfs", [&](const std::string& s) {
           if (s != "strict" && s != "best-effort") {
             throw InputError("--dvfs='" + s + "' must be 'strict' or 'best-effort'");
           }
           v.dvfs = s;
         }},
        {"profile", [&](const std::string& s) { v.profile_level = to_int(parse_int("profile", s, 0, 2)); }},
        {"buffers", [&](const std::string& s) { v.buffers = static_cast<uint32_t>(parse_int("buffers", s, 1, 64)); }},
        {"threads", [&](const std::string& s) { v.threads = to_int(parse_int("threads", s, 1, 1024)); }},
        {"cores", [&](const std::string& s) { v.cores = to_int(parse_int("cores", s, 1, 1024)); }},
        {"threads_little", [&](const std::string& s) { v.threads_little = to_int(parse_int("threads_little", s, 1, 1024)); }},
        {"cores_little", [&](const std::string& s) { v.cores_little = to_int(parse_int("cores_little", s, 1, 1024)); }},
        {"image-size", [&](const std::string& s) { v.image_size = parse_int("image-size", s, 1, 4096); }},
        {"seed", [&](const std::string& s) { v.seed = static_cast<uint64_t>(parse_int("seed", s, 0, INT64_MAX)); }},
        {"data", [&](const std::string& s) { check_not_empty("data", s); v.data_dir = s; }},
        {"units", [&](const std::string& s) {
           if (s != "layers" && s != "ops" && s != "branches") {
             throw InputError("--units='" + s + "' must be 'layers', 'ops' or 'branches'");
           }
           v.units = s;
         }},
        {"input-shape", [&](const std::string& s) { v.input_shape = graph::parse_input_shape(s); }},
        {"queue-capacity", [&](const std::string& s) {
           v.queue_capacity = static_cast<uint32_t>(parse_int("queue-capacity", s, 1, 1 << 20));
         }},
        {"host_gpu", [&](const std::string& s) { v.host_gpu = parse_cluster_option("host_gpu", s); }},
        {"host_npu", [&](const std::string& s) { v.host_npu = parse_cluster_option("host_npu", s); }},
        {"split-cluster", [&](const std::string& s) { v.split_cluster = parse_cluster_split(s, "--split-cluster"); }},
        {"npu_fallback", [&](const std::string& s) { v.npu_fallback = parse_processor_letter_option("npu_fallback", s); }},
        {"calibration", [&](const std::string& s) { v.calibration = parse_int("calibration", s, 1, 1000000); }},
        {"exit", [&](const std::string& s) { ExitPolicy::parse(s); v.exit = s; }},
        {"exits", [&](const std::string& s) { check_not_empty("exits", s); v.exits = s; }},
        {"stages", [&](const std::string& s) { check_not_empty("stages", s); v.stages = s; }},
        {"stage-plan", [&](const std::string& s) { check_not_empty("stage-plan", s); v.stage_plan = s; }},
        {"state-dir", [&](const std::string& s) { check_not_empty("state-dir", s); v.state_dir = s; }},
        {"gpio-tags", [&](const std::string& s) { check_not_empty("gpio-tags", s); v.gpio_tags = s; }},
        {"power", [&](const std::string& s) { v.power = parse_flag("power", s); }},
        {"power-rate", [&](const std::string& s) {
           v.power_rate = static_cast<double>(parse_int("power-rate", s, 1, 100000));
         }},
    };
    // The meter's alignment table is printed by the command line (which sets these values
    // itself); nothing of it reaches a Session's profile, so the API does not open the device.
    if (key == "meter" || key == "meter-log" || key == "meter-window") {
      throw InputError("--" + key + " is command-line only (the meter's report is printed by co_up; a "
                       "Session does not expose it)");
    }
    const auto it = setters.find(key);
    if (it == setters.end()) {
      std::string known;
      for (const auto& [name, setter] : setters) known += (known.empty() ? "" : ", ") + name;
      throw InputError("unknown session option '" + key + "' (known: " + known + ")");
    }
    it->second(value);
  });
  return *this;
}

}  // namespace co_up
