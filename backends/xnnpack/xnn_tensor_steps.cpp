#include "xnn_tensor_steps.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "plugin_status.h"
#include "ref_resample_kernels.h"
#include "ref_tensor_kernels.h"
#include "subgraph_desc.h"
#include "xnn_gemm.h"
#include "xnn_kernels.h"
#include "xnn_tensor_kernels.h"

namespace co_up::xnnpack {

using backends::element_at;
using backends::element_count;
using backends::NodePlan;
using backends::Op;
using backends::TensorOp;

namespace {

// Ops whose step can take plain 4-D tensors.
bool takes_plain(const NodePlan& p) {
  return p.op == Op::kTensorOp || p.op == Op::kReshape || p.op == Op::kFlatten ||
         p.op == Op::kIdentity || p.op == Op::kSoftmax;
}

std::vector<int64_t> dims_of(const co_up_subgraph_desc& graph, uint32_t t) {
  const co_up_tensor_desc& d = element_at(graph.tensors, t);
  return std::vector<int64_t>(d.dims, d.dims + d.rank);
}

StridedView nhwc_view(const std::vector<int64_t>& d) {
  return {d, {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}};
}

bool is_row_major(const StridedView& v) {
  int64_t stride = 1;
  for (size_t d = v.dims.size(); d-- > 0;) {
    if (v.dims[d] != 1 && v.strides[d] != stride) return false;
    stride *= v.dims[d];
  }
  return true;
}

const float* constant_data(const co_up_subgraph_desc& graph, uint32_t t) {
  return t == CO_UP_NO_TENSOR ? nullptr : static_cast<const float*>(element_at(graph.tensors, t).data);
}

}  // namespace

void plan_tensor_layouts(const co_up_subgraph_desc& graph, const backends::SubgraphPlan& plan,
                         StepFusions& f) {
  const std::vector<NodePlan>& nodes = plan.nodes;
  const uint32_t tensor_count = graph.tensor_count;
  std::vector<bool> plain(tensor_count, false);
  for (uint32_t t = 0; t < tensor_count; ++t) {
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    plain[t] = d.rank == 4 && d.data == nullptr && !plan.is_input[t] && !plan.is_output[t];
  }
  std::vector<int> uses(tensor_count, 0);
  std::vector<uint32_t> consumer(tensor_count, CO_UP_NO_TENSOR);
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const NodePlan& p = nodes[n];
    for (uint32_t t : p.inputs) {
      if (t == CO_UP_NO_TENSOR) continue;
      ++uses[t];
      consumer[t] = n;
      if (!takes_plain(p)) plain[t] = false;
    }
    if (!takes_plain(p)) plain[p.output] = false;
  }
  f.layouts.plain = std::move(plain);
  f.layouts.folded.assign(tensor_count, std::nullopt);
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const NodePlan& p = nodes[n];
    if (p.op != Op::kTensorOp || p.tensor_op != TensorOp::kTranspose || f.writes[n] != p.output) continue;
    const uint32_t t = p.output;
    if (uses[t] != 1 || plan.is_output[t] || plan.is_input[t]) continue;
    const uint32_t reader = consumer[t];
    const NodePlan& r = nodes[reader];
    if (r.op != Op::kTensorOp || r.tensor_op != TensorOp::kMatMul || f.writes[reader] != r.output) continue;
    f.layouts.folded[t] = TensorLayouts::Fold{p.inputs[0], p.ints};
    f.writes[n] = CO_UP_NO_TENSOR;
    f.extra_reads[reader].push_back(p.inputs[0]);
  }
}

bool is_tensor_step(const NodePlan& p, const TensorLayouts& layouts) {
  if (p.op == Op::kTensorOp) return true;
  // Every 4-D Softmax runs the row-major kernels, an NHWC operand converted: whether a tensor is
  // held NHWC depends on where the mapping puts sub-graph boundaries (a boundary tensor is
  // NHWC), and XNNPACK's softmax or one along NHWC's strided lines sums in another order, so the
  // result would change with the mapping.
  if (p.op == Op::kSoftmax && p.in_dims.size() == 4) return true;
  return takes_plain(p) && (layouts.is_plain(p.inputs[0]) || layouts.is_plain(p.output));
}

F32Step build_tensor_step(const co_up_subgraph_desc& graph, uint32_t index, const NodePlan& p,
                          const std::vector<float*>& buffers, const CpuPool& pool,
                          const TensorLayouts& layouts) {
  const CpuPool* pool_ptr = &pool;
  // Tensor t as the step reads it: where it starts and its strides.
  auto held = [&](uint32_t t) -> std::pair<const float*, StridedView> {
    if (const TensorLayouts::Fold* fold = layouts.fold_of(t)) {
      auto [data, view] = std::pair<const float*, StridedView>{buffers[fold->source], {}};
      const std::vector<int64_t> d = dims_of(graph, fold->source);
      view = d.size() == 4 && !layouts.is_plain(fold->source) ? nhwc_view(d) : row_major_view(d);
      return {data, permuted_view(view, fold->perm)};
    }
    const std::vector<int64_t> d = dims_of(graph, t);
    return {buffers[t], d.size() == 4 && !layouts.is_plain(t) ? nhwc_view(d) : row_major_view(d)};
  };
  std::vector<std::function<void()>> before;
  std::function<void()> after;
  // Input t in row-major order: itself, or a conversion into a buffer of the step's own.
  auto plain_input = [&](uint32_t t) -> const float* {
    auto [src, view] = held(t);
    if (is_row_major(view)) return src;
    auto buffer = std::make_shared<Buffer<float>>(element_count(view.dims));
    const LoopPlan copy = plan_loop(view.dims, {row_major_view(view.dims).strides, view.strides});
    before.push_back([copy, src, buffer, pool_ptr] { strided_copy(copy, src, buffer->data(), *pool_ptr); });
    return buffer->data();
  };
  // Where the kernel writes the output in row-major order: the output, or a buffer converted
  // into it after the kernel.
  auto plain_output = [&]() -> float* {
    auto [dst, view] = held(p.output);
    float* y = buffers[p.output];
    if (is_row_major(view)) return y;
    auto buffer = std::make_shared<Buffer<float>>(element_count(view.dims));
    const LoopPlan copy = plan_loop(view.dims, {view.strides, row_major_view(view.dims).strides});
    after = [copy, y, buffer, pool_ptr] { strided_copy(copy, buffer->data(), y, *pool_ptr); };
    return buffer->data();
  };
  // A strided copy from `src` seen through `view` into the output as it is held.
  auto copy_to_output = [&](const float* src, const StridedView& view) -> std::function<void()> {
    auto [dst, out_view] = held(p.output);
    float* y = buffers[p.output];
    const LoopPlan copy = plan_loop(out_view.dims, {out_view.strides, view.strides});
    return [copy, src, y, pool_ptr] { strided_copy(copy, src, y, *pool_ptr); };
  };

  std::function<void()> body;
  const int64_t count = element_count(p.out_dims);
  if (p.op != Op::kTensorOp) {
    const float* x = plain_input(p.inputs[0]);
    float* y = plain_output();
    if (p.op == Op::kSoftmax) {
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < static_cast<size_t>(p.axis); ++d) outer *= p.in_dims[d];
      for (size_t d = static_cast<size_t>(p.axis) + 1; d < p.in_dims.size(); ++d) inner *= p.in_dims[d];
      const int64_t axis_len = p.in_dims[static_cast<size_t>(p.axis)];
      if (inner == 1) {
        body = [=] { softmax_rows(x, y, outer, axis_len, *pool_ptr); };
      } else {
        body = [=] { softmax_lines(x, y, outer, axis_len, inner, *pool_ptr); };
      }
    } else {  // Reshape, Flatten, Identity: row-major order is unchanged
      body = [=] {
        if (x != y) copy_floats(x, y, count, *pool_ptr);
      };
    }
  } else {
    switch (p.tensor_op) {
      case TensorOp::kAdd:
      case TensorOp::kSub:
      case TensorOp::kMul:
      case TensorOp::kDiv:
      case TensorOp::kPow: {
        static constexpr BinaryKind kKinds[] = {BinaryKind::kAdd, BinaryKind::kSub, BinaryKind::kMul,
                                                BinaryKind::kDiv, BinaryKind::kPow};
        const BinaryKind kind = kKinds[static_cast<int>(p.tensor_op) - static_cast<int>(TensorOp::kAdd)];
        const float* a = plain_input(p.inputs[0]);
        const float* b = plain_input(p.inputs[1]);
        float* y = plain_output();
        const LoopPlan plan = plan_loop(p.out_dims, {row_major_view(p.out_dims).strides,
                                                     broadcast_strides(p.in_dims, p.out_dims),
                                                     broadcast_strides(p.in1_dims, p.out_dims)});
        constexpr float kInf = std::numeric_limits<float>::infinity();
        const auto [lo, hi] = p.tensor_op == TensorOp::kAdd ? activation_range(p.activation)
                                                             : std::pair<float, float>{-kInf, kInf};
        body = [=] { broadcast_binary(kind, plan, a, b, y, lo, hi, *pool_ptr); };
        break;
      }
      case TensorOp::kSqrt:
      case TensorOp::kErf:
      case TensorOp::kTanh:
      case TensorOp::kExp:
      case TensorOp::kGelu: {
        const UnaryKind kind = p.tensor_op == TensorOp::kSqrt  ? UnaryKind::kSqrt
                               : p.tensor_op == TensorOp::kErf ? UnaryKind::kErf
                               : p.tensor_op == TensorOp::kTanh ? UnaryKind::kTanh
                               : p.tensor_op == TensorOp::kExp ? UnaryKind::kExp
                               : p.gelu_tanh                   ? UnaryKind::kGeluTanh
                                                               : UnaryKind::kGelu;
        const float* x = plain_input(p.inputs[0]);
        float* y = plain_output();
        body = [=] { unary(kind, x, y, count, *pool_ptr); };
        break;
      }
      case TensorOp::kMatMul: {
        auto [a, a_view] = held(p.inputs[0]);
        const uint32_t b_tensor = p.inputs[1];
        const float* b_constant = constant_data(graph, b_tensor);
        auto [b, b_view] = held(b_tensor);
        if (b_constant) b_view = row_major_view(p.in1_dims);
        float* y = plain_output();
        std::shared_ptr<BatchedGemm> gemm;
        try {
          gemm = std::make_shared<BatchedGemm>(a_view, b_view, b_constant);
        } catch (const std::invalid_argument& e) {
          const char* name = element_at(graph.nodes, index).name;
          backends::fail(CO_UP_STATUS_INVALID_ARGUMENT,
                         "node '" + std::string(name ? name : "?") + "' (MatMul): " + e.what());
        }
        const float* a_data = a;
        const float* b_data = b;
        body = [=] { gemm->run(a_data, b_data, y, *pool_ptr); };
        break;
      }
      case TensorOp::kTranspose: {
        auto [x, view] = held(p.inputs[0]);
        body = copy_to_output(x, permuted_view(view, p.ints));
        break;
      }
      case TensorOp::kSlice: {
        auto [x, view] = held(p.inputs[0]);
        StridedView sliced{p.out_dims, view.strides};
        int64_t offset = 0;
        for (size_t d = 0; d < view.dims.size(); ++d) {
          offset += p.ints[d] * view.strides[d];
          sliced.strides[d] *= p.ints2[d];
        }
        body = copy_to_output(x + offset, sliced);
        break;
      }
      case TensorOp::kReduceMean:
      case TensorOp::kReduceSum: {
        const float* x = plain_input(p.inputs[0]);
        float* y = plain_output();
        const reference::ReducePlan plan =
            reference::plan_reduce(p.in_dims, p.ints, p.tensor_op == TensorOp::kReduceMean);
        body = [=] { reference::reduce(plan, x, y, nullptr); };
        break;
      }
      case TensorOp::kGather: {
        const float* x = plain_input(p.inputs[0]);
        float* y = plain_output();
        int64_t outer = 1, inner = 1;
        const auto axis = static_cast<size_t>(p.axis);
        for (size_t d = 0; d < axis; ++d) outer *= p.in_dims[d];
        for (size_t d = axis + 1; d < p.in_dims.size(); ++d) inner *= p.in_dims[d];
        const int64_t axis_len = p.in_dims[axis];
        auto indices = std::make_shared<const std::vector<int64_t>>(p.ints);
        body = [=] { reference::gather(x, y, outer, axis_len, inner, *indices, nullptr); };
        break;
      }
      // The resampling ops of detectors run cpu-reference's kernels on plans made here, single
      // threaded as Reduce and Gather are (a detector's Pad is small next to its convolutions),
      // but for Resize (below).
      case TensorOp::kLeakyRelu: {
        const float* x = plain_input(p.inputs[0]);
        float* y = plain_output();
        const int64_t count = element_count(p.out_dims);
        const float alpha = p.value0;
        body = [=] { reference::leaky_relu(x, y, count, alpha, nullptr); };
        break;
      }
      case TensorOp::kResize: {
        const float* x = plain_input(p.inputs[0]);
        float* y = plain_output();
        auto plan = std::make_shared<const reference::ResizePlan>(
            reference::plan_resize(p.in_dims, p.out_dims, p.floats, p.resize));
        // Rows of the output on the pool (a detector's upsampling of 0.2-0.4 M elements ran on
        // the caller alone); each row is computed as cpu-reference's kernel computes it.
        body = [=] {
          pool_ptr->parallel_for(plan->outer * plan->out_h, 1, 16384 / std::max<int64_t>(plan->out_w, 1) + 1,
                                 [&](int64_t begin, int64_t end) { reference::resize_rows(*plan, x, y, begin, end); });
        };
        break;
      }
      case TensorOp::kPad: {
        const float* x = plain_input(p.inputs[0]);
        float* y = plain_output();
        auto plan = std::make_shared<const reference::PadPlan>(
            reference::plan_pad(p.in_dims, p.ints, p.pad_mode, p.value0));
        body = [=] { reference::pad(*plan, x, y, nullptr); };
        break;
      }
      case TensorOp::kLayerNormalization: {
        const float* x = plain_input(p.inputs[0]);
        float* y = plain_output();
        int64_t rows = 1;
        for (size_t d = 0; d < static_cast<size_t>(p.axis); ++d) rows *= p.in_dims[d];
        const int64_t size = element_count(p.in_dims) / std::max<int64_t>(rows, 1);
        // Scale and bias: copied now when constant (the graph's data is not ours after
        // compile), else read as activations.
        auto parameter = [&](uint32_t t) -> std::shared_ptr<std::vector<float>> {
          if (t == CO_UP_NO_TENSOR) return nullptr;
          const float* data = constant_data(graph, t);
          if (!data) data = plain_input(t);
          return std::make_shared<std::vector<float>>(data, data + size);
        };
        const uint32_t bias_tensor = p.inputs.size() > 2 ? p.inputs[2] : CO_UP_NO_TENSOR;
        const bool scale_constant = constant_data(graph, p.inputs[1]) != nullptr;
        const bool bias_constant = bias_tensor == CO_UP_NO_TENSOR || constant_data(graph, bias_tensor);
        if (!scale_constant || !bias_constant) {
          const float* scale = plain_input(p.inputs[1]);
          const float* bias = bias_tensor == CO_UP_NO_TENSOR ? nullptr : plain_input(bias_tensor);
          const float epsilon = p.value0;
          body = [=] { layer_norm_rows(x, y, rows, size, scale, bias, epsilon, *pool_ptr); };
          break;
        }
        auto scale = parameter(p.inputs[1]);
        auto bias = parameter(bias_tensor);
        const float epsilon = p.value0;
        body = [=] {
          layer_norm_rows(x, y, rows, size, scale->data(), bias ? bias->data() : nullptr, epsilon, *pool_ptr);
        };
        break;
      }
    }
  }
  F32Step step;
  step.own = [before = std::move(before), body = std::move(body), after = std::move(after)] {
    for (const auto& convert : before) convert();
    body();
    if (after) after();
  };
  return step;
}

}  // namespace co_up::xnnpack
