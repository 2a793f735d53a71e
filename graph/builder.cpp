#include "graph/builder.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "graph/npy.h"

namespace co_up::graph {
namespace {

// splitmix64: a tiny, well-mixed generator; good enough for initial weights and fully portable.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

std::vector<int64_t> squeeze(const std::vector<int64_t>& shape) {
  std::vector<int64_t> out;
  for (int64_t d : shape) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

Attributes pool_attrs(const PoolParams& p, bool average) {
  Attributes attrs{
      {"kernel_shape", std::vector<int64_t>(p.kernel.begin(), p.kernel.end())},
      {"strides", std::vector<int64_t>(p.stride.begin(), p.stride.end())},
      {"pads", std::vector<int64_t>(p.pads.begin(), p.pads.end())},
      {"ceil_mode", int64_t{p.ceil_mode ? 1 : 0}},
  };
  if (average) attrs.set("count_include_pad", int64_t{p.count_include_pad ? 1 : 0});
  return attrs;
}

}  // namespace

std::vector<float> SeededWeights::load(const std::string& name, const TensorDesc& desc,
                                       ConstantRole role, int64_t fan_in) {
  uint64_t state = seed_ ^ fnv1a(name);
  auto uniform = [&state](float low, float high) {
    const double unit = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    return static_cast<float>(low + (high - low) * unit);
  };
  std::vector<float> values(static_cast<size_t>(desc.element_count()));
  const float bound = std::sqrt(6.0f / static_cast<float>(std::max<int64_t>(fan_in, 1)));
  for (float& v : values) {
    switch (role) {
      case ConstantRole::kWeights: v = uniform(-bound, bound); break;
      case ConstantRole::kBias: v = uniform(-0.05f, 0.05f); break;
      case ConstantRole::kBnScale: v = uniform(0.8f, 1.2f); break;
      case ConstantRole::kBnBias: v = uniform(-0.1f, 0.1f); break;
      case ConstantRole::kBnMean: v = uniform(-0.1f, 0.1f); break;
      case ConstantRole::kBnVariance: v = uniform(0.8f, 1.2f); break;
    }
  }
  return values;
}

NpyDirectoryWeights::NpyDirectoryWeights(std::filesystem::path directory)
    : directory_(std::move(directory)) {
  if (!std::filesystem::is_directory(directory_)) {
    throw InputError("--data directory '" + directory_.string() +
                     "' does not exist (it must hold one <constant>.npy per weight tensor)");
  }
}

std::vector<float> NpyDirectoryWeights::load(const std::string& name, const TensorDesc& desc,
                                             ConstantRole, int64_t) {
  const std::filesystem::path path = directory_ / (name + ".npy");
  if (!std::filesystem::exists(path)) {
    throw InputError("missing weights file '" + path.string() + "' for constant '" + name +
                     "' of shape " + desc.shape_string() +
                     " (--data needs one <constant>.npy per weight; see --list-constants)");
  }
  NpyArray array = read_npy(path);
  if (squeeze(array.shape) != squeeze(desc.shape)) {
    TensorDesc got;
    got.shape = array.shape;
    throw InputError("weights file '" + path.string() + "' has shape " + got.shape_string() +
                     " but constant '" + name + "' needs " + desc.shape_string());
  }
  return std::move(array.data);
}

GraphBuilder::GraphBuilder(std::string graph_name, WeightSource& weights)
    : graph_(std::move(graph_name)), weights_(weights) {}

TensorId GraphBuilder::input(const std::string& name, std::vector<int64_t> shape_nchw) {
  TensorDesc desc;
  desc.shape = std::move(shape_nchw);
  desc.layout = desc.shape.size() == 4 ? Layout::kNchw : Layout::kAny;
  return graph_.add_input(name, std::move(desc));
}

void GraphBuilder::begin_layer(const std::string& name) {
  if (any_layer_) ++layer_;
  any_layer_ = true;
  graph_.set_layer_name(layer_, name);
}

TensorId GraphBuilder::constant(const std::string& name, std::vector<int64_t> shape,
                                ConstantRole role, int64_t fan_in) {
  TensorDesc desc;
  desc.shape = std::move(shape);
  desc.layout = Layout::kAny;
  std::vector<float> values = weights_.load(name, desc, role, fan_in);
  return graph_.add_constant(name, std::move(desc), std::move(values));
}

TensorId GraphBuilder::node(const std::string& name, OpType op, std::vector<TensorId> inputs,
                            Attributes attrs) {
  any_layer_ = true;
  return graph_.add_node(name, op, std::move(inputs), std::move(attrs), layer_);
}

TensorId GraphBuilder::conv(TensorId x, const std::string& name, const ConvParams& p) {
  const TensorDesc& in = desc(x);
  if (in.shape.size() != 4 || p.group <= 0 || in.shape[1] % p.group != 0) {
    throw InputError("node '" + name + "' (Conv): input " + in.shape_string() +
                     " does not split into " + std::to_string(p.group) + " groups");
  }
  const int64_t channels_per_group = in.shape[1] / p.group;
  const int64_t fan_in = channels_per_group * p.kernel[0] * p.kernel[1];
  TensorId w = constant(name + "_w", {p.out_channels, channels_per_group, p.kernel[0], p.kernel[1]},
                        ConstantRole::kWeights, fan_in);
  TensorId b = p.bias ? constant(name + "_b", {p.out_channels}, ConstantRole::kBias, fan_in)
                      : kNoTensor;
  Attributes attrs{
      {"strides", std::vector<int64_t>(p.stride.begin(), p.stride.end())},
      {"pads", std::vector<int64_t>(p.pads.begin(), p.pads.end())},
      {"dilations", std::vector<int64_t>(p.dilation.begin(), p.dilation.end())},
      {"group", p.group},
      {"activation", std::string("none")},
  };
  return node(name, OpType::kConv, {x, w, b}, std::move(attrs));
}

TensorId GraphBuilder::depthwise_conv(TensorId x, const std::string& name, int64_t kernel,
                                      int64_t stride, int64_t pad, bool bias) {
  const int64_t channels = desc(x).shape.at(1);
  ConvParams p = ConvParams::square(channels, kernel, stride, pad, channels);
  p.bias = bias;
  return conv(x, name, p);
}

TensorId GraphBuilder::fully_connected(TensorId x, const std::string& name, int64_t outputs,
                                       bool bias) {
  const TensorDesc& in = desc(x);
  int64_t k = 1;
  for (size_t i = 1; i < in.shape.size(); ++i) k *= in.shape[i];
  TensorId w = constant(name + "_w", {outputs, k}, ConstantRole::kWeights, k);
  TensorId b = bias ? constant(name + "_b", {outputs}, ConstantRole::kBias, k) : kNoTensor;
  return node(name, OpType::kFullyConnected, {x, w, b}, {{"activation", std::string("none")}});
}

TensorId GraphBuilder::batch_norm(TensorId x, const std::string& name, float epsilon) {
  const int64_t c = desc(x).shape.at(1);
  TensorId scale = constant(name + "_scale", {c}, ConstantRole::kBnScale, 1);
  TensorId bias = constant(name + "_bias", {c}, ConstantRole::kBnBias, 1);
  TensorId mean = constant(name + "_mean", {c}, ConstantRole::kBnMean, 1);
  TensorId var = constant(name + "_var", {c}, ConstantRole::kBnVariance, 1);
  return node(name, OpType::kBatchNormalization, {x, scale, bias, mean, var},
              {{"epsilon", static_cast<double>(epsilon)}});
}

TensorId GraphBuilder::relu(TensorId x, const std::string& name) {
  return node(name, OpType::kRelu, {x}, {});
}

TensorId GraphBuilder::clip(TensorId x, const std::string& name, float min, float max) {
  return node(name, OpType::kClip, {x},
              {{"min", static_cast<double>(min)}, {"max", static_cast<double>(max)}});
}

TensorId GraphBuilder::sigmoid(TensorId x, const std::string& name) {
  return node(name, OpType::kSigmoid, {x}, {});
}

TensorId GraphBuilder::hard_swish(TensorId x, const std::string& name) {
  return node(name, OpType::kHardSwish, {x}, {});
}

TensorId GraphBuilder::max_pool(TensorId x, const std::string& name, const PoolParams& p) {
  return node(name, OpType::kMaxPool, {x}, pool_attrs(p, false));
}

TensorId GraphBuilder::avg_pool(TensorId x, const std::string& name, const PoolParams& p) {
  return node(name, OpType::kAveragePool, {x}, pool_attrs(p, true));
}

TensorId GraphBuilder::global_avg_pool(TensorId x, const std::string& name) {
  return node(name, OpType::kGlobalAveragePool, {x}, {});
}

TensorId GraphBuilder::global_max_pool(TensorId x, const std::string& name) {
  return node(name, OpType::kGlobalMaxPool, {x}, {});
}

TensorId GraphBuilder::lrn(TensorId x, const std::string& name, int64_t size, float alpha,
                           float beta, float bias) {
  return node(name, OpType::kLrn, {x},
              {{"size", size},
               {"alpha", static_cast<double>(alpha)},
               {"beta", static_cast<double>(beta)},
               {"bias", static_cast<double>(bias)}});
}

TensorId GraphBuilder::concat(const std::vector<TensorId>& xs, const std::string& name,
                              int64_t axis) {
  return node(name, OpType::kConcat, xs, {{"axis", axis}});
}

TensorId GraphBuilder::add(TensorId a, TensorId b, const std::string& name) {
  return node(name, OpType::kAdd, {a, b}, {{"activation", std::string("none")}});
}

TensorId GraphBuilder::softmax(TensorId x, const std::string& name, int64_t axis) {
  return node(name, OpType::kSoftmax, {x}, {{"axis", axis}});
}

TensorId GraphBuilder::flatten(TensorId x, const std::string& name, int64_t axis) {
  return node(name, OpType::kFlatten, {x}, {{"axis", axis}});
}

TensorId GraphBuilder::reshape(TensorId x, const std::string& name, std::vector<int64_t> shape) {
  return node(name, OpType::kReshape, {x}, {{"shape", std::move(shape)}});
}

TensorId GraphBuilder::identity(TensorId x, const std::string& name) {
  return node(name, OpType::kIdentity, {x}, {});
}

Graph GraphBuilder::finish() {
  graph_.validate();
  Graph done = std::move(graph_);
  graph_ = Graph(done.name());
  return done;
}

std::string Stream::derive(const std::string& given, const char* suffix) const {
  if (!given.empty()) return given;
  return builder_.graph().tensor(tail_).name + "/" + suffix;
}

Stream& Stream::conv(const std::string& name, const ConvParams& params) {
  tail_ = builder_.conv(tail_, name, params);
  return *this;
}
Stream& Stream::depthwise_conv(const std::string& name, int64_t kernel, int64_t stride,
                               int64_t pad, bool bias) {
  tail_ = builder_.depthwise_conv(tail_, name, kernel, stride, pad, bias);
  return *this;
}
Stream& Stream::fully_connected(const std::string& name, int64_t outputs, bool bias) {
  tail_ = builder_.fully_connected(tail_, name, outputs, bias);
  return *this;
}
Stream& Stream::batch_norm(const std::string& name) {
  tail_ = builder_.batch_norm(tail_, derive(name, "bn"));
  return *this;
}
Stream& Stream::relu(const std::string& name) {
  tail_ = builder_.relu(tail_, derive(name, "relu"));
  return *this;
}
Stream& Stream::relu6(const std::string& name) {
  tail_ = builder_.relu6(tail_, derive(name, "relu6"));
  return *this;
}
Stream& Stream::max_pool(int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode,
                         const std::string& name) {
  tail_ = builder_.max_pool(tail_, derive(name, "maxpool"),
                            PoolParams::square(kernel, stride, pad, ceil_mode));
  return *this;
}
Stream& Stream::avg_pool(int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode,
                         const std::string& name) {
  tail_ = builder_.avg_pool(tail_, derive(name, "avgpool"),
                            PoolParams::square(kernel, stride, pad, ceil_mode));
  return *this;
}
Stream& Stream::global_avg_pool(const std::string& name) {
  tail_ = builder_.global_avg_pool(tail_, derive(name, "gap"));
  return *this;
}
Stream& Stream::lrn(int64_t size, float alpha, float beta, float bias, const std::string& name) {
  tail_ = builder_.lrn(tail_, derive(name, "lrn"), size, alpha, beta, bias);
  return *this;
}
Stream& Stream::dropout(const std::string& name) {
  tail_ = builder_.identity(tail_, derive(name, "dropout"));
  return *this;
}
Stream& Stream::flatten(const std::string& name) {
  tail_ = builder_.flatten(tail_, derive(name, "flatten"));
  return *this;
}
Stream& Stream::softmax(const std::string& name) {
  tail_ = builder_.softmax(tail_, derive(name, "softmax"));
  return *this;
}

}  // namespace co_up::graph
