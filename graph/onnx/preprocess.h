// Image preprocessing from a small JSON file (--preprocess=FILE.json with --image), so that a
// model's expected input (channel order, normalisation, resizing) is data, not code:
//
//   {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
//    "layout": "RGB",                 // or "BGR": channel order of the tensor
//    "resize": "shorter-then-crop",   // torchvision Resize(size*256/224)+CenterCrop; or "stretch"
//    "size": [224, 224]}              // optional [height, width] (or one number); must match the
//                                     // model's input when given
// mean/std apply per tensor channel after scaling samples to [0, 1]: (x - mean) / std. Every key is
// optional; missing ones keep `defaults`.
#pragma once

#include <filesystem>

#include "graph/image.h"

namespace co_up::graph {

// Throws InputError naming the file and the key for an unreadable file, malformed JSON, a value
// of the wrong type or range (std must be non-zero), or a size differing from height x width.
ImagePreprocess read_preprocess_json(const std::filesystem::path& path, ImagePreprocess defaults);

}  // namespace co_up::graph
