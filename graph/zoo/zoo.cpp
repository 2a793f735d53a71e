#include "graph/zoo/zoo.h"

#include "core/error.h"

namespace co_up::graph {
namespace {

// Preprocessing, per output-tensor channel after scaling samples to [0, 1] (graph/image.h):
//  - Caffe models (AlexNet, GoogLeNet, SqueezeNet): BGR, minus the ImageNet mean (104, 117, 123)
//    on the 0..255 scale, no scaling: mean = m / 255, std = 1 / 255 gives 255 * x - m.
//  - MobileNet (TF-slim weights, as ARM-CL runs it): RGB scaled to [-1, 1]: mean 0.5, std 0.5.
//  - ResNet50 and Inception-v3 (torchvision layouts): RGB with torchvision's ImageNet statistics.
constexpr float kCaffeStd = 1.0f / 255.0f;

ZooEntry caffe_entry(std::string name, std::string description, int64_t size, uint32_t layers) {
  return ZooEntry{std::move(name),
                  std::move(description),
                  size,
                  layers,
                  /*bgr=*/true,
                  {104.0f / 255.0f, 117.0f / 255.0f, 123.0f / 255.0f},
                  {kCaffeStd, kCaffeStd, kCaffeStd}};
}

}  // namespace

const std::vector<ZooEntry>& zoo_entries() {
  static const std::vector<ZooEntry> entries = {
      caffe_entry("alexnet", "AlexNet (Caffe bvlc_alexnet, grouped convolutions), 1000 classes",
                  227, 8),
      caffe_entry("googlenet", "GoogLeNet / Inception v1 (Caffe bvlc_googlenet), 1000 classes", 224,
                  11),
      ZooEntry{"mobilenet",
               "MobileNet v1 1.0 (TF-slim, as ARM-CL graph_mobilenet), 1001 classes",
               224,
               14,
               /*bgr=*/false,
               {0.5f, 0.5f, 0.5f},
               {0.5f, 0.5f, 0.5f}},
      ZooEntry{"resnet50",
               "ResNet-50 v1.5 (torchvision layout, Caffe names), 1000 classes",
               224,
               18,
               /*bgr=*/false,
               {0.485f, 0.456f, 0.406f},
               {0.229f, 0.224f, 0.225f}},
      caffe_entry("squeezenet", "SqueezeNet v1.0 (Caffe, DeepScale), 1000 classes", 224, 10),
      ZooEntry{"inception_v3",
               "Inception-v3 (torchvision layout, batch norm folded), 1000 classes",
               299,
               13,
               /*bgr=*/false,
               {0.485f, 0.456f, 0.406f},
               {0.229f, 0.224f, 0.225f}},
  };
  return entries;
}

const ZooEntry* find_zoo_entry(const std::string& name) {
  for (const ZooEntry& entry : zoo_entries()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

Graph build_zoo_graph(const std::string& name, WeightSource& weights, const ZooOptions& options) {
  if (name == "alexnet") return build_alexnet(weights, options);
  if (name == "googlenet") return build_googlenet(weights, options);
  if (name == "mobilenet") return build_mobilenet(weights, options);
  if (name == "resnet50") return build_resnet50(weights, options);
  if (name == "squeezenet") return build_squeezenet(weights, options);
  if (name == "inception_v3") return build_inception_v3(weights, options);
  std::string known;
  for (const ZooEntry& entry : zoo_entries()) known += (known.empty() ? "" : ", ") + entry.name;
  throw InputError("unknown graph '" + name + "' (known: " + known + ")");
}

int64_t checked_image_size(const char* network, const ZooOptions& options, int64_t default_size) {
  const int64_t size = options.image_size == 0 ? default_size : options.image_size;
  if (size < 0 || options.batch <= 0) {
    throw InputError("cannot build " + std::string(network) + " with image size " +
                     std::to_string(options.image_size) + " and batch " +
                     std::to_string(options.batch) +
                     ": the image size must be positive (or 0 for the default " +
                     std::to_string(default_size) + ") and the batch at least 1");
  }
  return size;
}

}  // namespace co_up::graph
