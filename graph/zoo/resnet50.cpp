// ResNet-50 (224x224) with Caffe's node names ("res2a_branch2a", "bn2a_branch2a", ...) and
// torchvision's layout, for torchvision's weights: convolutions without bias, batch norm
// (epsilon 1e-5) after every convolution, ReLU after the first two BNs of a bottleneck and after
// the residual add.
//
// Stride convention: torchvision's "v1.5" — a downsampling bottleneck (the first of stages 3..5)
// strides in its 3x3 convolution, not in its first 1x1 as the original Caffe v1 does, and its
// projection shortcut (1x1 conv + BN) strides likewise. About 4.1 G multiply-accumulates (v1 is
// 3.9 G). ARM-CL's graph_resnet50 (TF-slim weights) differs again: it strides in the last
// bottleneck of a stage; these weights do not fit it.

#include <string>

#include "core/error.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

constexpr int64_t kDefaultImageSize = 224;

ConvParams conv_no_bias(int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t pad = 0) {
  ConvParams p = ConvParams::square(out_channels, kernel, stride, pad);
  p.bias = false;
  return p;
}

// One bottleneck unit, e.g. id "2a": res2a_branch2a (1x1) -> res2a_branch2b (3x3, stride) ->
// res2a_branch2c (1x1, 4x wider), plus the shortcut res2a_branch1 (1x1 + BN) when `project`.
TensorId bottleneck(GraphBuilder& b, TensorId x, const std::string& id, int64_t mid, int64_t stride,
                    bool project) {
  const std::string res = "res" + id;
  const std::string bn = "bn" + id;
  TensorId y = b.conv(x, res + "_branch2a", conv_no_bias(mid, 1));
  y = b.batch_norm(y, bn + "_branch2a");
  y = b.relu(y, res + "_branch2a_relu");
  y = b.conv(y, res + "_branch2b", conv_no_bias(mid, 3, stride, 1));
  y = b.batch_norm(y, bn + "_branch2b");
  y = b.relu(y, res + "_branch2b_relu");
  y = b.conv(y, res + "_branch2c", conv_no_bias(4 * mid, 1));
  y = b.batch_norm(y, bn + "_branch2c");

  TensorId shortcut = x;
  if (project) {
    shortcut = b.conv(x, res + "_branch1", conv_no_bias(4 * mid, 1, stride));
    shortcut = b.batch_norm(shortcut, bn + "_branch1");
  }
  y = b.add(shortcut, y, res);
  return b.relu(y, res + "_relu");
}

struct Stage {
  int number;  // Caffe's stage number: res2 .. res5
  int blocks;
  int64_t mid_channels;
  int64_t stride;  // of the stage's first bottleneck
};
constexpr Stage kStages[] = {{2, 3, 64, 1}, {3, 4, 128, 2}, {4, 6, 256, 2}, {5, 3, 512, 2}};

}  // namespace

Graph build_resnet50(WeightSource& weights, const ZooOptions& options) {
  const int64_t size = checked_image_size("resnet50", options, kDefaultImageSize);
  GraphBuilder b("resnet50", weights);
  TensorId x = b.input("data", {options.batch, 3, size, size});

  b.begin_layer("conv1");
  x = b.conv(x, "conv1", conv_no_bias(64, 7, 2, 3));
  x = b.batch_norm(x, "bn_conv1");
  x = b.relu(x, "conv1_relu");
  x = b.max_pool(x, "pool1", PoolParams::square(3, 2, 1));

  for (const Stage& stage : kStages) {
    for (int i = 0; i < stage.blocks; ++i) {
      const std::string id = std::to_string(stage.number) + static_cast<char>('a' + i);
      b.begin_layer("res" + id);
      // Every stage's first block changes the channel count (64 -> 256 in res2a), so it projects.
      x = bottleneck(b, x, id, stage.mid_channels, i == 0 ? stage.stride : 1, i == 0);
    }
  }

  b.begin_layer("fc1000");
  x = Stream(b, x)
          .global_avg_pool("pool5")
          .flatten("pool5/flatten")
          .fully_connected("fc1000", 1000)
          .softmax("prob")
          .tail();
  b.output(x);
  return b.finish();
}

}  // namespace co_up::graph
