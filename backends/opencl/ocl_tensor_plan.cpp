#include "ocl_tensor_plan.h"

#include <limits>
#include <string>

#include "plugin_status.h"
#include "subgraph_desc.h"
#include "ref_resample_kernels.h"
#include "ref_tensor_kernels.h"

namespace co_up::opencl {
namespace {

using backends::NodePlan;
using backends::Op;
using backends::TensorOp;
using Kind = TensorArg::Kind;

TensorArg tensor(uint32_t t) { return {Kind::kTensor, static_cast<int64_t>(t), 0.0f}; }
TensorArg int_table(size_t i) { return {Kind::kIntTable, static_cast<int64_t>(i), 0.0f}; }
TensorArg float_table(size_t i) { return {Kind::kFloatTable, static_cast<int64_t>(i), 0.0f}; }
TensorArg integer(int64_t v) { return {Kind::kInt, v, 0.0f}; }
TensorArg real(float v) { return {Kind::kFloat, 0, v}; }

int32_t narrow(int64_t v) {
  if (v > std::numeric_limits<int32_t>::max()) {
    backends::fail(CO_UP_STATUS_UNSUPPORTED, "tensor too large for 32-bit indexing in OpenCL kernels");
  }
  return static_cast<int32_t>(v);
}

// Every offset of a strided copy, in output order.
std::vector<int32_t> expand(const reference::StridedCopyPlan& p) {
  std::vector<int32_t> table(static_cast<size_t>(p.count));
  for (int64_t i = 0; i < p.count; ++i) {
    int64_t rest = i, offset = p.base;
    for (int d = p.rank - 1; d >= 0; --d) {
      offset += (rest % p.dims[d]) * p.strides[d];
      rest /= p.dims[d];
    }
    table[static_cast<size_t>(i)] = narrow(offset);
  }
  return table;
}

void gather(TensorPlan& plan, const NodePlan& p, std::vector<int32_t> table, float fill) {
  const auto items = static_cast<int64_t>(table.size());
  plan.int_tables.push_back(std::move(table));
  plan.kernels.push_back({"gather_index", items,
                          {tensor(p.inputs[0]), int_table(plan.int_tables.size() - 1), real(fill),
                           tensor(p.output)}});
}

// Kernel op codes of kernels/ocl_tensor_kernels.cl.
constexpr int64_t kUnSqrt = 0, kUnErf = 1, kUnTanh = 2, kUnExp = 3, kUnGelu = 4, kUnGeluTanh = 5,
                  kUnLeakyRelu = 6, kUnSilu = 7, kUnHardSigmoid = 8;

void unary(TensorPlan& plan, const NodePlan& p, int64_t op, float alpha = 0.0f, float beta = 0.0f) {
  plan.kernels.push_back({"unary_math", backends::element_count(p.out_dims),
                          {tensor(p.inputs[0]), tensor(p.output), integer(op), real(alpha), real(beta)}});
}

void binary(TensorPlan& plan, const NodePlan& p, int64_t op, const std::vector<int64_t>& b_dims) {
  const reference::BroadcastPlan b = reference::plan_broadcast(p.in_dims, b_dims, p.out_dims);
  std::vector<int32_t> meta;
  for (int d = 0; d < b.rank; ++d) meta.push_back(narrow(b.dims[d]));
  for (int d = 0; d < b.rank; ++d) meta.push_back(narrow(b.a_strides[d]));
  for (int d = 0; d < b.rank; ++d) meta.push_back(narrow(b.b_strides[d]));
  plan.int_tables.push_back(std::move(meta));
  const int64_t act = p.activation == backends::Activation::kRelu ? 1 : p.activation == backends::Activation::kRelu6 ? 2 : 0;
  plan.kernels.push_back({"broadcast_binary", backends::element_count(p.out_dims),
                          {tensor(p.inputs[0]), tensor(p.inputs[1]), int_table(plan.int_tables.size() - 1),
                           integer(b.rank), integer(op), integer(act), tensor(p.output)}});
}

void matmul(TensorPlan& plan, const NodePlan& p) {
  const reference::MatMulPlan m = reference::plan_matmul(p.in_dims, p.in1_dims);
  TensorGemm g;
  g.a = p.inputs[0];
  g.b = p.inputs[1];
  g.y = p.output;
  g.m = static_cast<size_t>(m.m);
  g.n = static_cast<size_t>(m.n);
  g.k = static_cast<size_t>(m.k);
  const reference::BroadcastPlan& b = m.batch;
  int64_t batches = 1;
  for (int d = 0; d < b.rank; ++d) batches *= b.dims[d];
  for (int64_t i = 0; i < batches; ++i) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = b.rank - 1; d >= 0; --d) {
      const int64_t idx = rest % b.dims[d];
      rest /= b.dims[d];
      ia += idx * b.a_strides[d];
      ib += idx * b.b_strides[d];
    }
    g.a_offsets.push_back(static_cast<size_t>(ia));
    g.b_offsets.push_back(static_cast<size_t>(ib));
    g.y_offsets.push_back(static_cast<size_t>(i * m.m * m.n));
  }
  plan.gemm = std::move(g);
}

void resize(TensorPlan& plan, const NodePlan& p) {
  const reference::ResizePlan r = reference::plan_resize(p.in_dims, p.out_dims, p.floats, p.resize);
  const int64_t count = r.outer * r.out_h * r.out_w;
  std::vector<int32_t> idx;
  std::vector<float> w;
  idx.reserve(static_cast<size_t>(count) * (r.linear ? 4 : 1));
  for (int64_t o = 0; o < r.outer; ++o) {
    const int64_t plane = o * r.in_h * r.in_w;
    for (size_t row = 0; row < static_cast<size_t>(r.out_h); ++row) {
      for (size_t col = 0; col < static_cast<size_t>(r.out_w); ++col) {
        const int64_t r0 = plane + r.row0[row] * r.in_w, r1 = plane + r.row1[row] * r.in_w;
        idx.push_back(narrow(r0 + r.col0[col]));
        if (!r.linear) continue;
        idx.push_back(narrow(r0 + r.col1[col]));
        idx.push_back(narrow(r1 + r.col0[col]));
        idx.push_back(narrow(r1 + r.col1[col]));
        w.push_back(r.row_weight[row]);
        w.push_back(r.col_weight[col]);
      }
    }
  }
  if (!r.linear) return gather(plan, p, std::move(idx), 0.0f);
  plan.int_tables.push_back(std::move(idx));
  plan.float_tables.push_back(std::move(w));
  plan.kernels.push_back({"resize_linear", count,
                          {tensor(p.inputs[0]), int_table(plan.int_tables.size() - 1),
                           float_table(plan.float_tables.size() - 1), tensor(p.output)}});
}

void pad(TensorPlan& plan, const NodePlan& p) {
  const reference::PadPlan pp = reference::plan_pad(p.in_dims, p.ints, p.pad_mode, p.value0);
  const size_t rank = pp.in_dims.size();
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * pp.in_dims[d + 1];
  const int64_t count = backends::element_count(pp.out_dims);
  std::vector<int32_t> table(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, offset = 0;
    for (size_t d = rank; d-- > 0;) {
      const int64_t src = pp.source[d][static_cast<size_t>(rest % pp.out_dims[d])];
      rest /= pp.out_dims[d];
      if (src < 0) {
        offset = -1;
        break;
      }
      offset += src * in_strides[d];
    }
    table[static_cast<size_t>(i)] = offset < 0 ? -1 : narrow(offset);
  }
  gather(plan, p, std::move(table), pp.value);
}

void tensor_op(TensorPlan& plan, const NodePlan& p) {
  switch (p.tensor_op) {
    case TensorOp::kAdd:
    case TensorOp::kSub:
    case TensorOp::kMul:
    case TensorOp::kDiv:
    case TensorOp::kPow:
      return binary(plan, p, static_cast<int64_t>(p.tensor_op) - static_cast<int64_t>(TensorOp::kAdd), p.in1_dims);
    case TensorOp::kSqrt: return unary(plan, p, kUnSqrt);
    case TensorOp::kErf: return unary(plan, p, kUnErf);
    case TensorOp::kTanh: return unary(plan, p, kUnTanh);
    case TensorOp::kExp: return unary(plan, p, kUnExp);
    case TensorOp::kGelu: return unary(plan, p, p.gelu_tanh ? kUnGeluTanh : kUnGelu);
    case TensorOp::kLeakyRelu: return unary(plan, p, kUnLeakyRelu, p.value0);
    case TensorOp::kMatMul: return matmul(plan, p);
    case TensorOp::kTranspose: return gather(plan, p, expand(reference::plan_transpose(p.in_dims, p.ints)), 0.0f);
    case TensorOp::kSlice:
      return gather(plan, p, expand(reference::plan_slice(p.in_dims, p.ints, p.ints2, p.out_dims)), 0.0f);
    case TensorOp::kGather: {
      int64_t outer = 1, inner = 1;
      const auto axis = static_cast<size_t>(p.axis);
      for (size_t d = 0; d < axis; ++d) outer *= p.in_dims[d];
      for (size_t d = axis + 1; d < p.in_dims.size(); ++d) inner *= p.in_dims[d];
      std::vector<int32_t> table;
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t index : p.ints) {
          for (int64_t j = 0; j < inner; ++j) table.push_back(narrow((o * p.in_dims[axis] + index) * inner + j));
        }
      }
      return gather(plan, p, std::move(table), 0.0f);
    }
    case TensorOp::kReduceMean:
    case TensorOp::kReduceSum: {
      const reference::ReducePlan r = reference::plan_reduce(p.in_dims, p.ints, p.tensor_op == TensorOp::kReduceMean);
      plan.int_tables.push_back(expand(r.kept));
      plan.int_tables.push_back(expand(r.reduced));
      const float scale = r.mean ? 1.0f / static_cast<float>(r.reduced.count) : 1.0f;
      plan.kernels.push_back({"reduce_table", r.kept.count,
                              {tensor(p.inputs[0]), int_table(plan.int_tables.size() - 2),
                               int_table(plan.int_tables.size() - 1), integer(r.reduced.count), real(scale),
                               tensor(p.output)}});
      return;
    }
    case TensorOp::kLayerNormalization: {
      int64_t outer = 1;
      for (size_t d = 0; d < static_cast<size_t>(p.axis); ++d) outer *= p.in_dims[d];
      const int64_t size = backends::element_count(p.in_dims) / outer;
      const bool has_bias = p.inputs[2] != CO_UP_NO_TENSOR;
      plan.kernels.push_back({"layer_norm", outer,
                              {tensor(p.inputs[0]), tensor(p.inputs[1]), tensor(has_bias ? p.inputs[2] : p.inputs[1]),
                               integer(has_bias ? 1 : 0), integer(size), real(p.value0), tensor(p.output)}});
      return;
    }
    case TensorOp::kResize: return resize(plan, p);
    case TensorOp::kPad: return pad(plan, p);
  }
  backends::fail(CO_UP_STATUS_UNSUPPORTED, "opencl has no kernel for this tensor op");
}

}  // namespace

bool implements_tensor_op(Op op) { return backends::is_cnn_form(op) || op == Op::kTensorOp; }

TensorPlan plan_tensor_node(const NodePlan& p) {
  TensorPlan plan;
  switch (p.op) {
    case Op::kTensorOp:
      tensor_op(plan, p);
      break;
    case Op::kSiLU:
      unary(plan, p, kUnSilu);
      break;
    case Op::kHardSigmoid:
      unary(plan, p, kUnHardSigmoid, p.value0, p.value1);
      break;
    case Op::kChannelScale:
      binary(plan, p, static_cast<int64_t>(TensorOp::kMul) - static_cast<int64_t>(TensorOp::kAdd),
             {p.in_dims[0], p.in_dims[1], 1, 1});
      break;
    case Op::kChannelShuffle: {
      const int64_t batch = p.in_dims[0], channels = p.in_dims[1], plane = p.in_dims[2] * p.in_dims[3];
      const int64_t g = p.groups, per = channels / g;
      std::vector<int32_t> table;
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t j = c / g, i = c % g;  // Y[n, j*g + i] = X[n, i*per + j]
          for (int64_t e = 0; e < plane; ++e) table.push_back(narrow((n * channels + i * per + j) * plane + e));
        }
      }
      gather(plan, p, std::move(table), 0.0f);
      break;
    }
    default:
      backends::fail(CO_UP_STATUS_UNSUPPORTED, "opencl has no kernel for this op");
  }
  return plan;
}

}  // namespace co_up::opencl
