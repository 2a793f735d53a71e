// MobileNet v1 (width 1.0, 224x224) as ARM-CL's graph_mobilenet builds it from the TensorFlow-slim
// checkpoint: convolutions without bias, each followed by batch norm (epsilon 0.001) and ReLU6;
// a 1x1 convolution with bias as the classifier over 1001 classes (class 0 is TF's "background"),
// then flatten and softmax. About 0.57 G multiply-accumulates.
//
// Padding is TensorFlow's SAME, which is asymmetric for stride 2 on even sizes (nothing on
// top/left, one row/column on bottom/right), as ARM-CL's PadStrideInfo(2, 2, 0, 1, 0, 1) for 224.
// It gives the same output sizes as symmetric padding 1 but different values, so the TF weights
// need it.

#include <algorithm>
#include <array>
#include <iterator>
#include <string>

#include "core/error.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

constexpr int64_t kDefaultImageSize = 224;
constexpr int64_t kClasses = 1001;
constexpr float kBnEpsilon = 0.001f;

// Depthwise stride and pointwise output channels of blocks 1..13 (Howard et al., Table 1).
struct Block {
  int64_t stride;
  int64_t channels;
};
constexpr Block kBlocks[] = {
    {1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256},  {2, 512},  {1, 512},
    {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024},
};

// TensorFlow SAME padding for a square input of `in` pixels: {top, left, bottom, right}.
std::array<int64_t, 4> same_pads(int64_t in, int64_t kernel, int64_t stride) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + kernel - in, 0);
  const int64_t before = total / 2;
  const int64_t after = total - before;
  return {before, before, after, after};
}

ConvParams same_conv(int64_t in, int64_t out_channels, int64_t kernel, int64_t stride,
                     int64_t group) {
  ConvParams p = ConvParams::square(out_channels, kernel, stride, 0, group);
  p.pads = same_pads(in, kernel, stride);
  p.bias = false;  // batch norm follows
  return p;
}

// conv (no bias) -> BatchNorm -> ReLU6, named "<scope>/BatchNorm", "<scope>/Relu6".
TensorId conv_bn_relu6(GraphBuilder& b, TensorId x, const std::string& scope,
                       const std::string& conv_name, const ConvParams& p) {
  x = b.conv(x, conv_name, p);
  x = b.batch_norm(x, scope + "/BatchNorm", kBnEpsilon);
  return b.relu6(x, scope + "/Relu6");
}

}  // namespace

Graph build_mobilenet(WeightSource& weights, const ZooOptions& options) {
  const int64_t size = checked_image_size("mobilenet", options, kDefaultImageSize);
  GraphBuilder b("mobilenet", weights);
  TensorId x = b.input("data", {options.batch, 3, size, size});

  b.begin_layer("Conv2d_0");
  x = conv_bn_relu6(b, x, "Conv2d_0", "Conv2d_0", same_conv(size, 32, 3, 2, 1));

  for (size_t i = 0; i < std::size(kBlocks); ++i) {
    const std::string block = "Conv2d_" + std::to_string(i + 1);
    b.begin_layer(block);
    const int64_t channels = b.desc(x).shape[1];
    const int64_t in = b.desc(x).shape[2];
    const std::string dw = block + "_depthwise";
    x = conv_bn_relu6(b, x, dw, dw + "/depthwise",
                      same_conv(in, channels, 3, kBlocks[i].stride, channels));
    const std::string pw = block + "_pointwise";
    x = conv_bn_relu6(b, x, pw, pw + "/Conv2D", same_conv(in, kBlocks[i].channels, 1, 1, 1));
  }

  // Pool and classifier belong to the last block's unit (Conv2d_13).
  x = b.global_avg_pool(x, "Logits/AvgPool_1a");
  x = b.conv(x, "Logits/Conv2d_1c_1x1", ConvParams::square(kClasses, 1));
  x = b.flatten(x, "Reshape");
  x = b.softmax(x, "Softmax");
  b.output(x);
  return b.finish();
}

}  // namespace co_up::graph
