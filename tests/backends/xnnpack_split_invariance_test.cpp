// cpu-xnnpack gives the same bytes wherever a mapping cuts a network into sub-graphs. A tensor
// that crosses a sub-graph boundary is held NHWC inside the sub-graph, where the same tensor
// between two rank-N steps of one sub-graph stays row-major; no kernel may compute another sum
// because of that. Checked on a shifted-window transformer's attention at batch 1 (as exported:
// q k^T plus a position bias of the same shape, so that the Add is the NHWC element-wise one,
// Softmax on the last axis, then times v): one sub-graph against the same nodes cut after each
// node, the boundary tensor passed in NCHW and in NHWC.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"

namespace {

// cpu-xnnpack loaded and driven through the ABI as the runtime drives it.
class XnnPlugin {
 public:
  XnnPlugin() {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    const std::string path = std::string(dir ? dir : "plugins") + "/libco_up_cpu_xnnpack.so";
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) throw std::runtime_error(dlerror());
    auto get = reinterpret_cast<co_up_plugin_get_api_fn>(dlsym(handle_, CO_UP_PLUGIN_ENTRY_POINT));
    if (!get) throw std::runtime_error("no entry point in " + path);
    api_ = get(CO_UP_ABI_VERSION_MAJOR, CO_UP_ABI_VERSION_MINOR);
    if (!api_) throw std::runtime_error("ABI version refused by " + path);
    check(api_->factory_create(nullptr, 0, &factory_));
    const co_up_option options[] = {{"processor", "B"}, {"threads", "1"}};
    check(api_->device_create(factory_, options, 2, &device_));
  }
  ~XnnPlugin() {
    if (device_) api_->device_release(device_);
    if (factory_) api_->factory_release(factory_);
    // Never dlclose: XNNPACK's process-wide state outlives a factory.
  }
  XnnPlugin(const XnnPlugin&) = delete;
  XnnPlugin& operator=(const XnnPlugin&) = delete;

  // Compiles `g`, fills its inputs from `inputs` (in the order of g.inputs, each in the layout
  // its descriptor names), runs it and returns its outputs as the runtime would see them.
  std::vector<std::vector<float>> run(const co_up_subgraph_desc& g,
                                      const std::vector<std::vector<float>>& inputs) const {
    co_up_compiled* c = nullptr;
    check(api_->compiled_create(device_, &g, &c));
    for (uint32_t i = 0; i < g.input_count; ++i) {
      void* p = nullptr;
      check(api_->compiled_map(c, CO_UP_IO_INPUT, i, &p));
      std::memcpy(p, inputs.at(i).data(), inputs[i].size() * sizeof(float));
      check(api_->compiled_unmap(c, CO_UP_IO_INPUT, i));
    }
    check(api_->compiled_run(c, nullptr));
    std::vector<std::vector<float>> outputs;
    for (uint32_t i = 0; i < g.output_count; ++i) {
      const co_up_tensor_desc& t = g.tensors[g.outputs[i]];
      int64_t n = 1;
      for (uint32_t k = 0; k < t.rank; ++k) n *= t.dims[k];
      void* p = nullptr;
      check(api_->compiled_map(c, CO_UP_IO_OUTPUT, i, &p));
      outputs.emplace_back(static_cast<const float*>(p), static_cast<const float*>(p) + n);
      check(api_->compiled_unmap(c, CO_UP_IO_OUTPUT, i));
    }
    api_->compiled_release(c);
    return outputs;
  }

 private:
  void check(co_up_status* s) const {
    if (!s) return;
    const std::string message = s->message ? s->message : "";
    const int32_t code = s->code;
    api_->status_release(s);
    if (code != CO_UP_STATUS_OK) throw std::runtime_error(message);
  }

  void* handle_ = nullptr;
  const co_up_plugin_api* api_ = nullptr;
  co_up_factory* factory_ = nullptr;
  co_up_device* device_ = nullptr;
};

// The attention's tensors and nodes by number: q [b, h, t, f], k^T [b, h, f, t], the bias
// [b, h, t, t] (a constant), v [b, h, t, f], then each node's output.
enum Tensor : int { kQ, kKt, kBias, kV, kScores, kBiased, kProbs, kOut, kTensors };
struct Node {
  const char* op;
  std::vector<int> in;
  int out;
  uint32_t layer;  // as co_up --units=ops groups them
};
const std::vector<Node> kNodes = {{"MatMul", {kQ, kKt}, kScores, 0},
                                  {"Add", {kScores, kBias}, kBiased, 0},
                                  {"Softmax", {kBiased}, kProbs, 0},
                                  {"MatMul", {kProbs, kV}, kOut, 1}};

class Attention {
 public:
  Attention(int64_t batch, int64_t heads, int64_t tokens, int64_t features) {
    dims_ = {{batch, heads, tokens, features}, {batch, heads, features, tokens},
             {batch, heads, tokens, tokens},   {batch, heads, tokens, features},
             {batch, heads, tokens, tokens},   {batch, heads, tokens, tokens},
             {batch, heads, tokens, tokens},   {batch, heads, tokens, features}};
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (int t : {kQ, kKt, kBias, kV}) {
      int64_t n = 1;
      for (int64_t d : dims_[size_t(t)]) n *= d;
      data_[t].resize(size_t(n));
      for (float& x : data_[t]) x = dist(rng);
    }
  }

  // Runs nodes [0, cut) as one sub-graph and [cut, end) as another (cut 0: all in one), the
  // tensors between them in `boundary_layout`; returns the attention's output.
  std::vector<float> run(const XnnPlugin& plugin, size_t cut, int32_t boundary_layout) const {
    std::map<int, std::vector<float>> values = data_;
    for (const auto& [first, last] : cut == 0 ? std::vector<std::pair<size_t, size_t>>{{0, kNodes.size()}}
                                              : std::vector<std::pair<size_t, size_t>>{{0, cut}, {cut, kNodes.size()}}) {
      // Inputs: what the part reads and no node of it writes; outputs: what it writes and a
      // later node (or the caller) reads.
      std::set<int> written, read_later;
      std::vector<int> inputs, outputs;
      for (size_t n = first; n < last; ++n) written.insert(kNodes[n].out);
      for (size_t n = last; n < kNodes.size(); ++n) read_later.insert(kNodes[n].in.begin(), kNodes[n].in.end());
      read_later.insert(kOut);
      co_up::testing::GraphBuilder b;
      std::map<int, uint32_t> index;
      auto tensor = [&](int t) {
        if (index.count(t)) return index[t];
        const bool constant = t == kBias;
        // An intermediate tensor that is this part's input or output crosses the cut.
        const bool crosses = written.count(t) ? read_later.count(t) > 0 : !constant;
        const bool boundary = crosses && t >= kScores && t != kOut;
        index[t] = b.tensor(names_[size_t(t)], dims_[size_t(t)], constant ? &data_.at(t) : nullptr,
                            boundary ? boundary_layout : CO_UP_LAYOUT_NCHW);
        if (!constant && !written.count(t)) inputs.push_back(t);
        if (written.count(t) && read_later.count(t)) outputs.push_back(t);
        return index[t];
      };
      for (size_t n = first; n < last; ++n) {
        std::vector<uint32_t> in;
        for (int t : kNodes[n].in) in.push_back(tensor(t));
        std::vector<co_up_attr> attrs;
        const std::string op = kNodes[n].op;
        if (op == "Softmax") attrs.push_back(co_up::testing::GraphBuilder::integer("axis", 3));
        if (op == "Add") attrs.push_back(co_up::testing::GraphBuilder::str("activation", "none"));
        b.node(kNodes[n].op, kNodes[n].op, kNodes[n].layer, std::move(in), tensor(kNodes[n].out), std::move(attrs));
      }
      std::vector<uint32_t> in_index, out_index;
      std::vector<std::vector<float>> in_values;
      for (int t : inputs) {
        in_index.push_back(index[t]);
        in_values.push_back(values.at(t));
      }
      for (int t : outputs) out_index.push_back(index[t]);
      const co_up_subgraph_desc g = b.desc(in_index, out_index, "attention");
      const std::vector<std::vector<float>> out = plugin.run(g, in_values);
      for (size_t i = 0; i < outputs.size(); ++i) values[outputs[i]] = out[i];
    }
    return values.at(kOut);
  }

 private:
  static constexpr const char* names_[kTensors] = {"q", "k_t", "bias", "v", "scores", "biased", "probs", "out"};
  std::vector<std::vector<int64_t>> dims_;
  std::map<int, std::vector<float>> data_;
};

const XnnPlugin& plugin() {
  static const XnnPlugin p;
  return p;
}

std::string where(int64_t batch, int64_t heads, int64_t tokens, int64_t features) {
  return "batch " + std::to_string(batch) + ", heads " + std::to_string(heads) + ", tokens " +
         std::to_string(tokens) + ", features " + std::to_string(features);
}

TEST(XnnpackSplitInvariance, AttentionGivesTheSameBytesCutAnywhere) {
  for (const auto& [batch, heads, tokens, features] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{{1, 4, 16, 8}, {1, 3, 7, 5}, {2, 2, 16, 8}}) {
    const Attention attention(batch, heads, tokens, features);
    const std::vector<float> whole = attention.run(plugin(), 0, CO_UP_LAYOUT_NCHW);
    for (size_t cut = 1; cut < kNodes.size(); ++cut) {
      for (const int32_t layout : {CO_UP_LAYOUT_NCHW, CO_UP_LAYOUT_NHWC}) {
        const std::vector<float> split = attention.run(plugin(), cut, layout);
        ASSERT_EQ(split.size(), whole.size());
        size_t differ = 0, first = 0;
        for (size_t i = 0; i < whole.size(); ++i) {
          if (std::memcmp(&split[i], &whole[i], sizeof(float)) != 0 && differ++ == 0) first = i;
        }
        EXPECT_EQ(differ, 0u) << where(batch, heads, tokens, features) << ", cut after node "
                              << cut - 1 << " (" << kNodes[cut - 1].op << "), boundary "
                              << (layout == CO_UP_LAYOUT_NHWC ? "NHWC" : "NCHW") << ": "
                              << differ << " outputs differ from one sub-graph's, the first at "
                              << first << " (" << split[first] << " vs " << whole[first] << ")";
      }
    }
  }
}

}  // namespace
