// Image input for classification networks: decode, resize, normalise to an NCHW float tensor; and
// the two helpers that turn the network's scores back into words (labels, top-k).
//
// Errors: functions throw co_up::InputError (core/error.h) for a missing, unreadable, corrupt or
// unsupported file and for invalid options; the message names the file and says what to do.
// Thread safety: all functions are reentrant (libpng and libjpeg state is per call).
#pragma once

#include <array>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace co_up::graph {

struct ImagePreprocess {
  int width = 224, height = 224;  // network input size in pixels, > 0
  // Per output-tensor channel (so with bgr = true, index 0 is blue), applied after scaling samples to
  // [0, 1]: out = (sample / max_sample - mean[c]) / std[c]. std entries must be non-zero.
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
  bool bgr = false;  // channel order of the output tensor; false = RGB
  // true: torchvision's Resize(size * 256 / 224) + CenterCrop(size). The image is scaled, keeping
  // its aspect ratio, until it covers width*256/224 x height*256/224 (for a square input: the
  // shorter side becomes 256 when size is 224), then the centre width x height is cut out.
  // false: the image is resized to width x height, ignoring its aspect ratio.
  bool resize_shorter_then_center_crop = true;
};

// Loads PPM (P6 and P3, maxval up to 65535), PNG (libpng: 1 to 16 bits, gray, gray+alpha, RGB,
// RGBA, palette; interlaced or not) or JPEG (libjpeg: gray, YCbCr, RGB), recognised by the first
// bytes of the file, not by its extension. Gray is replicated to RGB; alpha is dropped, not
// composited (as PIL's convert("RGB") does); 16-bit samples keep their precision; no gamma or ICC
// correction is applied. Resizing is bilinear (a triangle filter, widened when shrinking so that
// every source pixel contributes, as PIL's BILINEAR does; a plain half-pixel-centre bilinear
// interpolation when enlarging). Returns the tensor [1, 3, height, width] flat, in NCHW order.
// A JPEG that libjpeg only warns about (e.g. a truncated file) is rejected as corrupt.
std::vector<float> load_image_nchw(const std::filesystem::path& path, const ImagePreprocess& pre);

// One label per line, '\n' or "\r\n" line ends; line i is the label of class i. Blank lines inside the
// file are kept as empty labels (so that indices stay aligned), blank lines at the end are dropped.
// Throws InputError if the file is missing, unreadable or has no label.
std::vector<std::string> read_labels(const std::filesystem::path& path);

struct Prediction {
  int index;
  float score;
};

// The min(k, scores.size()) highest scores, highest first; equal scores by lower index first; NaN
// scores rank below all others. k <= 0 gives an empty result.
std::vector<Prediction> top_k(std::span<const float> scores, int k);

}  // namespace co_up::graph
