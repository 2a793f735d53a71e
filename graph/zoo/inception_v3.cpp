// Inception-v3 as torchvision's inception_v3 defines it (Szegedy et al., "Rethinking the Inception
// Architecture for Computer Vision"), without the training-only auxiliary classifier. 299x299
// input, 5.7 G multiply-accumulates. Every BasicConv2d (convolution, batch norm, ReLU) is a
// convolution with a bias (the batch norm folded in, as an inference graph has it) and a ReLU.
// Node names follow torchvision's modules: "Mixed_5b/branch5x5_2", ...
//
// The average pools inside the modules count padding (torchvision's F.avg_pool2d default). The
// final 8x8 average pool is a global average pool, so that smaller test images still reach the
// classifier with 2048 inputs; the smallest image that survives the stride-2 valid convolutions
// and pools is 75x75.

#include <string>

#include "core/error.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

constexpr int64_t kDefaultImageSize = 299;
constexpr int64_t kMinImageSize = 75;

ConvParams rect(int64_t out_channels, int64_t kernel_h, int64_t kernel_w) {
  ConvParams p;
  p.out_channels = out_channels;
  p.kernel = {kernel_h, kernel_w};
  const int64_t ph = kernel_h / 2, pw = kernel_w / 2;
  p.pads = {ph, pw, ph, pw};
  return p;
}

// torchvision's BasicConv2d: convolution (+ folded batch norm) and ReLU.
Stream& basic(Stream& s, const std::string& name, const ConvParams& params) {
  return s.conv(name, params).relu(name + "/relu");
}

TensorId avg_pool_3x3(GraphBuilder& b, TensorId x, const std::string& name) {
  PoolParams p = PoolParams::square(3, 1, 1);
  p.count_include_pad = true;
  return b.avg_pool(x, name, p);
}

TensorId inception_a(GraphBuilder& b, TensorId x, const std::string& m, int64_t pool_features) {
  Stream b1(b, x);
  basic(b1, m + "/branch1x1", ConvParams::square(64, 1));
  Stream b5(b, x);
  basic(b5, m + "/branch5x5_1", ConvParams::square(48, 1));
  basic(b5, m + "/branch5x5_2", ConvParams::square(64, 5, 1, 2));
  Stream b3(b, x);
  basic(b3, m + "/branch3x3dbl_1", ConvParams::square(64, 1));
  basic(b3, m + "/branch3x3dbl_2", ConvParams::square(96, 3, 1, 1));
  basic(b3, m + "/branch3x3dbl_3", ConvParams::square(96, 3, 1, 1));
  Stream bp(b, avg_pool_3x3(b, x, m + "/branch_pool_avg"));
  basic(bp, m + "/branch_pool", ConvParams::square(pool_features, 1));
  return b.concat({b1.tail(), b5.tail(), b3.tail(), bp.tail()}, m + "/output");
}

TensorId inception_b(GraphBuilder& b, TensorId x, const std::string& m) {
  Stream b3(b, x);
  basic(b3, m + "/branch3x3", ConvParams::square(384, 3, 2));
  Stream bd(b, x);
  basic(bd, m + "/branch3x3dbl_1", ConvParams::square(64, 1));
  basic(bd, m + "/branch3x3dbl_2", ConvParams::square(96, 3, 1, 1));
  basic(bd, m + "/branch3x3dbl_3", ConvParams::square(96, 3, 2));
  Stream bp(b, x);
  bp.max_pool(3, 2, 0, false, m + "/branch_pool");
  return b.concat({b3.tail(), bd.tail(), bp.tail()}, m + "/output");
}

TensorId inception_c(GraphBuilder& b, TensorId x, const std::string& m, int64_t c7) {
  Stream b1(b, x);
  basic(b1, m + "/branch1x1", ConvParams::square(192, 1));
  Stream b7(b, x);
  basic(b7, m + "/branch7x7_1", ConvParams::square(c7, 1));
  basic(b7, m + "/branch7x7_2", rect(c7, 1, 7));
  basic(b7, m + "/branch7x7_3", rect(192, 7, 1));
  Stream bd(b, x);
  basic(bd, m + "/branch7x7dbl_1", ConvParams::square(c7, 1));
  basic(bd, m + "/branch7x7dbl_2", rect(c7, 7, 1));
  basic(bd, m + "/branch7x7dbl_3", rect(c7, 1, 7));
  basic(bd, m + "/branch7x7dbl_4", rect(c7, 7, 1));
  basic(bd, m + "/branch7x7dbl_5", rect(192, 1, 7));
  Stream bp(b, avg_pool_3x3(b, x, m + "/branch_pool_avg"));
  basic(bp, m + "/branch_pool", ConvParams::square(192, 1));
  return b.concat({b1.tail(), b7.tail(), bd.tail(), bp.tail()}, m + "/output");
}

TensorId inception_d(GraphBuilder& b, TensorId x, const std::string& m) {
  Stream b3(b, x);
  basic(b3, m + "/branch3x3_1", ConvParams::square(192, 1));
  basic(b3, m + "/branch3x3_2", ConvParams::square(320, 3, 2));
  Stream b7(b, x);
  basic(b7, m + "/branch7x7x3_1", ConvParams::square(192, 1));
  basic(b7, m + "/branch7x7x3_2", rect(192, 1, 7));
  basic(b7, m + "/branch7x7x3_3", rect(192, 7, 1));
  basic(b7, m + "/branch7x7x3_4", ConvParams::square(192, 3, 2));
  Stream bp(b, x);
  bp.max_pool(3, 2, 0, false, m + "/branch_pool");
  return b.concat({b3.tail(), b7.tail(), bp.tail()}, m + "/output");
}

TensorId inception_e(GraphBuilder& b, TensorId x, const std::string& m) {
  Stream b1(b, x);
  basic(b1, m + "/branch1x1", ConvParams::square(320, 1));

  Stream b3(b, x);
  basic(b3, m + "/branch3x3_1", ConvParams::square(384, 1));
  Stream b3a(b, b3.tail());
  basic(b3a, m + "/branch3x3_2a", rect(384, 1, 3));
  Stream b3b(b, b3.tail());
  basic(b3b, m + "/branch3x3_2b", rect(384, 3, 1));
  const TensorId t3 = b.concat({b3a.tail(), b3b.tail()}, m + "/branch3x3");

  Stream bd(b, x);
  basic(bd, m + "/branch3x3dbl_1", ConvParams::square(448, 1));
  basic(bd, m + "/branch3x3dbl_2", ConvParams::square(384, 3, 1, 1));
  Stream bda(b, bd.tail());
  basic(bda, m + "/branch3x3dbl_3a", rect(384, 1, 3));
  Stream bdb(b, bd.tail());
  basic(bdb, m + "/branch3x3dbl_3b", rect(384, 3, 1));
  const TensorId td = b.concat({bda.tail(), bdb.tail()}, m + "/branch3x3dbl");

  Stream bp(b, avg_pool_3x3(b, x, m + "/branch_pool_avg"));
  basic(bp, m + "/branch_pool", ConvParams::square(192, 1));
  return b.concat({b1.tail(), t3, td, bp.tail()}, m + "/output");
}

}  // namespace

Graph build_inception_v3(WeightSource& weights, const ZooOptions& options) {
  const int64_t size = checked_image_size("inception_v3", options, kDefaultImageSize);
  if (size < kMinImageSize) {
    throw InputError("cannot build inception_v3 with image size " + std::to_string(size) +
                     ": its stride-2 valid convolutions and pools need at least " +
                     std::to_string(kMinImageSize) + " (use --image-size=" +
                     std::to_string(kMinImageSize) + " or more)");
  }
  GraphBuilder b("inception_v3", weights);
  TensorId x = b.input("data", {options.batch, 3, size, size});

  b.begin_layer("stem_a");
  {
    Stream s(b, x);
    basic(s, "Conv2d_1a_3x3", ConvParams::square(32, 3, 2));
    basic(s, "Conv2d_2a_3x3", ConvParams::square(32, 3));
    basic(s, "Conv2d_2b_3x3", ConvParams::square(64, 3, 1, 1));
    s.max_pool(3, 2, 0, false, "maxpool1");
    x = s.tail();
  }
  b.begin_layer("stem_b");
  {
    Stream s(b, x);
    basic(s, "Conv2d_3b_1x1", ConvParams::square(80, 1));
    basic(s, "Conv2d_4a_3x3", ConvParams::square(192, 3));
    s.max_pool(3, 2, 0, false, "maxpool2");
    x = s.tail();
  }

  b.begin_layer("Mixed_5b");
  x = inception_a(b, x, "Mixed_5b", 32);
  b.begin_layer("Mixed_5c");
  x = inception_a(b, x, "Mixed_5c", 64);
  b.begin_layer("Mixed_5d");
  x = inception_a(b, x, "Mixed_5d", 64);
  b.begin_layer("Mixed_6a");
  x = inception_b(b, x, "Mixed_6a");
  b.begin_layer("Mixed_6b");
  x = inception_c(b, x, "Mixed_6b", 128);
  b.begin_layer("Mixed_6c");
  x = inception_c(b, x, "Mixed_6c", 160);
  b.begin_layer("Mixed_6d");
  x = inception_c(b, x, "Mixed_6d", 160);
  b.begin_layer("Mixed_6e");
  x = inception_c(b, x, "Mixed_6e", 192);
  b.begin_layer("Mixed_7a");
  x = inception_d(b, x, "Mixed_7a");
  b.begin_layer("Mixed_7b");
  x = inception_e(b, x, "Mixed_7b");
  b.begin_layer("Mixed_7c");
  x = inception_e(b, x, "Mixed_7c");

  // The classifier belongs to the last module's unit (Mixed_7c).
  x = Stream(b, x).global_avg_pool("avgpool").dropout("dropout").fully_connected("fc", 1000).softmax("prob").tail();
  b.output(x);
  return b.finish();
}

}  // namespace co_up::graph
