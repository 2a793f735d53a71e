// GoogLeNet (Inception v1) as Caffe's bvlc_googlenet deploy.prototxt (and ARM-CL's
// graph_googlenet) defines it, without the training-only auxiliary classifiers. 224x224 input,
// 1.58 G multiply-accumulates (the paper rounds to 1.5 G).
//
// Caffe rounds pooling output sizes up, so every stride-2 pool uses ceil mode. pool5 is a 7x7
// average pool over a 7x7 map at 224; it is a global average pool here so that smaller test
// images still reach the classifier with 1024 inputs.

#include <string>

#include "core/error.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

constexpr int64_t kDefaultImageSize = 224;

constexpr int64_t kLrnSize = 5;
constexpr float kLrnAlpha = 1e-4f;
constexpr float kLrnBeta = 0.75f;
constexpr float kLrnBias = 1.0f;

// Output channels of one inception module's four branches (the standard table of Szegedy et al.,
// "Going deeper with convolutions", Table 1).
struct InceptionChannels {
  const char* name;
  int64_t b1x1;
  int64_t b3x3_reduce, b3x3;
  int64_t b5x5_reduce, b5x5;
  int64_t pool_proj;
};

constexpr InceptionChannels kModules[] = {
    {"inception_3a", 64, 96, 128, 16, 32, 32},      // 256 out
    {"inception_3b", 128, 128, 192, 32, 96, 64},    // 480
    {"inception_4a", 192, 96, 208, 16, 48, 64},     // 512
    {"inception_4b", 160, 112, 224, 24, 64, 64},    // 512
    {"inception_4c", 128, 128, 256, 24, 64, 64},    // 512
    {"inception_4d", 112, 144, 288, 32, 64, 64},    // 528
    {"inception_4e", 256, 160, 320, 32, 128, 128},  // 832
    {"inception_5a", 256, 160, 320, 32, 128, 128},  // 832
    {"inception_5b", 384, 192, 384, 48, 128, 128},  // 1024
};

// Four parallel branches over `x`, concatenated on channels. Node names follow the prototxt:
// "inception_3a/1x1", "inception_3a/relu_1x1", ..., "inception_3a/output".
TensorId inception(GraphBuilder& b, TensorId x, const InceptionChannels& m) {
  const std::string p = std::string(m.name) + "/";

  Stream branch1(b, x);
  branch1.conv(p + "1x1", ConvParams::square(m.b1x1, 1)).relu(p + "relu_1x1");

  Stream branch2(b, x);
  branch2.conv(p + "3x3_reduce", ConvParams::square(m.b3x3_reduce, 1))
      .relu(p + "relu_3x3_reduce")
      .conv(p + "3x3", ConvParams::square(m.b3x3, 3, 1, 1))
      .relu(p + "relu_3x3");

  Stream branch3(b, x);
  branch3.conv(p + "5x5_reduce", ConvParams::square(m.b5x5_reduce, 1))
      .relu(p + "relu_5x5_reduce")
      .conv(p + "5x5", ConvParams::square(m.b5x5, 5, 1, 2))
      .relu(p + "relu_5x5");

  Stream branch4(b, x);
  branch4.max_pool(3, 1, 1, false, p + "pool")
      .conv(p + "pool_proj", ConvParams::square(m.pool_proj, 1))
      .relu(p + "relu_pool_proj");

  return b.concat({branch1.tail(), branch2.tail(), branch3.tail(), branch4.tail()}, p + "output");
}

}  // namespace

Graph build_googlenet(WeightSource& weights, const ZooOptions& options) {
  const int64_t size = checked_image_size("googlenet", options, kDefaultImageSize);
  GraphBuilder b("googlenet", weights);
  TensorId x = b.input("data", {options.batch, 3, size, size});

  b.begin_layer("conv1");
  x = Stream(b, x)
          .conv("conv1/7x7_s2", ConvParams::square(64, 7, 2, 3))
          .relu("conv1/relu_7x7")
          .max_pool(3, 2, 0, true, "pool1/3x3_s2")
          .lrn(kLrnSize, kLrnAlpha, kLrnBeta, kLrnBias, "pool1/norm1")
          .tail();

  b.begin_layer("conv2");
  x = Stream(b, x)
          .conv("conv2/3x3_reduce", ConvParams::square(64, 1))
          .relu("conv2/relu_3x3_reduce")
          .conv("conv2/3x3", ConvParams::square(192, 3, 1, 1))
          .relu("conv2/relu_3x3")
          .lrn(kLrnSize, kLrnAlpha, kLrnBeta, kLrnBias, "conv2/norm2")
          .max_pool(3, 2, 0, true, "pool2/3x3_s2")
          .tail();

  for (const InceptionChannels& m : kModules) {
    b.begin_layer(m.name);
    x = inception(b, x, m);
    // The stride-2 pools between stages belong to the module before them.
    const std::string name = m.name;
    if (name == "inception_3b") x = Stream(b, x).max_pool(3, 2, 0, true, "pool3/3x3_s2").tail();
    if (name == "inception_4e") x = Stream(b, x).max_pool(3, 2, 0, true, "pool4/3x3_s2").tail();
  }

  // The classifier belongs to the last module's unit (inception_5b).
  x = Stream(b, x)
          .global_avg_pool("pool5/7x7_s1")
          .dropout("pool5/drop_7x7_s1")
          .fully_connected("loss3/classifier", 1000)
          .softmax("prob")
          .tail();
  b.output(x);
  return b.finish();
}

}  // namespace co_up::graph
