// cpu-xnnpack's rank-N (transformer) operators against cpu-reference, one small sub-graph each
// through the C ABI: broadcasting binary ops (odd sizes, both operands computed, one constant),
// erf / tanh / exp / sqrt / GELU in both forms, batched MatMul (broadcast batch dims, a constant
// B, tiles cut by sizes that are not multiples of 8 or 32), attention with its Transposes folded
// into the MatMuls, Transpose, Slice, Gather, ReduceMean/Sum, LayerNormalization, Softmax on any
// axis, and rank-N ops meeting the NHWC tensors of the CNN steps. Tolerance: max |xnnpack -
// reference| <= 1e-4 * max(output range, 1e-3); 1 and 2 threads agree bit for bit.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "co_up/plugin_abi.h"
#include "tests/backends/abi_test_support.h"
#include "tests/backends/xnnpack_oracle.h"

namespace {

using namespace co_up::testing::xnnpack_oracle;  // Plugin, xnn(), ref(), Desc, conform(), ...


std::string dims_text(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

TEST(XnnpackTensorOps, BinaryOpsBroadcastOverOddShapes) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{2, 3, 5, 17}, {3, 1, 17}}, {{1, 4, 6, 8}, {8}}, {{5, 1}, {1, 7}},
      {{2, 1, 5, 17}, {1, 3, 5, 1}}, {{3, 33}, {3, 33}}, {{1, 1, 1, 19}, {2, 3, 7, 1}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [da, db] : shapes) {
      for (const bool constant_b : {false, true}) {
        if (std::string(op) == "Add" && da == db) continue;  // same shapes: the base Add
        Desc d;
        const uint32_t a = d.tensor(da, false, 1, 2.0f);
        const uint32_t b = d.tensor(db, constant_b, 2, 2.0f);
        if (std::string(op) == "Div") {
          for (float& v : d.mutable_data(b)) v = v >= 0 ? v + 0.5f : v - 0.5f;
        }
        std::vector<int64_t> out(std::max(da.size(), db.size()));
        for (size_t i = 0; i < out.size(); ++i) {
          const int64_t x = i + da.size() >= out.size() ? da[i + da.size() - out.size()] : 1;
          const int64_t y = i + db.size() >= out.size() ? db[i + db.size() - out.size()] : 1;
          out[i] = std::max(x, y);
        }
        const uint32_t y = d.tensor(out);
        if (std::string(op) == "Add") d.attr_string("activation", "relu");
        d.node(op, {a, b}, y);
        d.input(a);
        if (!constant_b) d.input(b);
        d.output(y);
        conform(d, std::string(op) + " " + dims_text(da) + " " + dims_text(db) + (constant_b ? " constant" : ""));
      }
    }
  }
  {  // Pow by a constant 2 (LayerNorm's variance before fusion) and by a computed exponent.
    Desc d;
    const uint32_t x = d.tensor({3, 7, 11}, false, 3, 2.0f);
    const uint32_t two = d.tensor({1}, true);
    d.mutable_data(two)[0] = 2.0f;
    const uint32_t sq = d.tensor({3, 7, 11});
    d.node("Pow", {x, two}, sq);
    const uint32_t e = d.tensor({7, 1}, false, 4, 1.0f);
    const uint32_t y = d.tensor({3, 7, 11});
    d.node("Pow", {sq, e}, y);  // sq >= 0: no NaN
    d.input(x);
    d.input(e);
    d.output(y);
    conform(d, "Pow");
  }
}

TEST(XnnpackTensorOps, UnaryOpsAndGeluForms) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 7, 33}, {1, 3, 5, 7}, {4099}}) {
    for (const char* op : {"Erf", "Tanh", "Exp", "Sqrt", "Gelu", "GeluTanh"}) {
      Desc d;
      const uint32_t x = d.tensor(dims, false, 5, 6.0f);
      const uint32_t y = d.tensor(dims);
      if (std::string(op) == "Sqrt") {
        const uint32_t e = d.tensor(dims);
        d.node("Exp", {x}, e);
        d.node("Sqrt", {e}, y);
      } else if (std::string(op).rfind("Gelu", 0) == 0) {
        d.attr_string("approximate", std::string(op) == "Gelu" ? "none" : "tanh");
        d.node("Gelu", {x}, y);
      } else {
        d.node(op, {x}, y);
      }
      d.input(x);
      d.output(y);
      conform(d, std::string(op) + " " + dims_text(dims));
    }
  }
}

TEST(XnnpackTensorOps, BatchedMatMulBroadcastsAndCutsTilesAnywhere) {
  struct Case {
    std::vector<int64_t> a, b;
    bool constant_b;
  };
  const std::vector<Case> cases = {
      {{2, 3, 17, 9}, {2, 3, 9, 13}, false}, {{2, 1, 17, 9}, {3, 9, 45}, false},
      {{33, 20}, {20, 35}, false},           {{2, 33, 70}, {70, 35}, true},
      {{1, 1, 1, 16}, {4, 16, 3}, false},    {{3, 8, 32}, {1, 32, 64}, true},
      {{1, 12, 37, 64}, {1, 12, 64, 37}, false}};
  for (const Case& c : cases) {
    Desc d;
    const uint32_t a = d.tensor(c.a, false, 6);
    const uint32_t b = d.tensor(c.b, c.constant_b, 7);
    std::vector<int64_t> out;
    const std::vector<int64_t> ab(c.a.begin(), c.a.end() - 2), bb(c.b.begin(), c.b.end() - 2);
    out.resize(std::max(ab.size(), bb.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t x = i + ab.size() >= out.size() ? ab[i + ab.size() - out.size()] : 1;
      const int64_t y = i + bb.size() >= out.size() ? bb[i + bb.size() - out.size()] : 1;
      out[i] = std::max(x, y);
    }
    out.push_back(c.a[c.a.size() - 2]);
    out.push_back(c.b.back());
    const uint32_t y = d.tensor(out);
    d.node("MatMul", {a, b}, y);
    d.input(a);
    if (!c.constant_b) d.input(b);
    d.output(y);
    conform(d, "MatMul " + dims_text(c.a) + " x " + dims_text(c.b) + (c.constant_b ? " constant" : ""));
  }
}

// Attention as exported: q, k, v [batch, tokens, heads, features] transposed to heads-first (k to
// [.., features, tokens]), q k^T, softmax, x v, transposed back; the Transposes feeding the
// MatMuls are folded, the 4-D tensors between them stay row-major, the output goes back to NHWC
// through a Relu (a CNN step) — and a Mul by a constant scale broadcasts on the scores.
TEST(XnnpackTensorOps, AttentionWithFoldedTransposes) {
  for (const auto& [tokens, heads, features] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {5, 3, 8}, {37, 4, 16}, {65, 2, 33}}) {
    Desc d;
    const uint32_t q = d.tensor({1, tokens, heads, features}, false, 1);
    const uint32_t k = d.tensor({1, tokens, heads, features}, false, 2);
    const uint32_t v = d.tensor({1, tokens, heads, features}, false, 3);
    const uint32_t qt = d.tensor({1, heads, tokens, features});
    const uint32_t kt = d.tensor({1, heads, features, tokens});
    const uint32_t vt = d.tensor({1, heads, tokens, features});
    const uint32_t s = d.tensor({1, heads, tokens, tokens});
    const uint32_t scale = d.tensor({1}, true);
    d.mutable_data(scale)[0] = 0.25f;
    const uint32_t ss = d.tensor({1, heads, tokens, tokens});
    const uint32_t p = d.tensor({1, heads, tokens, tokens});
    const uint32_t o = d.tensor({1, heads, tokens, features});
    const uint32_t ot = d.tensor({1, tokens, heads, features});
    const uint32_t y = d.tensor({1, tokens, heads, features});
    d.attr_ints("perm", {0, 2, 1, 3});
    d.node("Transpose", {q}, qt, 0);
    d.attr_ints("perm", {0, 2, 3, 1});
    d.node("Transpose", {k}, kt, 0);
    d.attr_ints("perm", {0, 2, 1, 3});
    d.node("Transpose", {v}, vt, 0);
    d.node("MatMul", {qt, kt}, s, 0);
    d.node("Mul", {s, scale}, ss, 0);
    d.attr_int("axis", 3);
    d.node("Softmax", {ss}, p, 0);
    d.node("MatMul", {p, vt}, o, 0);
    d.attr_ints("perm", {0, 2, 1, 3});
    d.node("Transpose", {o}, ot, 0);
    d.node("Relu", {ot}, y, 0);
    d.input(q);
    d.input(k);
    d.input(v);
    d.output(y);
    conform(d, "attention " + std::to_string(tokens) + " tokens");
  }
}

TEST(XnnpackTensorOps, DataMovementAndReductions) {
  for (const auto& [dims, perm] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{3, 17, 5}, {2, 0, 1}}, {{2, 3, 5, 7}, {0, 2, 3, 1}}, {{2, 3, 5, 7}, {3, 1, 0, 2}},
           {{1, 9, 33}, {0, 2, 1}}}) {
    Desc d;
    const uint32_t x = d.tensor(dims);
    std::vector<int64_t> out;
    for (int64_t p : perm) out.push_back(dims[size_t(p)]);
    const uint32_t y = d.tensor(out);
    d.attr_ints("perm", perm);
    d.node("Transpose", {x}, y);
    d.input(x);
    d.output(y);
    conform(d, "Transpose " + dims_text(dims) + " perm " + dims_text(perm));
  }
  {  // Slice with steps on a 4-D (NHWC-held) input, and a split of the last axis of a 3-D one.
    Desc d;
    const uint32_t x = d.tensor({2, 7, 9, 11});
    const uint32_t y = d.tensor({1, 3, 5, 5});
    d.attr_ints("starts", {1, 1, 0, 2});
    d.attr_ints("ends", {2, 7, 9, 11});
    d.attr_ints("steps", {1, 2, 2, 2});
    d.node("Slice", {x}, y);
    d.input(x);
    d.output(y);
    conform(d, "Slice 4-D steps");
    Desc e;
    const uint32_t a = e.tensor({1, 17, 48});
    const uint32_t b = e.tensor({1, 17, 16});
    e.attr_ints("starts", {0, 0, 16});
    e.attr_ints("ends", {1, 17, 32});
    e.attr_ints("steps", {1, 1, 1});
    e.node("Slice", {a}, b);
    e.input(a);
    e.output(b);
    conform(e, "Slice 3-D");
  }
  {  // Gather of constant indices on axis 1 (ViT's class token is x[:, 0]).
    Desc d;
    const uint32_t x = d.tensor({2, 9, 13});
    const uint32_t y = d.tensor({2, 3, 13});
    d.attr_int("axis", 1);
    d.attr_ints("indices", {0, 8, 3});
    d.attr_ints("indices_shape", {3});
    d.node("Gather", {x}, y);
    d.input(x);
    d.output(y);
    conform(d, "Gather");
  }
  for (const char* op : {"ReduceMean", "ReduceSum"}) {
    for (const auto& [axes, keep] : std::vector<std::pair<std::vector<int64_t>, bool>>{
             {{2}, true}, {{1, 3}, false}, {{0}, true}}) {
      const std::vector<int64_t> dims = {2, 5, 7, 3};
      std::vector<int64_t> out;
      for (size_t i = 0; i < dims.size(); ++i) {
        const bool reduced = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
        if (!reduced) out.push_back(dims[i]);
        else if (keep) out.push_back(1);
      }
      Desc d;
      const uint32_t x = d.tensor(dims);
      const uint32_t y = d.tensor(out);
      d.attr_ints("axes", axes);
      d.attr_int("keepdims", keep ? 1 : 0);
      d.node(op, {x}, y);
      d.input(x);
      d.output(y);
      conform(d, std::string(op) + " axes " + dims_text(axes));
    }
  }
}

TEST(XnnpackTensorOps, LayerNormAndSoftmaxOnAnyAxis) {
  for (const auto& [dims, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{1, 17, 33}, 2}, {{2, 5, 7}, 1}, {{1, 3, 5, 7}, 3}, {{4, 768}, 1}}) {
    int64_t size = 1;
    for (size_t i = size_t(axis); i < dims.size(); ++i) size *= dims[i];
    for (const bool bias : {true, false}) {
      Desc d;
      const uint32_t x = d.tensor(dims, false, 8, 3.0f);
      const uint32_t scale = d.tensor({size}, true, 9);
      const uint32_t b = d.tensor({size}, true, 10);
      const uint32_t y = d.tensor(dims);
      d.attr_int("axis", axis);
      d.attr_float("epsilon", 1e-5);
      if (bias) d.node("LayerNormalization", {x, scale, b}, y);
      else d.node("LayerNormalization", {x, scale}, y);
      d.input(x);
      d.output(y);
      conform(d, "LayerNormalization " + dims_text(dims) + " axis " + std::to_string(axis));
    }
  }
  // Softmax on rank-3 and on 4-D tensors that only rank-N steps touch (row-major inside).
  for (const auto& [dims, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{2, 9, 37}, 2}, {{2, 9, 37}, 1}, {{1, 3, 5, 7}, 2}, {{1, 3, 5, 7}, 3}}) {
    Desc d;
    const uint32_t x = d.tensor(dims, false, 11, 5.0f);
    const uint32_t m = d.tensor(dims);
    const uint32_t s = d.tensor(dims);
    const uint32_t y = d.tensor(dims);
    d.node("Exp", {x}, m);  // so that Softmax's input is a plain (row-major) 4-D tensor
    d.attr_int("axis", axis);
    d.node("Softmax", {m}, s);
    d.node("Tanh", {s}, y);
    d.input(x);
    d.output(y);
    conform(d, "Softmax " + dims_text(dims) + " axis " + std::to_string(axis));
  }
}

// Rank-N ops meeting the CNN steps' NHWC tensors: a Conv's output permuted channels-last for a
// LayerNorm (ConvNeXt), a Reshape of a plain 4-D tensor, then permuted back into a Conv.
TEST(XnnpackTensorOps, RankNOpsMeetNhwcTensors) {
  Desc d;
  const uint32_t x = d.tensor({1, 8, 5, 6});
  const uint32_t w = d.tensor({16, 8, 3, 3}, true, 3, 0.3f);
  const uint32_t c = d.tensor({1, 16, 5, 6});
  const uint32_t p = d.tensor({1, 5, 6, 16});
  const uint32_t scale = d.tensor({16}, true, 4);
  const uint32_t n = d.tensor({1, 5, 6, 16});
  const uint32_t r = d.tensor({30, 16});
  const uint32_t r2 = d.tensor({1, 5, 6, 16});
  const uint32_t b = d.tensor({1, 16, 5, 6});
  const uint32_t w2 = d.tensor({4, 16, 1, 1}, true, 5, 0.3f);
  const uint32_t y = d.tensor({1, 4, 5, 6});
  d.attr_ints("pads", {1, 1, 1, 1});
  d.attr_ints("strides", {1, 1});
  d.attr_ints("dilations", {1, 1});
  d.attr_int("group", 1);
  d.attr_string("activation", "none");
  d.node("Conv", {x, w, CO_UP_NO_TENSOR}, c);
  d.attr_ints("perm", {0, 2, 3, 1});
  d.node("Transpose", {c}, p);
  d.attr_int("axis", 3);
  d.attr_float("epsilon", 1e-6);
  d.node("LayerNormalization", {p, scale, CO_UP_NO_TENSOR}, n);
  d.attr_ints("shape", {30, 16});
  d.node("Reshape", {n}, r);
  d.attr_ints("shape", {1, 5, 6, 16});
  d.node("Reshape", {r}, r2);
  d.attr_ints("perm", {0, 3, 1, 2});
  d.node("Transpose", {r2}, b);
  d.attr_ints("pads", {0, 0, 0, 0});
  d.attr_ints("strides", {1, 1});
  d.attr_ints("dilations", {1, 1});
  d.attr_int("group", 1);
  d.attr_string("activation", "none");
  d.node("Conv", {b, w2, CO_UP_NO_TENSOR}, y);
  d.input(x);
  d.output(y);
  conform(d, "Conv -> Transpose -> LayerNorm -> Reshape -> Transpose -> Conv");
}

// Fully connected layers over token rows (Reshape + FullyConnected of a MatMul by a constant):
// from 8 rows on the AVX-512 GEMM with all rows in one chunk; row and output counts that cut
// 8-row tiles and 32-column blocks.
TEST(XnnpackTensorOps, FullyConnectedOverTokenRows) {
  for (const auto& [rows, in, out] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {37, 96, 130}, {197, 64, 64}, {8, 200, 96}, {5, 64, 64}}) {
    for (const char* act : {"none", "relu"}) {
      Desc d;
      const uint32_t x = d.tensor({rows, in});
      const uint32_t w = d.tensor({out, in}, true, 1, 0.2f);
      const uint32_t b = d.tensor({out}, true, 2);
      const uint32_t y = d.tensor({rows, out});
      d.attr_string("activation", act);
      d.node("FullyConnected", {x, w, b}, y);
      d.input(x);
      d.output(y);
      conform(d, "fc " + std::to_string(rows) + " x " + std::to_string(in) + " -> " +
                     std::to_string(out) + " " + act);
    }
  }
}

}  // namespace
