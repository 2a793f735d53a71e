// Shared set-up of the public API tests: a scratch directory holding a platform of two
// single-core CPU processors on one backend and a plugins directory with only that backend, the
// network every test runs, and the order that makes it a three-stage pipeline (B, L, B).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "co_up/co_up.hpp"
#include "tests/cli/scratch_dir.h"

namespace co_up::test {

// Small enough that 1,000 frames stream in seconds on cpu-reference.
inline constexpr const char* kNetwork = "squeezenet";
inline constexpr int64_t kImageSize = 32;

struct ApiWorld {
  ScratchDir scratch;
  std::filesystem::path platform;
  std::filesystem::path plugins;

  // `backend`: "cpu-reference" or "cpu-xnnpack"; `plugin_file`: its .so in the build tree.
  explicit ApiWorld(const std::string& backend = "cpu-reference",
                    const std::string& plugin_file = CO_UP_REFERENCE_PLUGIN) {
    platform = scratch.write("platform.json",
                             "{\"name\": \"api-test\", \"processors\": [\n"
                             "  {\"letter\": \"B\", \"kind\": \"cpu\", \"backend\": \"" + backend +
                                 "\", \"cores\": [0], \"threads\": 1},\n"
                             "  {\"letter\": \"L\", \"kind\": \"cpu\", \"backend\": \"" + backend +
                                 "\", \"cores\": [1], \"threads\": 1}]}\n");
    plugins = scratch / "plugins";
    std::filesystem::create_directories(plugins);
    std::filesystem::copy_file(plugin_file, plugins / std::filesystem::path(plugin_file).filename());
  }

  SessionOptions options(const std::string& order, Mode mode = Mode::kPipeline) const {
    SessionOptions o;
    o.set_platform_file(platform.string())
        .set_plugins_dir(plugins.string())
        .set_image_size(kImageSize)
        .set_order(order)
        .set_mode(mode);
    return o;
  }
};

// B for the first third of `layers`, L for the second, B again for the rest: three sub-graphs.
inline std::string three_stage_order(size_t layers) {
  std::string order(layers, 'B');
  for (size_t i = layers / 3; i < 2 * layers / 3; ++i) order[i] = 'L';
  return order;
}

// A deterministic input of `shape` in [-1, 1), different for each seed.
inline Tensor random_input(const std::vector<int64_t>& shape, uint32_t seed) {
  Tensor t(shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.values()) v = dist(rng);
  return t;
}

// .npy files (float32, C order, format 1.0) without co_up's internal reader: the API tests link
// libco_up only, so no second copy of co_up's libraries lands in the test process.
inline void write_npy(const std::filesystem::path& path, const Tensor& t) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int64_t d : t.shape()) header += std::to_string(d) + ", ";
  header += "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const auto size = static_cast<uint16_t>(header.size());
  const char size_bytes[2] = {static_cast<char>(size & 0xff), static_cast<char>(size >> 8)};
  out.write(size_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.size() * sizeof(float)));
  EXPECT_TRUE(out.good()) << "cannot write " << path;
}

inline Tensor read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[10] = {};
  in.read(magic, 10);
  const size_t header_size = static_cast<unsigned char>(magic[8]) + 256u * static_cast<unsigned char>(magic[9]);
  std::string header(header_size, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_size));
  EXPECT_NE(header.find("'<f4'"), std::string::npos) << path;
  std::vector<int64_t> shape;
  const size_t open = header.find('(');
  const std::string dims = header.substr(open + 1, header.find(')', open) - open - 1);
  for (size_t pos = 0; pos < dims.size();) {
    const size_t comma = std::min(dims.find(',', pos), dims.size());
    const std::string dim = dims.substr(pos, comma - pos);
    if (dim.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(dim));
    pos = comma + 1;
  }
  Tensor t(shape);
  in.read(reinterpret_cast<char*>(t.data()), static_cast<std::streamsize>(t.size() * sizeof(float)));
  EXPECT_TRUE(in.good()) << path << " is shorter than its shape";
  return t;
}

inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace co_up::test
