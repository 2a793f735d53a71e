// GraphBuilder: builds a Graph layer by layer, in the spirit of ARM-CL's stream API.
//
//   SeededWeights weights(42);
//   GraphBuilder b("tiny", weights);
//   TensorId x = b.input("data", {1, 3, 32, 32});
//   b.begin_layer("conv1");
//   x = Stream(b, x).conv("conv1", ConvParams::square(16, 3, 1, 1)).relu().max_pool(2, 2).tail();
//   b.begin_layer("fc");
//   x = Stream(b, x).fully_connected("fc", 10).softmax().tail();
//   b.output(x);
//   Graph g = b.finish();
//
// Constants (weights, biases, batch-norm statistics) come from a WeightSource, named after the
// node: "conv1_w", "conv1_b", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var" — the names --data
// looks up as <name>.npy.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace co_up::graph {

enum class ConstantRole { kWeights, kBias, kBnScale, kBnBias, kBnMean, kBnVariance };

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Values for constant `name` of shape `desc`. `fan_in` (inputs per output) sizes defaults.
  virtual std::vector<float> load(const std::string& name, const TensorDesc& desc,
                                  ConstantRole role, int64_t fan_in) = 0;
};

// Deterministic pseudo-random weights (He-uniform for weights), a function of (seed, name) only,
// so a constant's values do not depend on the order in which the graph was built.
class SeededWeights final : public WeightSource {
 public:
  explicit SeededWeights(uint64_t seed) : seed_(seed) {}
  std::vector<float> load(const std::string& name, const TensorDesc& desc, ConstantRole role,
                          int64_t fan_in) override;

 private:
  uint64_t seed_;
};

// One <name>.npy file per constant in a directory (ARM-CL's examples lay out data this way).
class NpyDirectoryWeights final : public WeightSource {
 public:
  explicit NpyDirectoryWeights(std::filesystem::path directory);
  std::vector<float> load(const std::string& name, const TensorDesc& desc, ConstantRole role,
                          int64_t fan_in) override;

 private:
  std::filesystem::path directory_;
};

struct ConvParams {
  int64_t out_channels = 0;
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> dilation{1, 1};
  int64_t group = 1;
  bool bias = true;

  static ConvParams square(int64_t out_channels, int64_t kernel, int64_t stride = 1,
                           int64_t pad = 0, int64_t group = 1) {
    ConvParams p;
    p.out_channels = out_channels;
    p.kernel = {kernel, kernel};
    p.stride = {stride, stride};
    p.pads = {pad, pad, pad, pad};
    p.group = group;
    return p;
  }
};

struct PoolParams {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{2, 2};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool only

  static PoolParams square(int64_t kernel, int64_t stride, int64_t pad = 0,
                           bool ceil_mode = false) {
    PoolParams p;
    p.kernel = {kernel, kernel};
    p.stride = {stride, stride};
    p.pads = {pad, pad, pad, pad};
    p.ceil_mode = ceil_mode;
    return p;
  }
};

class GraphBuilder {
 public:
  GraphBuilder(std::string graph_name, WeightSource& weights);

  TensorId input(const std::string& name, std::vector<int64_t> shape_nchw);
  // Nodes added from now on belong to a new layer unit called `name`.
  void begin_layer(const std::string& name);
  void output(TensorId tensor) { graph_.mark_output(tensor); }

  TensorId conv(TensorId x, const std::string& name, const ConvParams& params);
  // Depthwise convolution: group = channels, one filter per channel.
  TensorId depthwise_conv(TensorId x, const std::string& name, int64_t kernel, int64_t stride,
                          int64_t pad, bool bias = true);
  TensorId fully_connected(TensorId x, const std::string& name, int64_t outputs, bool bias = true);
  TensorId batch_norm(TensorId x, const std::string& name, float epsilon = 1e-5f);
  TensorId relu(TensorId x, const std::string& name);
  TensorId relu6(TensorId x, const std::string& name) { return clip(x, name, 0.0f, 6.0f); }
  TensorId clip(TensorId x, const std::string& name, float min, float max);
  TensorId sigmoid(TensorId x, const std::string& name);
  TensorId hard_swish(TensorId x, const std::string& name);
  TensorId max_pool(TensorId x, const std::string& name, const PoolParams& params);
  TensorId avg_pool(TensorId x, const std::string& name, const PoolParams& params);
  TensorId global_avg_pool(TensorId x, const std::string& name);
  TensorId global_max_pool(TensorId x, const std::string& name);
  TensorId lrn(TensorId x, const std::string& name, int64_t size, float alpha, float beta,
               float bias);
  TensorId concat(const std::vector<TensorId>& xs, const std::string& name, int64_t axis = 1);
  TensorId add(TensorId a, TensorId b, const std::string& name);
  TensorId softmax(TensorId x, const std::string& name, int64_t axis = 1);
  TensorId flatten(TensorId x, const std::string& name, int64_t axis = 1);
  TensorId reshape(TensorId x, const std::string& name, std::vector<int64_t> shape);
  TensorId identity(TensorId x, const std::string& name);  // also Dropout at inference

  const Graph& graph() const { return graph_; }
  const TensorDesc& desc(TensorId t) const { return graph_.tensor(t).desc; }
  // Validates and hands the graph over; the builder is empty afterwards.
  Graph finish();

 private:
  TensorId constant(const std::string& name, std::vector<int64_t> shape, ConstantRole role,
                    int64_t fan_in);
  TensorId node(const std::string& name, OpType op, std::vector<TensorId> inputs, Attributes attrs);

  Graph graph_;
  WeightSource& weights_;
  uint32_t layer_ = 0;
  bool any_layer_ = false;
};

// Sequential chaining on a builder's tail tensor; branch by making several Streams from one tensor.
class Stream {
 public:
  Stream(GraphBuilder& builder, TensorId tail) : builder_(builder), tail_(tail) {}
  TensorId tail() const { return tail_; }

  Stream& conv(const std::string& name, const ConvParams& params);
  Stream& depthwise_conv(const std::string& name, int64_t kernel, int64_t stride, int64_t pad,
                         bool bias = true);
  Stream& fully_connected(const std::string& name, int64_t outputs, bool bias = true);
  Stream& batch_norm(const std::string& name = {});
  Stream& relu(const std::string& name = {});
  Stream& relu6(const std::string& name = {});
  Stream& max_pool(int64_t kernel, int64_t stride, int64_t pad = 0, bool ceil_mode = false,
                   const std::string& name = {});
  Stream& avg_pool(int64_t kernel, int64_t stride, int64_t pad = 0, bool ceil_mode = false,
                   const std::string& name = {});
  Stream& global_avg_pool(const std::string& name = {});
  Stream& lrn(int64_t size, float alpha, float beta, float bias, const std::string& name = {});
  Stream& dropout(const std::string& name = {});
  Stream& flatten(const std::string& name = {});
  Stream& softmax(const std::string& name = {});

 private:
  // Auto-names follow the last named node: "conv1" -> "conv1/relu".
  std::string derive(const std::string& given, const char* suffix) const;

  GraphBuilder& builder_;
  TensorId tail_;
};

}  // namespace co_up::graph
