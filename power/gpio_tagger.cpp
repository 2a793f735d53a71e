#include "power/gpio_tagger.h"

#include <gpiod.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "profiler/events.h"

namespace co_up::power {

void RecordingTagSink::set(unsigned value) {
  if (forward_ != nullptr) forward_->set(value);
  const int64_t t = profiler::now_ns();
  std::lock_guard lock(mutex_);
  edges_.push_back({t, value});
}

std::vector<RecordingTagSink::Edge> RecordingTagSink::edges() const {
  std::lock_guard lock(mutex_);
  return edges_;
}

struct GpiodTagSink::Lines {
  gpiod_line_bulk bulk;
};

GpiodTagSink::GpiodTagSink(const GpioSpec& spec) : lines_(std::make_unique<Lines>()) {
  errno = 0;
  chip_ = gpiod_chip_open_lookup(spec.chip.c_str());
  if (chip_ == nullptr) {
    const int err = errno != 0 ? errno : ENOENT;
    const char* name = strerrorname_np(err);
    throw InputError("cannot open GPIO chip '" + spec.chip + "': " + (name ? name : "E?") + " (" +
                     std::strerror(err) +
                     "); check \"gpio\".\"chip\" in the platform file, or run without --gpio-tags");
  }
  count_ = spec.lines.size();
  if (gpiod_chip_get_lines(chip_, const_cast<unsigned*>(spec.lines.data()),
                           static_cast<unsigned>(count_), &lines_->bulk) != 0) {
    const int err = errno;
    gpiod_chip_close(chip_);
    throw InputError("GPIO chip '" + spec.chip + "' has no line(s) as listed in \"gpio\".\"lines\": " +
                     std::strerror(err));
  }
  std::vector<int> zeros(count_, 0);
  if (gpiod_line_request_bulk_output(&lines_->bulk, "co_up", zeros.data()) != 0) {
    const int err = errno;
    gpiod_chip_close(chip_);
    throw RuntimeError("cannot request GPIO lines of '" + spec.chip + "' as outputs: " +
                       std::strerror(err) + " (busy, or run as root)");
  }
}

GpiodTagSink::~GpiodTagSink() {
  set(0);
  gpiod_line_release_bulk(&lines_->bulk);
  gpiod_chip_close(chip_);
}

void GpiodTagSink::set(unsigned value) {
  int values[GPIOD_LINE_BULK_MAX_LINES];
  for (size_t i = 0; i < count_; ++i) values[i] = (value >> i) & 1u;
  gpiod_line_set_value_bulk(&lines_->bulk, values);
}

std::optional<std::set<uint32_t>> parse_layer_filter(const std::string& text) {
  if (text.empty() || text == "all") return std::nullopt;
  std::set<uint32_t> layers;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    const auto dash = part.find('-');
    try {
      size_t used = 0;
      const unsigned long first = std::stoul(part.substr(0, dash), &used);
      if (used != part.substr(0, dash).size()) throw std::invalid_argument(part);
      unsigned long last = first;
      if (dash != std::string::npos) {
        last = std::stoul(part.substr(dash + 1), &used);
        if (used != part.substr(dash + 1).size() || last < first) throw std::invalid_argument(part);
      }
      for (unsigned long l = first; l <= last && l < 100000; ++l) layers.insert(static_cast<uint32_t>(l));
    } catch (const std::exception&) {
      throw InputError("--gpio-tags='" + text + "': '" + part +
                       "' is not a layer index or range (e.g. all, 0,3,5-7)");
    }
  }
  return layers;
}

GpioTagger::GpioTagger(TagSink& sink, const GpioSpec& spec, std::optional<std::set<uint32_t>> layers)
    : sink_(sink),
      code_(spec.mode == "code"),
      mask_(spec.lines.size() >= 32 ? ~0u : (1u << spec.lines.size()) - 1),
      layers_(std::move(layers)) {}

void GpioTagger::on_layer_begin(char, uint32_t layer, uint64_t) {
  if (!wanted(layer)) return;
  std::lock_guard lock(mutex_);
  sink_.set(code_ ? (layer + 1) & mask_ : 1u);
}

void GpioTagger::on_layer_end(char, uint32_t layer, uint64_t) {
  if (!wanted(layer)) return;
  std::lock_guard lock(mutex_);
  sink_.set(0);
}

}  // namespace co_up::power
