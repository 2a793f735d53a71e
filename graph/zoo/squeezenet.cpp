// SqueezeNet v1.0 as DeepScale's Caffe deploy.prototxt (and ARM-CL's graph_squeezenet) defines it.
// Input 224x224, as ARM-CL runs it (the Caffe prototxt crops 227; the network is fully
// convolutional up to a global pool, so both work with the same weights). About 0.82 G
// multiply-accumulates at 224.
//
// Caffe rounds pooling output sizes up, so the stride-2 max pools use ceil mode.

#include <string>

#include "core/error.h"
#include "graph/zoo/zoo.h"

namespace co_up::graph {
namespace {

constexpr int64_t kDefaultImageSize = 224;

struct Fire {
  int number;  // fire2 .. fire9
  int64_t squeeze;
  int64_t expand;  // each of expand1x1 and expand3x3; the module outputs 2 * expand channels
};
constexpr Fire kFires[] = {{2, 16, 64},  {3, 16, 64},  {4, 32, 128}, {5, 32, 128},
                           {6, 48, 192}, {7, 48, 192}, {8, 64, 256}, {9, 64, 256}};

// squeeze 1x1 -> relu, then expand 1x1 and expand 3x3 (pad 1) in parallel -> relu -> concat.
TensorId fire(GraphBuilder& b, TensorId x, const Fire& f) {
  const std::string p = "fire" + std::to_string(f.number) + "/";
  x = Stream(b, x)
          .conv(p + "squeeze1x1", ConvParams::square(f.squeeze, 1))
          .relu(p + "relu_squeeze1x1")
          .tail();
  Stream e1(b, x);
  e1.conv(p + "expand1x1", ConvParams::square(f.expand, 1)).relu(p + "relu_expand1x1");
  Stream e3(b, x);
  e3.conv(p + "expand3x3", ConvParams::square(f.expand, 3, 1, 1)).relu(p + "relu_expand3x3");
  return b.concat({e1.tail(), e3.tail()}, p + "concat");
}

}  // namespace

Graph build_squeezenet(WeightSource& weights, const ZooOptions& options) {
  const int64_t size = checked_image_size("squeezenet", options, kDefaultImageSize);
  GraphBuilder b("squeezenet", weights);
  TensorId x = b.input("data", {options.batch, 3, size, size});

  b.begin_layer("conv1");
  x = Stream(b, x)
          .conv("conv1", ConvParams::square(96, 7, 2))
          .relu("relu_conv1")
          .max_pool(3, 2, 0, true, "pool1")
          .tail();

  for (const Fire& f : kFires) {
    b.begin_layer("fire" + std::to_string(f.number));
    x = fire(b, x, f);
    // The pools after fire4 and fire8, and the dropout after fire9, belong to that fire's unit.
    if (f.number == 4) x = Stream(b, x).max_pool(3, 2, 0, true, "pool4").tail();
    if (f.number == 8) x = Stream(b, x).max_pool(3, 2, 0, true, "pool8").tail();
    if (f.number == 9) x = Stream(b, x).dropout("drop9").tail();
  }

  b.begin_layer("conv10");
  x = Stream(b, x)
          .conv("conv10", ConvParams::square(1000, 1))
          .relu("relu_conv10")
          .global_avg_pool("pool10")
          .flatten("pool10/flatten")
          .softmax("prob")
          .tail();
  b.output(x);
  return b.finish();
}

}  // namespace co_up::graph
