// The model zoo: unit layout, output shape, total MACs against published figures, small-input
// builds, weight determinism, and the errors for bad names and options.

#include "graph/zoo/zoo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"

namespace co_up::graph {
namespace {

// Zero-filled constants: the shapes are all these tests need at full size, and it keeps the
// 61 M-parameter AlexNet cheap under sanitizers.
class ZeroWeights final : public WeightSource {
 public:
  std::vector<float> load(const std::string&, const TensorDesc& desc, ConstantRole,
                          int64_t) override {
    return std::vector<float>(static_cast<size_t>(desc.element_count()), 0.0f);
  }
};

// Every network but Inception-v3 builds at 64 (AlexNet's minimum is 55: conv1 and three stride-2
// pools leave 1x1 before fc6; Inception-v3's is 75); small inputs keep sanitizer runs fast.
constexpr int64_t kSmallImageSize = 64;

struct Expected {
  const char* name;
  uint32_t layers;
  int64_t classes;
  // Published multiply-accumulates at the default input size:
  //  alexnet    0.727 G  (bvlc_alexnet at 227, grouped; convnet-burden)
  //  googlenet  1.58 G   (bvlc_googlenet with its 5x5 branches; Szegedy et al. round to "1.5
  //                       billion"; torchvision's 1.51 G replaces the 5x5s by 3x3s)
  //  mobilenet  0.569 G  (Howard et al., Table 1: 569 M mult-adds)
  //  resnet50   4.09 G   (torchvision resnet50, the v1.5 stride convention used here)
  //  squeezenet 0.82 G   (torchvision squeezenet1_0 at 224)
  //  inception_v3 5.71 G (torchvision inception_v3 at 299 without the auxiliary classifier)
  double published_gmacs;
  const char* first_unit;
  const char* last_unit;
  // Smallest square input that reaches the classifier (the builder's shape rules, Caffe ceil
  // pooling); MobileNet and ResNet50 pad every strided layer, so even 1x1 gets through.
  int64_t min_image_size;
};

constexpr Expected kNetworks[] = {
    {"alexnet", 8, 1000, 0.727, "conv1", "fc8", 55},
    {"googlenet", 11, 1000, 1.58, "conv1", "inception_5b", 47},
    {"mobilenet", 14, 1001, 0.569, "Conv2d_0", "Conv2d_13", 1},
    {"resnet50", 18, 1000, 4.09, "conv1", "fc1000", 1},
    {"squeezenet", 10, 1000, 0.82, "conv1", "conv10", 29},
    {"inception_v3", 13, 1000, 5.71, "stem_a", "Mixed_7c", 75},
};

// The small size a test builds a network at: 64, or the network's minimum when that is larger.
int64_t small_size(const Expected& e) { return std::max(kSmallImageSize, e.min_image_size); }

int64_t total_macs(const Graph& g) {
  int64_t macs = 0;
  for (const Node& n : g.nodes()) macs += node_macs(g, n);
  return macs;
}

const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes()) {
    if (n.name == name && n.op != OpType::kInput) return &n;
  }
  return nullptr;
}

std::string unit_of(const Graph& g, const std::string& node_name) {
  const Node* n = find_node(g, node_name);
  if (n == nullptr) return "<no node '" + node_name + "'>";
  return g.layers().at(n->layer).name;
}

const Tensor* find_constant(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors()) {
    if (t.is_constant && t.name == name) return &t;
  }
  return nullptr;
}

class ZooNetworkTest : public ::testing::TestWithParam<Expected> {};

TEST_P(ZooNetworkTest, DefaultSizeHasPublishedShapeAndWork) {
  const Expected& e = GetParam();
  const ZooEntry* entry = find_zoo_entry(e.name);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->layer_count, e.layers);

  ZeroWeights weights;
  Graph g = build_zoo_graph(e.name, weights, {});
  EXPECT_NO_THROW(g.validate());
  EXPECT_EQ(g.name(), e.name);
  EXPECT_EQ(g.layer_count(), e.layers);

  ASSERT_EQ(g.inputs().size(), 1u);
  const int64_t size = entry->default_image_size;
  EXPECT_EQ(g.tensor(g.inputs()[0]).desc.shape, (std::vector<int64_t>{1, 3, size, size}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.tensor(g.outputs()[0]).desc.shape, (std::vector<int64_t>{1, e.classes}));
  EXPECT_EQ(g.node(g.tensor(g.outputs()[0]).producer).op, OpType::kSoftmax);

  const double gmacs = static_cast<double>(total_macs(g)) * 1e-9;
  EXPECT_NEAR(gmacs, e.published_gmacs, 0.03 * e.published_gmacs) << e.name;

  const std::vector<LayerUnit> units = g.layers();
  ASSERT_EQ(units.size(), e.layers);
  EXPECT_EQ(units.front().name, e.first_unit);
  EXPECT_EQ(units.back().name, e.last_unit);
  std::set<std::string> unit_names;
  for (const LayerUnit& u : units) {
    EXPECT_FALSE(u.nodes.empty()) << u.name;
    EXPECT_TRUE(unit_names.insert(u.name).second) << "duplicate unit " << u.name;
    // Every unit does some arithmetic, so no --order letter maps an empty step.
    int64_t unit_macs = 0;
    for (NodeId id : u.nodes) unit_macs += node_macs(g, g.node(id));
    EXPECT_GT(unit_macs, 0) << u.name;
  }
}

TEST_P(ZooNetworkTest, NamesAreUnique) {
  ZeroWeights weights;
  Graph g = build_zoo_graph(GetParam().name, weights, {.image_size = small_size(GetParam())});
  std::set<std::string> names;
  for (const Node& n : g.nodes()) EXPECT_TRUE(names.insert(n.name).second) << n.name;
  for (const Tensor& t : g.tensors()) {
    if (t.is_constant) {
      EXPECT_TRUE(names.insert(t.name).second) << t.name;
    }
  }
}

TEST_P(ZooNetworkTest, BuildsSmallWithBatchTwo) {
  const Expected& e = GetParam();
  SeededWeights weights(7);
  Graph g = build_zoo_graph(e.name, weights, {.image_size = small_size(e), .batch = 2});
  EXPECT_NO_THROW(g.validate());
  EXPECT_EQ(g.layer_count(), e.layers);
  EXPECT_EQ(g.tensor(g.inputs()[0]).desc.shape,
            (std::vector<int64_t>{2, 3, small_size(e), small_size(e)}));
  EXPECT_EQ(g.tensor(g.outputs()[0]).desc.shape, (std::vector<int64_t>{2, e.classes}));
}

TEST_P(ZooNetworkTest, WeightsDependOnSeedOnly) {
  const char* name = GetParam().name;
  const ZooOptions small{.image_size = small_size(GetParam())};
  SeededWeights a(1), a_again(1), b(2);
  Graph ga = build_zoo_graph(name, a, small);
  Graph ga_again = build_zoo_graph(name, a_again, small);
  Graph gb = build_zoo_graph(name, b, small);
  ASSERT_EQ(ga.tensors().size(), ga_again.tensors().size());
  ASSERT_EQ(ga.tensors().size(), gb.tensors().size());
  size_t constants = 0;
  size_t differing = 0;
  for (size_t i = 0; i < ga.tensors().size(); ++i) {
    const Tensor& t = ga.tensors()[i];
    if (!t.is_constant) continue;
    ++constants;
    ASSERT_EQ(t.data.size(), static_cast<size_t>(t.desc.element_count())) << t.name;
    EXPECT_EQ(t.data, ga_again.tensors()[i].data) << t.name;
    if (t.data != gb.tensors()[i].data) ++differing;
  }
  EXPECT_GT(constants, 0u);
  EXPECT_EQ(differing, constants);
}

TEST_P(ZooNetworkTest, RejectsBadOptions) {
  ZeroWeights weights;
  EXPECT_THROW(build_zoo_graph(GetParam().name, weights, {.image_size = -1}), InputError);
  EXPECT_THROW(build_zoo_graph(GetParam().name, weights, {.image_size = small_size(GetParam()), .batch = 0}),
               InputError);
}

TEST_P(ZooNetworkTest, SmallestImageSize) {
  const Expected& e = GetParam();
  ZeroWeights weights;
  Graph g = build_zoo_graph(e.name, weights, {.image_size = e.min_image_size});
  EXPECT_EQ(g.tensor(g.outputs()[0]).desc.shape, (std::vector<int64_t>{1, e.classes}));
  if (e.min_image_size > 1) {
    // Too small for the strides: the shape error (naming the node) is an InputError.
    EXPECT_THROW(build_zoo_graph(e.name, weights, {.image_size = e.min_image_size - 1}),
                 InputError);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooNetworkTest, ::testing::ValuesIn(kNetworks),
                         [](const ::testing::TestParamInfo<Expected>& info) {
                           return std::string(info.param.name);
                         });

TEST(Zoo, EntriesListTheNetworks) {
  std::vector<std::string> names;
  for (const ZooEntry& e : zoo_entries()) {
    names.push_back(e.name);
    EXPECT_FALSE(e.description.empty());
    for (int c = 0; c < 3; ++c) EXPECT_GT(e.std[c], 0.0f) << e.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"alexnet", "googlenet", "mobilenet", "resnet50",
                                             "squeezenet", "inception_v3"}));
  EXPECT_EQ(find_zoo_entry("alexnet")->default_image_size, 227);
  EXPECT_EQ(find_zoo_entry("nope"), nullptr);
  // Caffe models take BGR minus the 0..255 ImageNet mean; index 0 is blue.
  const ZooEntry& caffe = *find_zoo_entry("googlenet");
  EXPECT_TRUE(caffe.bgr);
  EXPECT_NEAR(caffe.mean[0] / caffe.std[0], 104.0f, 1e-3f);
  EXPECT_FALSE(find_zoo_entry("resnet50")->bgr);
}

TEST(Zoo, UnknownNameThrowsInputErrorListingKnownNames) {
  ZeroWeights weights;
  try {
    build_zoo_graph("lenet", weights, {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown graph 'lenet'"), std::string::npos) << what;
    EXPECT_NE(what.find("alexnet, googlenet, mobilenet, resnet50, squeezenet"), std::string::npos)
        << what;
  }
}

TEST(Zoo, AlexNetHasGroupedConvolutionsAndLrn) {
  ZeroWeights weights;
  Graph g = build_alexnet(weights, {});
  EXPECT_EQ(find_constant(g, "conv2_w")->desc.shape, (std::vector<int64_t>{256, 48, 5, 5}));
  EXPECT_EQ(find_node(g, "conv4")->attrs.get_int("group"), 2);
  EXPECT_EQ(find_node(g, "conv3")->attrs.get_int("group"), 1);
  EXPECT_EQ(find_constant(g, "fc6_w")->desc.shape, (std::vector<int64_t>{4096, 9216}));
  EXPECT_EQ(find_node(g, "norm1")->op, OpType::kLrn);
  EXPECT_EQ(unit_of(g, "pool5"), "conv5");
}

TEST(Zoo, GoogLeNetPoolsAttachToThePrecedingModule) {
  ZeroWeights weights;
  Graph g = build_googlenet(weights, {});
  EXPECT_EQ(unit_of(g, "pool3/3x3_s2"), "inception_3b");
  EXPECT_EQ(unit_of(g, "pool4/3x3_s2"), "inception_4e");
  EXPECT_EQ(unit_of(g, "loss3/classifier"), "inception_5b");
  EXPECT_EQ(unit_of(g, "pool2/3x3_s2"), "conv2");
  EXPECT_EQ(g.tensor(find_node(g, "inception_3a/output")->outputs[0]).desc.shape,
            (std::vector<int64_t>{1, 256, 28, 28}));
  EXPECT_EQ(g.tensor(find_node(g, "inception_5b/output")->outputs[0]).desc.shape,
            (std::vector<int64_t>{1, 1024, 7, 7}));
}

TEST(Zoo, InceptionV3ModulesAndRectangularKernels) {
  ZeroWeights weights;
  Graph g = build_inception_v3(weights, {});
  EXPECT_EQ(find_constant(g, "Mixed_6b/branch7x7_2_w")->desc.shape, (std::vector<int64_t>{128, 128, 1, 7}));
  EXPECT_EQ(find_constant(g, "Mixed_6b/branch7x7_3_w")->desc.shape, (std::vector<int64_t>{192, 128, 7, 1}));
  EXPECT_EQ(find_node(g, "Mixed_6b/branch7x7_2")->attrs.get_ints("pads"), (std::vector<int64_t>{0, 3, 0, 3}));
  EXPECT_EQ(unit_of(g, "maxpool2"), "stem_b");
  EXPECT_EQ(unit_of(g, "fc"), "Mixed_7c");
  const auto shape = [&](const char* node) { return g.tensor(find_node(g, node)->outputs[0]).desc.shape; };
  EXPECT_EQ(shape("Mixed_5d/output"), (std::vector<int64_t>{1, 288, 35, 35}));
  EXPECT_EQ(shape("Mixed_6e/output"), (std::vector<int64_t>{1, 768, 17, 17}));
  EXPECT_EQ(shape("Mixed_7c/output"), (std::vector<int64_t>{1, 2048, 8, 8}));
  try {
    build_inception_v3(weights, {.image_size = 74});
    FAIL() << "built inception_v3 at 74x74";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("at least 75"), std::string::npos) << e.what();
  }
}

TEST(Zoo, MobileNetUsesTensorFlowSamePadding) {
  ZeroWeights weights;
  Graph g = build_mobilenet(weights, {});
  EXPECT_EQ(find_node(g, "Conv2d_0")->attrs.get_ints("pads"), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(find_node(g, "Conv2d_1_depthwise/depthwise")->attrs.get_ints("pads"),
            (std::vector<int64_t>{1, 1, 1, 1}));
  const Node& dw2 = *find_node(g, "Conv2d_2_depthwise/depthwise");
  EXPECT_EQ(dw2.attrs.get_int("group"), 64);
  EXPECT_EQ(dw2.attrs.get_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(find_constant(g, "Conv2d_2_depthwise/depthwise_b"), nullptr);  // BN follows
  EXPECT_NE(find_constant(g, "Logits/Conv2d_1c_1x1_b"), nullptr);
  EXPECT_EQ(g.tensor(find_node(g, "Conv2d_13_pointwise/Relu6")->outputs[0]).desc.shape,
            (std::vector<int64_t>{1, 1024, 7, 7}));
}

TEST(Zoo, ResNet50StridesInThe3x3AndProjectsFirstBlocks) {
  ZeroWeights weights;
  Graph g = build_resnet50(weights, {});
  EXPECT_EQ(find_node(g, "res3a_branch2a")->attrs.get_ints("strides"),
            (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(find_node(g, "res3a_branch2b")->attrs.get_ints("strides"),
            (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(find_node(g, "res3a_branch1")->attrs.get_ints("strides"), (std::vector<int64_t>{2, 2}));
  for (const char* first : {"res2a_branch1", "res3a_branch1", "res4a_branch1", "res5a_branch1"}) {
    EXPECT_NE(find_node(g, first), nullptr) << first;
  }
  EXPECT_EQ(find_node(g, "res2b_branch1"), nullptr);
  EXPECT_EQ(find_node(g, "res5c")->op, OpType::kAdd);
  EXPECT_EQ(g.tensor(find_node(g, "res5c_relu")->outputs[0]).desc.shape,
            (std::vector<int64_t>{1, 2048, 7, 7}));
  EXPECT_EQ(unit_of(g, "pool1"), "conv1");
}

TEST(Zoo, SqueezeNetPoolsAttachToThePrecedingFire) {
  ZeroWeights weights;
  Graph g = build_squeezenet(weights, {});
  EXPECT_EQ(unit_of(g, "pool1"), "conv1");
  EXPECT_EQ(unit_of(g, "pool4"), "fire4");
  EXPECT_EQ(unit_of(g, "pool8"), "fire8");
  EXPECT_EQ(unit_of(g, "pool10"), "conv10");
  EXPECT_EQ(g.tensor(find_node(g, "fire9/concat")->outputs[0]).desc.shape,
            (std::vector<int64_t>{1, 512, 13, 13}));
}

}  // namespace
}  // namespace co_up::graph
