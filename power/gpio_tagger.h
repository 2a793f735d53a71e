// GPIO layer tags (ARM-CO-UP §4.2): an external power meter sees which layer runs.
//
//   edge mode: one line, high from a layer's start to its end (rising edge = start).
//   code mode: lines[i] carries bit i of (layer index + 1) during the layer, 0 between layers.
// Optionally only chosen layers are tagged. TagSink is where the value goes: GpiodTagSink drives
// real lines through libgpiod (v1 API); RecordingTagSink keeps (time, value) for tests.
//
// Threading: observer calls come from several processor threads in pipeline mode; the tagger
// serialises them with a mutex (the lines are one shared resource). Sinks are called under it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/layer_observer.h"
#include "core/platform.h"

struct gpiod_chip;

namespace co_up::power {

class TagSink {
 public:
  virtual ~TagSink() = default;
  // Drives the lines to `value` (bit i -> line i). Must not throw.
  virtual void set(unsigned value) = 0;
};

// Keeps (time, value) of every set(): for tests, and for aligning an external meter's log
// (power/meter_alignment.h) when it forwards to the real lines. The time is taken after the
// forward sink returned, i.e. once the lines hold the value.
class RecordingTagSink : public TagSink {
 public:
  struct Edge {
    int64_t t_ns;
    unsigned value;
  };
  explicit RecordingTagSink(TagSink* forward = nullptr) : forward_(forward) { edges_.reserve(4096); }
  void set(unsigned value) override;
  std::vector<Edge> edges() const;

 private:
  TagSink* forward_;
  mutable std::mutex mutex_;
  std::vector<Edge> edges_;
};

// Opens the chip and requests the lines as outputs, low. Throws InputError when the chip is
// missing ("cannot open GPIO chip 'gpiochip9': ENOENT ...") or RuntimeError when the lines
// cannot be requested (busy, permission). Releases the lines (low) on destruction.
class GpiodTagSink : public TagSink {
 public:
  explicit GpiodTagSink(const GpioSpec& spec);
  ~GpiodTagSink() override;
  GpiodTagSink(const GpiodTagSink&) = delete;
  GpiodTagSink& operator=(const GpiodTagSink&) = delete;
  void set(unsigned value) override;

 private:
  struct Lines;
  gpiod_chip* chip_ = nullptr;
  std::unique_ptr<Lines> lines_;
  size_t count_ = 0;
};

// "all" -> nullopt (every layer); "0,3,5-7" -> those layers. Throws InputError.
std::optional<std::set<uint32_t>> parse_layer_filter(const std::string& text);

class GpioTagger : public LayerObserver {
 public:
  GpioTagger(TagSink& sink, const GpioSpec& spec, std::optional<std::set<uint32_t>> layers);
  void on_layer_begin(char processor, uint32_t layer, uint64_t frame) override;
  void on_layer_end(char processor, uint32_t layer, uint64_t frame) override;

 private:
  bool wanted(uint32_t layer) const { return !layers_ || layers_->count(layer) != 0; }
  TagSink& sink_;
  bool code_;
  unsigned mask_;
  std::optional<std::set<uint32_t>> layers_;
  std::mutex mutex_;
};

}  // namespace co_up::power
