// Example: stream a directory of .npy frames through a co_up pipeline with the result callback,
// using only the public API (<co_up/co_up.hpp>, libco_up).
//
//   co_up_stream_npy NETWORK ORDER [DIR] [key=value ...]
//     NETWORK  a zoo name (alexnet, squeezenet, ...) or a path ending in .onnx
//     ORDER    one processor letter per layer unit, e.g. BBBLLLLL
//     DIR      float32 .npy files of the network's input shape, streamed in name order;
//              without it, 100 generated frames
//     key=value  any session option, named as co_up's command-line options (image-size=64, ...)
//
// Prints one line per frame (its number, file, top class) in submission order, then the
// throughput the profile measured.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <co_up/co_up.hpp>

namespace {

// A minimal reader for what numpy.save writes for a C-order float32 array ('<f4').
co_up::Tensor read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    throw std::runtime_error(path.string() + ": not an .npy file");
  }
  uint32_t header_size = 0;
  unsigned char size_bytes[4] = {};
  const int size_width = magic[6] == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(size_bytes), size_width);
  for (int i = size_width - 1; i >= 0; --i) header_size = header_size * 256 + size_bytes[i];
  std::string header(header_size, '\0');
  in.read(header.data(), header_size);
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") == std::string::npos) {
    throw std::runtime_error(path.string() + ": needs a C-order float32 ('<f4') array");
  }
  std::vector<int64_t> shape;
  const size_t open = header.find('(', header.find("'shape'"));
  const size_t close = header.find(')', open);
  std::string dims = header.substr(open + 1, close - open - 1);
  for (size_t pos = 0; pos < dims.size();) {
    const size_t comma = std::min(dims.find(',', pos), dims.size());
    const std::string dim = dims.substr(pos, comma - pos);
    if (dim.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(dim));
    pos = comma + 1;
  }
  co_up::Tensor tensor(shape);
  if (!in.read(reinterpret_cast<char*>(tensor.data()), static_cast<std::streamsize>(tensor.size() * sizeof(float)))) {
    throw std::runtime_error(path.string() + ": shorter than its shape says");
  }
  return tensor;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " NETWORK ORDER [DIR] [key=value ...]\n";
    return 2;
  }
  try {
    const std::string network = argv[1];
    co_up::SessionOptions options;
    options.set_order(argv[2]).set_mode(co_up::Mode::kPipeline).set_profile_level(1);
    std::string dir;
    for (int i = 3; i < argc; ++i) {
      const std::string arg = argv[i];
      const size_t eq = arg.find('=');
      if (eq == std::string::npos && dir.empty()) {
        dir = arg;
      } else if (eq != std::string::npos) {
        options.set(arg.substr(0, eq), arg.substr(eq + 1));
      }
    }
    const bool is_model = network.size() > 5 && network.substr(network.size() - 5) == ".onnx";
    co_up::Session session = is_model ? co_up::Session::open_model(network, options)
                                      : co_up::Session::open_zoo(network, options);
    const co_up::TensorInfo input = session.inputs().at(0);

    std::vector<std::filesystem::path> files;
    if (!dir.empty()) {
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() == ".npy") files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    }
    const size_t frames = files.empty() ? 100 : files.size();

    // Results arrive in submission order on a thread of the session; user_data carries the index.
    session.set_result_callback([&](co_up::Result r) {
      const auto index = reinterpret_cast<uintptr_t>(r.user_data);
      const std::span<const float> scores = r.outputs.at(0).values();
      const auto top = std::max_element(scores.begin(), scores.end()) - scores.begin();
      std::cout << "frame " << r.frame << "  "
                << (files.empty() ? "generated" : files[index].filename().string()) << "  class "
                << top << "  score " << scores[static_cast<size_t>(top)] << "\n";
    });
    for (size_t f = 0; f < frames; ++f) {
      co_up::Tensor frame = files.empty() ? co_up::Tensor(input.shape) : read_npy(files[f]);
      if (files.empty()) {
        for (size_t i = 0; i < frame.size(); ++i) frame.data()[i] = static_cast<float>((i * 7 + f) % 255) / 255.0f;
      }
      // Blocks while the pipeline's queue is full: the back-pressure keeps memory bounded.
      session.submit(std::move(frame), reinterpret_cast<void*>(static_cast<uintptr_t>(f)));
    }
    session.drain();
    const co_up::Profile profile = session.profile();
    std::cout << profile.frames_completed << " frames, " << profile.throughput_fps << " frames/s, order "
              << profile.order << "\n";
    for (const co_up::Profile::SubGraph& s : profile.subgraphs) {
      std::cout << "  sub-graph " << s.index << " on " << s.processor << " (" << s.backend << ", layers "
                << s.first_layer << "-" << s.last_layer << "): " << s.median_ms << " ms\n";
    }
    return 0;
  } catch (const co_up::Error& e) {
    std::cerr << "co_up: " << (e.kind() == co_up::ErrorKind::kInput ? "error: " : "failed: ") << e.what() << "\n";
    return e.kind() == co_up::ErrorKind::kInput ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "stream_npy: " << e.what() << "\n";
    return 1;
  }
}
