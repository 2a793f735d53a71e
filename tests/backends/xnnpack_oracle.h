// cpu-xnnpack against cpu-reference (the oracle), one small sub-graph at a time through the C ABI:
// the harness shared by cpu-xnnpack's operator tests (xnnpack_conformance_test for the CNN
// operators, xnnpack_tensor_ops_test for the rank-N ones). Tolerance: max |xnnpack - reference|
// <= 1e-4 * max(output range, 1e-3); 1 and 2 threads agree bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"
#include "tests/backends/plugin_harness.h"

namespace co_up::testing::xnnpack_oracle {

constexpr double kRelTolerance = 1e-4;

using Plugin = AbiPlugin;

inline const Plugin& xnn() {
  static const Plugin p("libco_up_cpu_xnnpack.so");
  return p;
}
inline const Plugin& ref() {
  static const Plugin p("libco_up_cpu_reference.so");
  return p;
}

// A one-node (or few-node) sub-graph whose pointers stay valid as long as the builder: the
// shared GraphBuilder (abi_test_support.h) plus what conformance needs on top of it: seeded
// random data for every tensor (constants point into it, inputs are fed from it), generated
// tensor names, attributes collected for the next node, and one layer per node.
class Desc {
 public:
  uint32_t tensor(std::vector<int64_t> dims, bool constant = false, uint64_t seed = 0,
                  float scale = 1.0f) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    const size_t index = b_.tensors().size();
    data_.emplace_back(size_t(n));
    std::mt19937 rng(uint32_t(seed * 7919 + index));
    std::uniform_real_distribution<float> dist(-scale, scale);
    for (float& v : data_.back()) v = dist(rng);
    names_.push_back("t" + std::to_string(index));
    const int32_t layout = dims.size() == 4 ? CO_UP_LAYOUT_NCHW : CO_UP_LAYOUT_ANY;
    return b_.tensor(names_.back().c_str(), std::move(dims), constant ? &data_.back() : nullptr,
                     layout);
  }
  void input(uint32_t t) { inputs_.push_back(t); }
  void output(uint32_t t) { outputs_.push_back(t); }
  void set_layout(uint32_t t, int32_t layout) { b_.set_layout(t, layout); }
  void attr_int(const char* name, int64_t v) { pending_.push_back(GraphBuilder::integer(name, v)); }
  void attr_float(const char* name, double v) { pending_.push_back(GraphBuilder::real(name, v)); }
  void attr_ints(const char* name, std::vector<int64_t> v) {
    pending_.push_back(b_.ints(name, std::move(v)));
  }
  void attr_string(const char* name, const char* v) {
    pending_.push_back(GraphBuilder::str(name, v));
  }
  // Adds a node using the attributes added since the last node; its layer is its index unless
  // `layer` says otherwise (fusions act only within a layer).
  void node(const char* op, std::vector<uint32_t> in, uint32_t out, int64_t layer = -1) {
    b_.node(op, op, uint32_t(layer >= 0 ? layer : int64_t(b_.node_count())), std::move(in), out,
            std::move(pending_));
    pending_.clear();
  }
  const co_up_subgraph_desc& get() {
    desc_ = b_.desc(inputs_, outputs_, "conformance");
    return desc_;
  }
  const std::vector<float>& data(uint32_t t) const { return data_[t]; }
  std::vector<float>& mutable_data(uint32_t t) { return data_[t]; }

 private:
  using GraphBuilder = co_up::testing::GraphBuilder;
  GraphBuilder b_;
  std::deque<std::vector<float>> data_;
  std::deque<std::string> names_;
  std::vector<co_up_attr> pending_;
  std::vector<uint32_t> inputs_, outputs_;
  co_up_subgraph_desc desc_{};
};

// Compiles and runs `d` on a device of `plugin` with `threads` threads; returns output 0.
inline std::vector<float> run_desc(const Plugin& plugin, Desc& d, int threads = 1) {
  co_up_device* device = nullptr;
  auto [code, message] = plugin.make_device({{"processor", "B"}, {"threads", std::to_string(threads)}}, &device);
  if (code != CO_UP_STATUS_OK) throw std::runtime_error(message);
  const co_up_plugin_api* api = plugin.api();
  const co_up_subgraph_desc& g = d.get();
  co_up_compiled* c = nullptr;
  plugin.check(api->compiled_create(device, &g, &c));
  for (uint32_t i = 0; i < g.input_count; ++i) {
    void* p = nullptr;
    plugin.check(api->compiled_map(c, CO_UP_IO_INPUT, i, &p));
    const auto& src = d.data(g.inputs[i]);
    std::copy(src.begin(), src.end(), static_cast<float*>(p));
    plugin.check(api->compiled_unmap(c, CO_UP_IO_INPUT, i));
  }
  // Twice: a second run on the same compiled object must give the same result.
  plugin.check(api->compiled_run(c, nullptr));
  plugin.check(api->compiled_run(c, nullptr));
  void* p = nullptr;
  plugin.check(api->compiled_map(c, CO_UP_IO_OUTPUT, 0, &p));
  const auto& out_t = g.tensors[g.outputs[0]];
  int64_t n = 1;
  for (uint32_t k = 0; k < out_t.rank; ++k) n *= out_t.dims[k];
  std::vector<float> out(static_cast<float*>(p), static_cast<float*>(p) + n);
  plugin.check(api->compiled_unmap(c, CO_UP_IO_OUTPUT, 0));
  api->compiled_release(c);
  api->device_release(device);
  return out;
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  const double range = std::max(double(*hi - *lo), 1e-3);
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - double(want[i]));
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  EXPECT_LE(worst, kRelTolerance * range)
      << what << ": max abs error " << worst << " at " << at << " (got " << got[at] << ", want "
      << want[at] << "), output range " << range;
}

// Runs on both plugins (and xnnpack on 1 and 2 threads, which must agree bit for bit).
inline void conform(Desc& d, const std::string& what) {
  const auto want = run_desc(ref(), d);
  const auto got = run_desc(xnn(), d, 1);
  expect_close(got, want, what);
  const auto got2 = run_desc(xnn(), d, 2);
  EXPECT_EQ(got, got2) << what << ": 1 and 2 threads differ";
}

}  // namespace co_up::testing::xnnpack_oracle
