#include "cli/labelled_inputs.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>

#include "core/error.h"
#include "graph/npy.h"

namespace co_up::cli {

bool is_npy_labels(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
}

namespace {

// An input's dimensions after the leading batch one, unit dimensions dropped: a set of images
// [N, 28, 28] feeds a network input [1, 1, 28, 28] (how datasets store single-channel images).
std::vector<int64_t> squeezed(const std::vector<int64_t>& shape) {
  std::vector<int64_t> dims;
  for (size_t i = 1; i < shape.size(); ++i) {
    if (shape[i] != 1) dims.push_back(shape[i]);
  }
  return dims;
}

}  // namespace

float parse_input_scale(const std::string& value) {
  // F or A/B (1/255: 8-bit pixels to [0, 1]); finite and positive.
  const auto number = [&value](const std::string& text) {
    size_t used = 0;
    float v = 0;
    try {
      v = std::stof(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (text.empty() || used != text.size() || !std::isfinite(v) || !(v > 0)) {
      throw InputError("--input-scale='" + value + "' must be a positive number or a fraction A/B (e.g. 1/255)");
    }
    return v;
  };
  const size_t slash = value.find('/');
  if (slash == std::string::npos) return number(value);
  return number(value.substr(0, slash)) / number(value.substr(slash + 1));
}

void scale_inputs(InputSets& sets, float scale) {
  for (auto& set : sets) {
    for (auto& tensor : set) {
      for (float& v : tensor) v *= scale;
    }
  }
}

uint32_t result_output(const graph::Graph& graph) {
  return graph.has_exits() ? static_cast<uint32_t>(graph.outputs().size() - 1) : 0;
}

std::optional<InputSets> read_input_batch(const std::string& path, const graph::Graph& graph) {
  if (path.empty() || graph.inputs().size() != 1) return std::nullopt;
  const std::vector<int64_t>& shape = graph.tensor(graph.inputs()[0]).desc.shape;
  graph::NpyArray array = graph::read_npy(path);
  if (shape.empty() || shape[0] != 1 || array.shape.size() < 2 || array.shape[0] < 2 ||
      squeezed(shape) != squeezed(array.shape)) {
    return std::nullopt;
  }
  const auto per_input = array.data.size() / static_cast<size_t>(array.shape[0]);
  InputSets sets;
  for (size_t i = 0; i < static_cast<size_t>(array.shape[0]); ++i) {
    const auto first = array.data.begin() + static_cast<std::ptrdiff_t>(i * per_input);
    sets.push_back({std::vector<float>(first, first + static_cast<std::ptrdiff_t>(per_input))});
  }
  return sets;
}

std::vector<int64_t> read_npy_labels(const std::string& path, size_t inputs, int64_t classes) {
  const graph::NpyArray array = graph::read_npy(path);
  const bool column = array.shape.size() == 2 && array.shape[1] == 1;
  if (array.shape.size() != 1 && !column) {
    throw InputError("--labels '" + path + "' must hold one label per input (shape [N] or [N, 1])");
  }
  if (array.data.size() != inputs) {
    throw InputError("--labels '" + path + "' has " + std::to_string(array.data.size()) +
                     " labels but --input gives " + std::to_string(inputs) +
                     " input(s); give one label per input, in the same order");
  }
  std::vector<int64_t> labels;
  for (size_t i = 0; i < array.data.size(); ++i) {
    const float v = array.data[i];
    if (!(v >= 0 && v < static_cast<float>(classes)) || std::floor(v) != v) {
      throw InputError("--labels '" + path + "': label " + std::to_string(i) + " is " +
                       std::to_string(v) + ", not a class index of the network (0.." +
                       std::to_string(classes - 1) + ")");
    }
    labels.push_back(static_cast<int64_t>(v));
  }
  return labels;
}

void LabelCheck::on_output(uint64_t frame, uint32_t output, std::span<const float> values) {
  if (output != output_ || values.empty() || labels_.empty()) return;
  const auto top = static_cast<int64_t>(std::max_element(values.begin(), values.end()) - values.begin());
  const bool right = top == labels_[frame % labels_.size()];
  std::lock_guard lock(mutex_);
  if (correct_.size() <= frame) correct_.resize(frame + 1, 0);
  correct_[frame] = right ? 1 : 0;
}

std::vector<uint8_t> LabelCheck::correct(uint64_t frames) const {
  std::lock_guard lock(mutex_);
  std::vector<uint8_t> result(correct_.begin(), correct_.end());
  result.resize(frames, 0);  // frames past the last seen count as wrong; frames beyond are cut
  return result;
}

}  // namespace co_up::cli
