// The opencl plugin through the C ABI: every operator against the cpu-reference plugin (tolerance
// in opencl_test_support.h), and the error contract: no matching device, kernel build failure,
// out of device memory, map/unmap and hooks.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/backends/opencl_test_support.h"

namespace co_up::opencl_test {
namespace {

LoadedPlugin& reference_plugin() {
  static LoadedPlugin plugin("libco_up_cpu_reference.so");
  return plugin;
}

// One operator case: a builder with its constants, the graph, and seeded inputs.
struct OpCase {
  std::string name;
  std::function<void(GraphBuilder&, std::deque<std::vector<float>>&, std::vector<uint32_t>&,
                     uint32_t&)>
      build;
};

std::vector<co_up_attr> conv_attrs(GraphBuilder& b, std::vector<int64_t> strides,
                                   std::vector<int64_t> pads, std::vector<int64_t> dilations,
                                   int64_t group, const char* act) {
  return {b.ints("strides", std::move(strides)), b.ints("pads", std::move(pads)),
          b.ints("dilations", std::move(dilations)), GraphBuilder::integer("group", group),
          GraphBuilder::str("activation", act)};
}

// Conv of x[n, c, h, w] with m kernels kh x kw; bias optional.
OpCase conv_case(std::string name, std::vector<int64_t> x_dims, int64_t m, int64_t kh, int64_t kw,
                 std::vector<int64_t> strides, std::vector<int64_t> pads,
                 std::vector<int64_t> dilations, int64_t group, const char* act, bool bias) {
  return {name, [=](GraphBuilder& b, std::deque<std::vector<float>>& data,
                    std::vector<uint32_t>& inputs, uint32_t& output) {
            const int64_t c = x_dims[1];
            const uint32_t x = b.tensor("x", x_dims);
            data.push_back(random_vector(size_t(m * c / group * kh * kw), 11));
            const uint32_t w = b.tensor("w", {m, c / group, kh, kw}, &data.back());
            uint32_t bt = CO_UP_NO_TENSOR;
            if (bias) {
              data.push_back(random_vector(size_t(m), 12));
              bt = b.tensor("b", {m}, &data.back());
            }
            const int64_t oh = (x_dims[2] + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) / strides[0] + 1;
            const int64_t ow = (x_dims[3] + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) / strides[1] + 1;
            const uint32_t y = b.tensor("y", {x_dims[0], m, oh, ow});
            b.node("conv", "Conv", 0, {x, w, bt}, y,
                   conv_attrs(b, strides, pads, dilations, group, act));
            inputs = {x};
            output = y;
          }};
}

OpCase fc_case(std::string name, int64_t batch, std::vector<int64_t> x_dims, int64_t m,
               const char* act) {
  return {name, [=](GraphBuilder& b, std::deque<std::vector<float>>& data,
                    std::vector<uint32_t>& inputs, uint32_t& output) {
            int64_t k = 1;
            for (size_t i = 1; i < x_dims.size(); ++i) k *= x_dims[i];
            const uint32_t x = b.tensor("x", x_dims);
            data.push_back(random_vector(size_t(m * k), 21));
            const uint32_t w = b.tensor("w", {m, k}, &data.back());
            data.push_back(random_vector(size_t(m), 22));
            const uint32_t bt = b.tensor("b", {m}, &data.back());
            const uint32_t y = b.tensor("y", {batch, m});
            b.node("fc", "FullyConnected", 0, {x, w, bt}, y, {GraphBuilder::str("activation", act)});
            inputs = {x};
            output = y;
          }};
}

OpCase pool_case(std::string name, const char* op, std::vector<int64_t> x_dims,
                 std::vector<int64_t> kernel, std::vector<int64_t> strides,
                 std::vector<int64_t> pads, int64_t ceil_mode, int64_t include_pad,
                 std::vector<int64_t> y_dims) {
  return {name, [=](GraphBuilder& b, std::deque<std::vector<float>>&, std::vector<uint32_t>& inputs,
                    uint32_t& output) {
            const uint32_t x = b.tensor("x", x_dims);
            const uint32_t y = b.tensor("y", y_dims);
            std::vector<co_up_attr> attrs = {b.ints("kernel_shape", kernel), b.ints("strides", strides),
                                             b.ints("pads", pads),
                                             GraphBuilder::integer("ceil_mode", ceil_mode)};
            if (std::string(op) == "AveragePool") {
              attrs.push_back(GraphBuilder::integer("count_include_pad", include_pad));
            }
            b.node("pool", op, 0, {x}, y, attrs);
            inputs = {x};
            output = y;
          }};
}

// A unary op with the output shape given (same as input when empty).
OpCase unary_case(std::string name, const char* op, std::vector<int64_t> x_dims,
                  std::vector<int64_t> y_dims, std::function<std::vector<co_up_attr>(GraphBuilder&)> attrs) {
  return {name, [=](GraphBuilder& b, std::deque<std::vector<float>>&, std::vector<uint32_t>& inputs,
                    uint32_t& output) {
            const uint32_t x = b.tensor("x", x_dims);
            const uint32_t y = b.tensor("y", y_dims.empty() ? x_dims : y_dims);
            b.node("op", op, 0, {x}, y, attrs ? attrs(b) : std::vector<co_up_attr>{});
            inputs = {x};
            output = y;
          }};
}

std::vector<OpCase> all_cases() {
  using B = GraphBuilder;
  std::vector<OpCase> cases = {
      conv_case("Conv3x3Pad1BiasRelu", {1, 8, 12, 12}, 16, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, "relu", true),
      conv_case("Conv5x5Stride2AsymmetricPadsRelu6", {1, 3, 17, 15}, 6, 5, 5, {2, 2}, {0, 1, 1, 0}, {1, 1}, 1, "relu6", false),
      conv_case("Conv1x1DirectBatch2", {2, 16, 7, 9}, 24, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "none", true),
      conv_case("Conv1x1Stride2", {1, 16, 8, 8}, 8, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, "none", true),
      // A 1x1 output plane (MobileNet's classifier), batch 2: one GEMV per image.
      conv_case("Conv1x1OnePixelGemvBatch2", {2, 40, 1, 1}, 30, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "relu", true),
      // A 3x3 window over a 3x3 input: im2col, then GEMV.
      conv_case("Conv3x3ToOnePixel", {1, 5, 3, 3}, 7, 3, 3, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "none", true),
      conv_case("ConvGrouped", {1, 8, 10, 10}, 12, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, "relu", true),
      conv_case("ConvDilated", {1, 4, 13, 13}, 5, 3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1, "none", true),
      // More groups than the plugin runs as one GEMM each: CLBlast's strided batched GEMM.
      conv_case("ConvGrouped16Batched", {1, 32, 9, 9}, 48, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 16, "relu", true),
      conv_case("ConvAlexNetConv1Shape", {1, 3, 67, 67}, 16, 11, 11, {4, 4}, {0, 0, 0, 0}, {1, 1}, 1, "relu", true),
      conv_case("DepthwiseStride2", {1, 8, 15, 15}, 8, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 8, "relu6", true),
      conv_case("DepthwiseMultiplier2", {2, 4, 9, 9}, 8, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 4, "none", false),
      fc_case("FullyConnectedBatch1", 1, {1, 300}, 70, "relu"),
      fc_case("FullyConnectedBatch3From4D", 3, {3, 4, 5, 5}, 17, "none"),
      pool_case("MaxPool3x3Stride2Ceil", "MaxPool", {1, 3, 14, 14}, {3, 3}, {2, 2}, {0, 0, 0, 0}, 1, 0, {1, 3, 7, 7}),
      pool_case("MaxPoolPadded", "MaxPool", {1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0, {1, 2, 5, 5}),
      pool_case("AveragePoolExcludePad", "AveragePool", {1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1, 0, {1, 2, 5, 5}),
      pool_case("AveragePoolIncludePadCeil", "AveragePool", {2, 2, 10, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 1, 1, {2, 2, 6, 6}),
      unary_case("GlobalAveragePool", "GlobalAveragePool", {2, 5, 7, 7}, {2, 5, 1, 1}, nullptr),
      unary_case("GlobalMaxPool", "GlobalMaxPool", {1, 5, 6, 4}, {1, 5, 1, 1}, nullptr),
      unary_case("Relu", "Relu", {1, 3, 5, 7}, {}, nullptr),
      unary_case("Clip", "Clip", {1, 3, 5, 7}, {}, [](B&) {
        return std::vector<co_up_attr>{B::real("min", -0.25), B::real("max", 0.5)};
      }),
      unary_case("Sigmoid", "Sigmoid", {1, 3, 5, 7}, {}, nullptr),
      unary_case("HardSwish", "HardSwish", {1, 3, 5, 7}, {}, nullptr),
      unary_case("LRN", "LRN", {1, 7, 5, 5}, {}, [](B&) {
        return std::vector<co_up_attr>{B::integer("size", 5), B::real("alpha", 1e-1),
                                       B::real("beta", 0.75), B::real("bias", 2.0)};
      }),
      // A plane of 99 elements: more than one ROW_CHUNK (64) per work-item; beta other than 0.75
      // (which the kernel computes with rsqrt).
      unary_case("LRNPlaneOverOneChunk", "LRN", {2, 6, 9, 11}, {}, [](B&) {
        return std::vector<co_up_attr>{B::integer("size", 3), B::real("alpha", 1e-1),
                                       B::real("beta", 0.6), B::real("bias", 1.0)};
      }),
      unary_case("SoftmaxVector", "Softmax", {2, 1000}, {}, [](B&) {
        return std::vector<co_up_attr>{B::integer("axis", 1)};
      }),
      unary_case("SoftmaxChannels", "Softmax", {1, 4, 3, 3}, {}, [](B&) {
        return std::vector<co_up_attr>{B::integer("axis", 1)};
      }),
      unary_case("Flatten", "Flatten", {2, 3, 4, 5}, {2, 60}, [](B&) {
        return std::vector<co_up_attr>{B::integer("axis", 1)};
      }),
      unary_case("Reshape", "Reshape", {1, 6, 2, 2}, {1, 24}, [](B& b) {
        return std::vector<co_up_attr>{b.ints("shape", {1, 24})};
      }),
      unary_case("Identity", "Identity", {1, 3, 4, 4}, {}, nullptr),
  };
  cases.push_back({"BatchNormalization", [](GraphBuilder& b, std::deque<std::vector<float>>& data,
                                            std::vector<uint32_t>& inputs, uint32_t& output) {
                     const uint32_t x = b.tensor("x", {2, 6, 4, 5});
                     std::vector<uint32_t> in = {x};
                     const char* names[] = {"scale", "bias", "mean", "var"};
                     for (int i = 0; i < 4; ++i) {
                       data.push_back(random_vector(6, 31 + i, i == 3 ? 0.5f : -1.0f, i == 3 ? 2.0f : 1.0f));
                       in.push_back(b.tensor(names[i], {6}, &data.back()));
                     }
                     const uint32_t y = b.tensor("y", {2, 6, 4, 5});
                     b.node("bn", "BatchNormalization", 0, in, y, {GraphBuilder::real("epsilon", 1e-5)});
                     inputs = {x};
                     output = y;
                   }});
  cases.push_back({"ConcatChannels", [](GraphBuilder& b, std::deque<std::vector<float>>&,
                                        std::vector<uint32_t>& inputs, uint32_t& output) {
                     const uint32_t a = b.tensor("a", {2, 3, 4, 4});
                     const uint32_t c = b.tensor("c", {2, 5, 4, 4});
                     const uint32_t d = b.tensor("d", {2, 1, 4, 4});
                     const uint32_t y = b.tensor("y", {2, 9, 4, 4});
                     b.node("concat", "Concat", 0, {a, c, d}, y, {GraphBuilder::integer("axis", 1)});
                     inputs = {a, c, d};
                     output = y;
                   }});
  cases.push_back({"AddRelu", [](GraphBuilder& b, std::deque<std::vector<float>>&,
                                 std::vector<uint32_t>& inputs, uint32_t& output) {
                     const uint32_t a = b.tensor("a", {1, 4, 6, 6});
                     const uint32_t c = b.tensor("c", {1, 4, 6, 6});
                     const uint32_t y = b.tensor("y", {1, 4, 6, 6});
                     b.node("add", "Add", 0, {a, c}, y, {GraphBuilder::str("activation", "relu")});
                     inputs = {a, c};
                     output = y;
                   }});
  return cases;
}

class OpenclOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpenclOps, MatchesCpuReferenceWithinTolerance) {
  OPENCL_OR_SKIP();
  ASSERT_TRUE(reference_plugin().ok()) << reference_plugin().error();
  GraphBuilder b;
  std::deque<std::vector<float>> data;
  std::vector<uint32_t> inputs;
  uint32_t output = 0;
  GetParam().build(b, data, inputs, output);
  const co_up_subgraph_desc graph = b.desc(inputs, {output});
  std::vector<std::vector<float>> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(random_vector(size_t(b.count(inputs[i])), 100 + uint32_t(i), -2.0f, 2.0f));
  }
  const auto want = run_subgraph(reference_plugin(), graph, values);
  // Two runs: the second reuses buffers and kernels set up by the first.
  const auto got = run_subgraph(opencl_plugin(), graph, values, {{"cache_dir", "off"}}, 2);
  ASSERT_EQ(want.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(near_reference(want[0], got[0]));
}

INSTANTIATE_TEST_SUITE_P(EveryOperator, OpenclOps, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name; });

co_up_device* try_device(std::vector<std::pair<std::string, std::string>> options, int32_t* code) {
  LoadedPlugin& p = opencl_plugin();
  std::vector<co_up_option> opts;
  for (const auto& [k, v] : options) opts.push_back({k.c_str(), v.c_str()});
  co_up_device* device = nullptr;
  *code = p.take(p.api()->device_create(p.factory(), opts.data(), uint32_t(opts.size()), &device));
  return device;
}

TEST(OpenclErrors, NoMatchingDeviceIsOneLineNamingWhatWasLookedForAndWhatExists) {
  OPENCL_OR_SKIP();
  int32_t code = 0;
  co_up_device* device = try_device({{"processor", "G"}, {"device", "NoSuchGpu-Mali-G999"}}, &code);
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(code, CO_UP_STATUS_INVALID_ARGUMENT);
  const std::string& m = opencl_plugin().last_message();
  EXPECT_NE(m.find("device='NoSuchGpu-Mali-G999'"), std::string::npos) << m;
  EXPECT_NE(m.find("found: platform 0"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  device = try_device({{"platform", "7"}}, &code);
  EXPECT_EQ(device, nullptr);
  EXPECT_NE(opencl_plugin().last_message().find("platform='7'"), std::string::npos);
}

TEST(OpenclErrors, SelectionByIndexAndNameSubstring) {
  OPENCL_OR_SKIP();
  int32_t code = 0;
  co_up_device* device = try_device({{"platform", "0"}, {"device", "0"}, {"cache_dir", "off"}}, &code);
  ASSERT_NE(device, nullptr) << opencl_plugin().last_message();
  opencl_plugin().api()->device_release(device);
  // By name: a piece from the middle of device 0's real name (as the refusal of a name that
  // matches nothing lists it) selects it; the same piece with one character changed does not.
  EXPECT_EQ(try_device({{"device", "NoSuchGpu-Mali-G999"}}, &code), nullptr);
  const std::string listing = opencl_plugin().last_message();
  const std::string marker = "device 0 '";
  const size_t at = listing.find(marker);
  ASSERT_NE(at, std::string::npos) << listing;
  const size_t begin = at + marker.size();
  const std::string name = listing.substr(begin, listing.find('\'', begin) - begin);
  ASSERT_GE(name.size(), 4u) << listing;
  const std::string piece = name.substr(1, std::min<size_t>(name.size() - 2, 12));
  device = try_device({{"device", piece}, {"cache_dir", "off"}}, &code);
  ASSERT_NE(device, nullptr) << "device='" << piece << "' of '" << name << "': "
                             << opencl_plugin().last_message();
  opencl_plugin().api()->device_release(device);
  std::string wrong = piece;
  wrong[wrong.size() / 2] = wrong[wrong.size() / 2] == '#' ? '%' : '#';
  EXPECT_EQ(try_device({{"device", wrong}, {"cache_dir", "off"}}, &code), nullptr) << wrong;
  EXPECT_EQ(code, CO_UP_STATUS_INVALID_ARGUMENT);
}

TEST(OpenclErrors, KernelBuildFailureReportsTheBuildLog) {
  OPENCL_OR_SKIP();
  int32_t code = 0;
  co_up_device* device =
      try_device({{"test_broken_kernel", "1"}, {"cache_dir", "off"}}, &code);
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(code, CO_UP_STATUS_RUNTIME_ERROR);
  const std::string& m = opencl_plugin().last_message();
  EXPECT_NE(m.find("build log:"), std::string::npos) << m;
  EXPECT_NE(m.find("deliberately_broken_for_a_test"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(OpenclErrors, TensorLargerThanTheDeviceCanAllocateIsOutOfMemory) {
  OPENCL_OR_SKIP();
  GraphBuilder b;
  // 2^36 floats = 256 GiB: beyond any device's CL_DEVICE_MAX_MEM_ALLOC_SIZE.
  const uint32_t x = b.tensor("x", {1, 1 << 16, 1 << 10, 1 << 10});
  const uint32_t y = b.tensor("y", {1, 1 << 16, 1 << 10, 1 << 10});
  b.node("relu", "Relu", 0, {x}, y, {});
  const co_up_subgraph_desc graph = b.desc({x}, {y});
  int32_t code = 0;
  co_up_device* device = try_device({{"cache_dir", "off"}}, &code);
  ASSERT_NE(device, nullptr);
  co_up_compiled* compiled = nullptr;
  LoadedPlugin& p = opencl_plugin();
  EXPECT_EQ(p.take(p.api()->compiled_create(device, &graph, &compiled)), CO_UP_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(compiled, nullptr);
  EXPECT_NE(p.last_message().find("tensor 'x'"), std::string::npos) << p.last_message();
  p.api()->device_release(device);
}

struct HookLog {
  std::vector<std::pair<char, uint32_t>> calls;
};

TEST(OpenclContract, HooksBracketEachLayerAndBindInputIsUnsupported) {
  OPENCL_OR_SKIP();
  GraphBuilder b;
  const uint32_t x = b.tensor("x", {1, 2, 4, 4});
  const uint32_t r = b.tensor("r", {1, 2, 4, 4});
  const uint32_t s = b.tensor("s", {1, 2, 4, 4});
  const uint32_t y = b.tensor("y", {1, 32});
  b.node("relu", "Relu", 3, {x}, r, {});
  b.node("sig", "Sigmoid", 4, {r}, s, {});
  b.node("flat", "Flatten", 4, {s}, y, {GraphBuilder::integer("axis", 1)});
  const co_up_subgraph_desc graph = b.desc({x}, {y, r});
  LoadedPlugin& p = opencl_plugin();
  int32_t code = 0;
  co_up_device* device = try_device({{"cache_dir", "off"}}, &code);
  ASSERT_NE(device, nullptr);
  co_up_compiled* compiled = nullptr;
  ASSERT_EQ(p.take(p.api()->compiled_create(device, &graph, &compiled)), CO_UP_STATUS_OK) << p.last_message();
  const std::vector<float> in(32, -1.0f);
  EXPECT_EQ(p.take(p.api()->compiled_bind_input(compiled, 0, in.data())), CO_UP_STATUS_UNSUPPORTED);
  void* ptr = nullptr;
  ASSERT_EQ(p.take(p.api()->compiled_map(compiled, CO_UP_IO_INPUT, 0, &ptr)), CO_UP_STATUS_OK);
  std::memcpy(ptr, in.data(), 32 * sizeof(float));
  // Running while an input is mapped is a call-order error, not undefined behaviour.
  EXPECT_EQ(p.take(p.api()->compiled_run(compiled, nullptr)), CO_UP_STATUS_INVALID_STATE);
  ASSERT_EQ(p.take(p.api()->compiled_unmap(compiled, CO_UP_IO_INPUT, 0)), CO_UP_STATUS_OK);
  HookLog log;
  co_up_run_hooks hooks{};
  hooks.struct_size = sizeof(hooks);
  hooks.user_data = &log;
  hooks.layer_begin = [](void* u, uint32_t l) { static_cast<HookLog*>(u)->calls.push_back({'b', l}); };
  hooks.layer_end = [](void* u, uint32_t l) { static_cast<HookLog*>(u)->calls.push_back({'e', l}); };
  ASSERT_EQ(p.take(p.api()->compiled_run(compiled, &hooks)), CO_UP_STATUS_OK) << p.last_message();
  const std::vector<std::pair<char, uint32_t>> expected = {{'b', 3}, {'e', 3}, {'b', 4}, {'e', 4}};
  EXPECT_EQ(log.calls, expected);
  ASSERT_EQ(p.take(p.api()->compiled_map(compiled, CO_UP_IO_OUTPUT, 0, &ptr)), CO_UP_STATUS_OK);
  EXPECT_NEAR(static_cast<float*>(ptr)[0], 0.5f, 1e-6f);  // sigmoid(relu(-1))
  ASSERT_EQ(p.take(p.api()->compiled_unmap(compiled, CO_UP_IO_OUTPUT, 0)), CO_UP_STATUS_OK);
  ASSERT_EQ(p.take(p.api()->compiled_map(compiled, CO_UP_IO_OUTPUT, 1, &ptr)), CO_UP_STATUS_OK);
  EXPECT_EQ(static_cast<float*>(ptr)[5], 0.0f);
  // Left mapped on purpose: release unmaps it.
  EXPECT_EQ(p.take(p.api()->compiled_map(compiled, CO_UP_IO_OUTPUT, 9, &ptr)), CO_UP_STATUS_INVALID_ARGUMENT);
  p.api()->compiled_release(compiled);
  p.api()->device_release(device);
}

TEST(OpenclContract, SecondDeviceLoadsTheKernelsFromTheBinaryCache) {
  OPENCL_OR_SKIP();
  const std::string dir = ::testing::TempDir() + "co_up_opencl_cache_test";
  std::system(("rm -rf '" + dir + "'").c_str());
  int32_t code = 0;
  namespace fs = std::filesystem;
  auto cache_files = [&] {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
    return files;
  };
  auto bytes_of = [](const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  auto identity = [](const fs::path& file) {  // a rewrite (write + rename) changes the inode
    struct stat st {};
    EXPECT_EQ(::stat(file.c_str(), &st), 0) << file;
    return std::pair<ino_t, int64_t>(st.st_ino, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);
  };
  // The first device builds from source and writes exactly one program binary.
  co_up_device* first = try_device({{"cache_dir", dir}}, &code);
  ASSERT_NE(first, nullptr) << opencl_plugin().last_message();
  opencl_plugin().api()->device_release(first);
  const std::vector<fs::path> files = cache_files();
  ASSERT_EQ(files.size(), 1u);
  const fs::path binary = files[0];
  EXPECT_EQ(binary.extension(), ".bin");
  const std::string built = bytes_of(binary);
  ASSERT_GT(built.size(), 100u);
  const auto written = identity(binary);
  // The second loads it: a valid cached binary is used as it is, never rebuilt and rewritten.
  co_up_device* second = try_device({{"cache_dir", dir}}, &code);
  ASSERT_NE(second, nullptr) << opencl_plugin().last_message();
  opencl_plugin().api()->device_release(second);
  EXPECT_EQ(cache_files().size(), 1u);
  EXPECT_EQ(identity(binary), written) << "a valid cached binary was rewritten (not loaded)";
  EXPECT_EQ(bytes_of(binary), built);
  // A corrupt one is rebuilt from source, not an error, and replaced by a real binary.
  std::ofstream(binary, std::ios::binary | std::ios::trunc) << "garbage\n";
  co_up_device* third = try_device({{"cache_dir", dir}}, &code);
  ASSERT_NE(third, nullptr) << opencl_plugin().last_message();
  opencl_plugin().api()->device_release(third);
  EXPECT_EQ(cache_files().size(), 1u);
  EXPECT_EQ(bytes_of(binary).size(), built.size()) << "the corrupt binary was not replaced";
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace co_up::opencl_test
