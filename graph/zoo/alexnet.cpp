// AlexNet as Caffe's bvlc_alexnet deploy.prototxt (and ARM-CL's graph_alexnet) defines it:
// grouped conv2/conv4/conv5 (the original two-GPU split), LRN after conv1 and conv2, 227x227 input.
// About 0.72 G multiply-accumulates at 227.
//
// Pools use Caffe's ceil rounding; at 227 it gives the same sizes as ARM-CL's floor rounding
// (55 -> 27 -> 13 -> 6), and it lets smaller test images through.

#include <string>

#include "core/error.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

constexpr int64_t kDefaultImageSize = 227;

constexpr int64_t kLrnSize = 5;
constexpr float kLrnAlpha = 1e-4f;
constexpr float kLrnBeta = 0.75f;
constexpr float kLrnBias = 1.0f;

}  // namespace

Graph build_alexnet(WeightSource& weights, const ZooOptions& options) {
  const int64_t size = checked_image_size("alexnet", options, kDefaultImageSize);
  GraphBuilder b("alexnet", weights);
  Stream s(b, b.input("data", {options.batch, 3, size, size}));

  b.begin_layer("conv1");
  s.conv("conv1", ConvParams::square(96, 11, 4))
      .relu("relu1")
      .lrn(kLrnSize, kLrnAlpha, kLrnBeta, kLrnBias, "norm1")
      .max_pool(3, 2, 0, true, "pool1");

  b.begin_layer("conv2");
  s.conv("conv2", ConvParams::square(256, 5, 1, 2, 2))
      .relu("relu2")
      .lrn(kLrnSize, kLrnAlpha, kLrnBeta, kLrnBias, "norm2")
      .max_pool(3, 2, 0, true, "pool2");

  b.begin_layer("conv3");
  s.conv("conv3", ConvParams::square(384, 3, 1, 1)).relu("relu3");

  b.begin_layer("conv4");
  s.conv("conv4", ConvParams::square(384, 3, 1, 1, 2)).relu("relu4");

  b.begin_layer("conv5");
  s.conv("conv5", ConvParams::square(256, 3, 1, 1, 2))
      .relu("relu5")
      .max_pool(3, 2, 0, true, "pool5");

  // FullyConnected flattens its N,C,H,W input itself (fc6 sees 256*6*6 = 9216 inputs at 227).
  b.begin_layer("fc6");
  s.fully_connected("fc6", 4096).relu("relu6").dropout("drop6");

  b.begin_layer("fc7");
  s.fully_connected("fc7", 4096).relu("relu7").dropout("drop7");

  b.begin_layer("fc8");
  s.fully_connected("fc8", 1000).softmax("prob");
  b.output(s.tail());
  return b.finish();
}

}  // namespace co_up::graph
