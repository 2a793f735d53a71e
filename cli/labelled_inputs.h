// Labelled input sets on the command line: --input=FILE.npy holding N inputs (a leading dimension
// of N where the network takes a batch of 1), --labels=FILE.npy holding one integer class per
// input, and the check of each frame's result against its label (frame f reads input f % N).
//
// A frame's result is the network's last graph output for a multi-exit network (the exit the frame
// stopped at), else its first; correct when its largest score is at the label's index.
// Errors: InputError, one line naming the option and the file.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up::cli {

using InputSets = std::vector<std::vector<std::vector<float>>>;

// True when --labels names a .npy file (labels of an input set), not class names.
bool is_npy_labels(const std::string& path);

// The graph output that is a frame's result (see above).
uint32_t result_output(const graph::Graph& graph);

// --input-scale=F or A/B: a positive factor every --input value is multiplied by (1/255 reads
// 8-bit images into [0, 1]). InputError otherwise.
float parse_input_scale(const std::string& value);
void scale_inputs(InputSets& sets, float scale);

// The N inputs of --input when the file holds a batch of them (shape [N, rest...] against the
// network's single input [1, rest...], N > 1, unit dimensions of rest ignored: [N, 28, 28] for
// [1, 1, 28, 28]); nullopt when `path` is empty or the file has
// another shape (the caller's reader then checks it as one input).
std::optional<InputSets> read_input_batch(const std::string& path, const graph::Graph& graph);

// Labels of --labels=FILE.npy: shape [N] or [N, 1], N = `inputs`, integers in [0, classes).
std::vector<int64_t> read_npy_labels(const std::string& path, size_t inputs, int64_t classes);

// Records, per frame, whether its result matched its label. on_output is safe to call from any
// processor thread.
class LabelCheck {
 public:
  LabelCheck(std::vector<int64_t> labels, uint32_t output) : labels_(std::move(labels)), output_(output) {}
  void on_output(uint64_t frame, uint32_t output, std::span<const float> values);
  // 1 (right) or 0 (wrong) for frames [0, frames); a frame never seen counts as wrong.
  std::vector<uint8_t> correct(uint64_t frames) const;

 private:
  std::vector<int64_t> labels_;
  uint32_t output_;
  mutable std::mutex mutex_;
  std::vector<uint8_t> correct_;
};

}  // namespace co_up::cli
