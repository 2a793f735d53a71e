#include "graph/onnx/preprocess.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/input_file.h"
#include "core/json_input.h"

namespace co_up::graph {

ImagePreprocess read_preprocess_json(const std::filesystem::path& path, ImagePreprocess pre) {
  const std::string where = "--preprocess '" + path.string() + "'";
  const nlohmann::json j =
      parse_json(io::read_input_file(path, "--preprocess file", io::kMaxConfigBytes), where);
  if (!j.is_object()) throw InputError(where + ": expected a JSON object");
  auto triple = [&](const char* key, std::array<float, 3>& out, bool nonzero) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j[key];
    if (!v.is_array() || v.size() != 3) throw InputError(where + ": \"" + key + "\" must be 3 numbers");
    for (size_t c = 0; c < 3; ++c) {
      // Pixel statistics: |value| <= 1e6 keeps them finite as floats.
      out[c] = static_cast<float>(
          json_number(v[c], json_index(where + ": \"" + key + "\"", c), -1e6, 1e6, "a pixel statistic"));
      if (nonzero && std::abs(out[c]) < 1e-6f) {
        throw InputError(where + ": \"" + key + "\" values must be non-zero (at least 1e-6 in size)");
      }
    }
  };
  triple("mean", pre.mean, false);
  triple("std", pre.std, true);
  if (j.contains("layout")) {
    const nlohmann::json& v = j["layout"];
    if (v == "RGB") pre.bgr = false;
    else if (v == "BGR") pre.bgr = true;
    else throw InputError(where + ": \"layout\" must be \"RGB\" or \"BGR\"");
  }
  if (j.contains("resize")) {
    const nlohmann::json& v = j["resize"];
    if (v == "shorter-then-crop") pre.resize_shorter_then_center_crop = true;
    else if (v == "stretch") pre.resize_shorter_then_center_crop = false;
    else throw InputError(where + ": \"resize\" must be \"shorter-then-crop\" or \"stretch\"");
  }
  if (j.contains("size")) {
    const nlohmann::json& v = j["size"];
    int height = 0, width = 0;
    const std::string size = where + ": \"size\"";
    constexpr int64_t kMaxSide = 1 << 20;
    if (v.is_number()) {
      height = width = static_cast<int>(json_integer(v, size, 1, kMaxSide, "an image side in pixels"));
    } else if (v.is_array() && v.size() == 2) {
      height = static_cast<int>(json_integer(v[0], json_index(size, 0), 1, kMaxSide, "an image height in pixels"));
      width = static_cast<int>(json_integer(v[1], json_index(size, 1), 1, kMaxSide, "an image width in pixels"));
    } else {
      throw InputError(where + ": \"size\" must be a number or [height, width]");
    }
    if (height != pre.height || width != pre.width) {
      throw InputError(where + ": \"size\" " + std::to_string(height) + "x" + std::to_string(width) +
                       " differs from the network input " + std::to_string(pre.height) + "x" +
                       std::to_string(pre.width));
    }
  }
  return pre;
}

}  // namespace co_up::graph
