#include "graph/onnx/preprocess.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/input_file.h"

namespace co_up::graph {

ImagePreprocess read_preprocess_json(const std::filesystem::path& path, ImagePreprocess pre) {
  const std::string where = "--preprocess '" + path.string() + "'";
  const std::string text = io::read_input_file(path, "--preprocess file", io::kMaxConfigBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object()) throw InputError(where + ": expected a JSON object");
  auto triple = [&](const char* key, std::array<float, 3>& out, bool nonzero) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j[key];
    if (!v.is_array() || v.size() != 3) throw InputError(where + ": \"" + key + "\" must be 3 numbers");
    for (size_t c = 0; c < 3; ++c) {
      if (!v[c].is_number()) throw InputError(where + ": \"" + key + "\" must be 3 numbers");
      out[c] = v[c].get<float>();
      if (nonzero && out[c] == 0.0f) throw InputError(where + ": \"" + key + "\" values must be non-zero");
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
    if (v.is_number_integer()) {
      height = width = v.get<int>();
    } else if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer()) {
      height = v[0].get<int>();
      width = v[1].get<int>();
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
