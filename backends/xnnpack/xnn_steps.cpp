#include "xnn_steps.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "avx512_conv.h"
#include "plugin_status.h"
#include "ref_kernels.h"
#include "subgraph_desc.h"
#include "xnn_depthwise.h"
#include "xnn_gemv.h"
#include "xnn_silu.h"
#include "xnn_sliced_ops.h"
#include "xnn_kernels.h"
#include "xnn_tensor_steps.h"

namespace co_up::xnnpack {

using backends::Activation;
using backends::Conv2dShape;
using backends::element_at;
using backends::element_count;
using backends::NodePlan;
using backends::Op;
using backends::Pool2dShape;

void F32Step::run(const CpuPool& pool) const {
  for (const auto& op : ops) check_xnn(pool.run_operator(op.get(), ops_on_pool), "f32 run");
  if (own) own();
}

namespace {

// Where a convolution step writes: NHWC rows from `y`, `stride` floats apart (more than its
// channel count when it writes its slice of a Concat output directly), plus an optional fused
// residual Add and the activation that then applies.
struct ConvTarget {
  float* y;
  int64_t stride;
  const float* residual;
  Activation activation;
  bool silu = false;  // SiLU after the activation (own convolutions only, on AVX-512 CPUs)
  bool hardswish = false;  // HardSwish after the activation (own or XNNPACK's convolutions)
};

// Tensor t's constant data (weights, bias), or NULL for CO_UP_NO_TENSOR.
const float* constant_data(const co_up_subgraph_desc& graph, uint32_t t) {
  return t == CO_UP_NO_TENSOR ? nullptr : static_cast<const float*>(element_at(graph.tensors, t).data);
}

// "node 'NAME'", for error messages.
std::string node_where(const co_up_subgraph_desc& graph, uint32_t n) {
  const char* name = element_at(graph.nodes, n).name;
  return "node '" + std::string(name ? name : "?") + "'";
}

// A 1x1 convolution over one pixel per image (squeeze-excite's): a matrix times one vector per
// image, on Gemv (xnn_gemv.h), not XNNPACK's GEMM, on the CPUs where the own convolutions run (so
// that a batch, own kernel or Gemv, and its images alone get the same bits there; XNNPACK's
// everywhere else, as before).
bool one_pixel_1x1(const Conv2dShape& s) {
  return avx512_gemm_available() && s.group == 1 && s.kernel_h == 1 && s.kernel_w == 1 &&
         s.in_height == 1 && s.in_width == 1 && s.out_height() == 1 && s.out_width() == 1;
}

F32Step build_conv_step(const Conv2dShape& s, const float* weights, const float* bias,
                        const float* x, const ConvTarget& out, const CpuPool& pool,
                        const std::string& where, int64_t chunk_bytes = 0) {
  const auto [lo, hi] = activation_range(out.activation);
  F32Step step;
  const bool fused = out.residual != nullptr || out.silu;
  if (own_conv_runs(s, fused)) {
    auto conv = std::make_shared<Avx512Convolution>(
        s, F32ConvParams{weights, bias, lo, hi, out.residual, out.stride, chunk_bytes, out.silu, out.hardswish},
        x, out.y);
    const CpuPool* pool_ptr = &pool;
    step.own = [conv, pool_ptr] { conv->run(*pool_ptr); };
    return step;
  }
  if (out.residual) {
    backends::fail(CO_UP_STATUS_RUNTIME_ERROR, "internal: fused residual on XNNPACK's convolution for " + where);
  }
  if (out.hardswish && depthwise_kernel_wins(s)) {
    backends::fail(CO_UP_STATUS_RUNTIME_ERROR, "internal: fused HardSwish on the own depthwise kernel for " + where);
  }
  if (depthwise_kernel_wins(s)) {  // sizes XNNPACK would run as a GEMM of one channel per group
    auto conv = std::make_shared<DepthwiseConvolution>(s, weights, bias, lo, hi, out.stride, x, out.y, out.silu);
    const CpuPool* pool_ptr = &pool;
    step.own = [conv, pool_ptr] { conv->run(*pool_ptr); };
    return step;
  }
  if (out.silu) {
    backends::fail(CO_UP_STATUS_RUNTIME_ERROR, "internal: fused SiLU on XNNPACK's convolution for " + where);
  }
  if (one_pixel_1x1(s) && !out.hardswish) {  // weights OIHW [out][in][1][1]: a matrix [out][in]
    auto gemv = std::make_shared<Gemv>(s.in_channels, s.out_channels, weights, bias, lo, hi, x, out.y,
                                       s.batch, out.stride);
    const CpuPool* pool_ptr = &pool;
    step.own = [gemv, pool_ptr] { gemv->run(*pool_ptr); };
    return step;
  }
  // On the claiming pool in bands of output rows (xnn_sliced_ops.h), not on pthreadpool.
  const std::vector<float> packed = conv_weights_ohwi(weights, s);
  const SlicedOperator sliced = SlicedOperator::convolution(s, packed.data(), bias, lo, hi, 0, x,
                                                            out.y, out.stride, where, 0,
                                                            pool.thread_count(), out.hardswish);
  const CpuPool* pool_ptr = &pool;
  step.own = [sliced, pool_ptr] { sliced.run(*pool_ptr); };
  return step;
}

}  // namespace

F32Step build_f32_step(const co_up_subgraph_desc& graph, uint32_t index, const NodePlan& p,
                       const std::vector<float*>& buffers, const CpuPool& pool) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  F32Step step;
  // Convolutions, fully connected layers, pooling, element-wise ops and copies split over the
  // pool (xnn_sliced_ops.h, the own kernels). XNNPACK's operators left unsliced (softmax, channel
  // shuffle, pooling of other shapes) run on the caller, where they cost no hand-off.
  step.ops_on_pool = false;
  constexpr pthreadpool_t tp = nullptr;
  const CpuPool* pool_ptr = &pool;
  const std::string where = node_where(graph, index);
  auto constant = [&](uint32_t t) { return constant_data(graph, t); };
  float* x = buffers[p.inputs[0]];
  float* y = buffers[p.output];
  const int64_t count = element_count(p.out_dims);
  auto add_op = [&](xnn_operator_t op) { step.ops.emplace_back(op); };
  // Element-wise: every element alone, so ranges of elements on the pool give the same bits.
  auto unary_op = [&](auto create, auto setup, auto... args) {
    const SlicedOperator sliced = SlicedOperator::per_range(
        count, 1,
        [&](SliceRange r, xnn_operator_t* op) {
          const size_t n = size_t(r.end - r.begin);
          xnn_status st = create(n, n, n, args..., 0u, op);
          if (st == xnn_status_success) st = setup(*op, size_t(1), x + r.begin, y + r.begin, nullptr);
          return st;
        },
        "element-wise operator for " + where, 0, pool.thread_count());
    step.own = [sliced, pool_ptr] { sliced.run(*pool_ptr); };
  };

  switch (p.op) {
    case Op::kConv:
      step = build_conv_step(p.conv, constant(p.inputs[1]), constant(p.inputs[2]), x,
                             {y, p.conv.out_channels, nullptr, p.conv.activation}, pool, where);
      break;
    case Op::kFullyConnected: {
      // Over 8 or more rows (a transformer's tokens) a fully connected layer is a 1x1
      // convolution over that many pixels, where the backend's AVX-512 GEMM beats XNNPACK's.
      // All rows in one chunk: the weights (9.4 MB for ViT-B's MLP) then stream once per frame
      // and the rows (0.6-2.4 MB) are re-read from L2/L3 by each block of 32 outputs, instead
      // of the weights once per 512 KiB chunk of rows (ViT-B/16 one core: -2 to -4 % CPU time
      // per frame).
      constexpr int64_t kOneChunk = std::numeric_limits<int64_t>::max() / 2;
      if (p.in_dims.size() == 2) {
        Conv2dShape s;
        s.batch = 1;
        s.in_height = p.in_dims[0];
        s.in_width = 1;
        s.in_channels = p.fc_in;
        s.out_channels = p.fc_out;
        s.activation = p.activation;
        if (avx512_conv_wins(s)) {
          step = build_conv_step(s, constant(p.inputs[1]), constant(p.inputs[2]), x,
                                 {y, p.fc_out, nullptr, p.activation}, pool, where,
                                 kOneChunk);
          break;
        }
      }
      std::vector<float> permuted;
      const float* w = fc_weights_for_nhwc(constant(p.inputs[1]), p.in_dims, p.fc_out, p.fc_in, permuted);
      const auto [lo, hi] = activation_range(p.activation);
      if (avx512_gemm_available()) {  // rows the own convolution does not take (a classifier's one)
        auto gemv = std::make_shared<Gemv>(p.fc_in, p.fc_out, w, constant(p.inputs[2]), lo, hi, x, y,
                                           p.in_dims[0]);
        step.own = [gemv, pool_ptr] { gemv->run(*pool_ptr); };
        break;
      }
      const SlicedOperator sliced = SlicedOperator::fully_connected(
          p.in_dims[0], p.fc_in, p.fc_out, w, constant(p.inputs[2]), lo, hi, 0, x, y, where, 0,
          pool.thread_count());
      step.own = [sliced, pool_ptr] { sliced.run(*pool_ptr); };
      break;
    }
    case Op::kMaxPool:
    case Op::kAveragePool: {
      const Pool2dShape s = p.pool;
      const int64_t oh = s.out_height(), ow = s.out_width();
      // XNNPACK rounds down; ceil mode becomes extra bottom/right padding, which a max ignores.
      const int64_t pad_b = std::max(s.pad_bottom, (oh - 1) * s.stride_h + s.kernel_h - s.in_height - s.pad_top);
      const int64_t pad_r = std::max(s.pad_right, (ow - 1) * s.stride_w + s.kernel_w - s.in_width - s.pad_left);
      const bool average = p.op == Op::kAveragePool;
      const bool padded = s.pad_top || s.pad_left || pad_b || pad_r;
      xnn_operator_t op = nullptr;
      xnn_status st = xnn_status_unsupported_parameter;
      if (!average) {
        st = xnn_create_max_pooling2d_nhwc_f32(
            uint32_t(s.pad_top), uint32_t(pad_r), uint32_t(pad_b), uint32_t(s.pad_left),
            uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h), uint32_t(s.stride_w),
            1, 1, size_t(s.channels), size_t(s.channels), size_t(s.channels), -kInf, kInf, 0, &op);
      } else if (!padded) {
        // Padding: XNNPACK's divisor rules differ from ONNX's count_include_pad; own kernel.
        st = xnn_create_average_pooling2d_nhwc_f32(
            0, 0, 0, 0, uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h),
            uint32_t(s.stride_w), size_t(s.channels), size_t(s.channels), size_t(s.channels),
            -kInf, kInf, 0, &op);
      }
      // Where XNNPACK takes the shape, one image runs as bands of output rows on the pool: each
      // output is the max or mean of the same window, read in the same order, whichever band it
      // falls in (same bits). The pass's time is estimated from its outputs alone.
      Conv2dShape window;
      window.in_channels = window.out_channels = s.channels;
      window.in_height = s.in_height;
      window.in_width = s.in_width;
      window.kernel_h = s.kernel_h;
      window.kernel_w = s.kernel_w;
      window.stride_h = s.stride_h;
      window.stride_w = s.stride_w;
      window.pad_top = s.pad_top;
      window.pad_bottom = pad_b;
      window.pad_left = s.pad_left;
      window.pad_right = pad_r;
      if (st == xnn_status_success && s.batch == 1 && window.out_height() == oh && window.out_width() == ow) {
        const XnnOperator whole(op);  // XNNPACK takes the shape: the bands, not this one, run
        const size_t ch = size_t(s.channels);
        const SlicedOperator sliced = SlicedOperator::row_bands(
            window, pass_work_us(oh * ow * s.channels),
            [&](SliceRange band, const ConvRowSlice& cut, xnn_operator_t* band_op) {
              const xnn_status created = average
                  ? xnn_create_average_pooling2d_nhwc_f32(
                        0, 0, 0, 0, uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h),
                        uint32_t(s.stride_w), ch, ch, ch, -kInf, kInf, 0, band_op)
                  : xnn_create_max_pooling2d_nhwc_f32(
                        uint32_t(cut.pad_top), uint32_t(pad_r), uint32_t(cut.pad_bottom), uint32_t(s.pad_left),
                        uint32_t(s.kernel_h), uint32_t(s.kernel_w), uint32_t(s.stride_h),
                        uint32_t(s.stride_w), 1, 1, ch, ch, ch, -kInf, kInf, 0, band_op);
              if (created != xnn_status_success) return created;
              const float* in = x + cut.in_begin * s.in_width * s.channels;
              float* out = y + band.begin * ow * s.channels;
              return average ? xnn_setup_average_pooling2d_nhwc_f32(*band_op, 1, size_t(cut.in_rows),
                                                                    size_t(s.in_width), in, out, nullptr)
                             : xnn_setup_max_pooling2d_nhwc_f32(*band_op, 1, size_t(cut.in_rows),
                                                                size_t(s.in_width), in, out, nullptr);
            },
            "pooling for " + where, 0, pool.thread_count());
        step.own = [sliced, pool_ptr] { sliced.run(*pool_ptr); };
        break;
      }
      if (st == xnn_status_success) {
        add_op(op);
        st = average ? xnn_setup_average_pooling2d_nhwc_f32(op, size_t(s.batch), size_t(s.in_height),
                                                            size_t(s.in_width), x, y, tp)
                     : xnn_setup_max_pooling2d_nhwc_f32(op, size_t(s.batch), size_t(s.in_height),
                                                        size_t(s.in_width), x, y, tp);
        check_xnn(st, "pooling setup for " + where);
      } else {
        // Shapes XNNPACK declines (e.g. a 1x1 window): the backend's own kernel.
        step.own = [=] {
          if (average) {
            average_pool2d_nhwc(s, x, y, *pool_ptr);
          } else {
            max_pool2d_nhwc(s, x, y, *pool_ptr);
          }
        };
      }
      break;
    }
    case Op::kGlobalAveragePool: {
      // Each channel's mean alone: ranges of channels on the pool give the same bits.
      const size_t ch = size_t(p.in_dims[1]);
      const size_t batch = size_t(p.in_dims[0]), plane = size_t(p.in_dims[2] * p.in_dims[3]);
      const SlicedOperator sliced = SlicedOperator::per_range(
          int64_t(ch), int64_t(batch * plane),
          [&](SliceRange r, xnn_operator_t* op) {
            xnn_status st = xnn_create_global_average_pooling_nwc_f32(
                size_t(r.end - r.begin), ch, ch, -kInf, kInf, 0, op);
            if (st == xnn_status_success) {
              st = xnn_setup_global_average_pooling_nwc_f32(*op, batch, plane, x + r.begin,
                                                            y + r.begin, nullptr);
            }
            return st;
          },
          "global average pooling for " + where, 0, pool.thread_count());
      step.own = [sliced, pool_ptr] { sliced.run(*pool_ptr); };
      break;
    }
    case Op::kGlobalMaxPool: {
      const int64_t n = p.in_dims[0], ch = p.in_dims[1], plane = p.in_dims[2] * p.in_dims[3];
      step.own = [=] { global_max_pool_nhwc(x, y, n, plane, ch, *pool_ptr); };
      break;
    }
    case Op::kRelu:
      unary_op(xnn_create_clamp_nc_f32, xnn_setup_clamp_nc_f32, 0.0f, kInf);
      break;
    case Op::kClip:
      unary_op(xnn_create_clamp_nc_f32, xnn_setup_clamp_nc_f32, p.value0, p.value1);
      break;
    case Op::kSigmoid:
      unary_op(xnn_create_sigmoid_nc_f32, xnn_setup_sigmoid_nc_f32);
      break;
    case Op::kHardSwish:
      unary_op(xnn_create_hardswish_nc_f32, xnn_setup_hardswish_nc_f32);
      break;
    case Op::kLrn: {
      const int64_t pixels = p.in_dims[0] * p.in_dims[2] * p.in_dims[3], ch = p.in_dims[1];
      const int64_t size = p.size;
      const float alpha = p.value0, beta = p.value1, bias = p.value2;
      step.own = [=] { lrn_nhwc(x, y, pixels, ch, size, alpha, beta, bias, *pool_ptr); };
      break;
    }
    case Op::kBatchNormalization: {
      const int64_t batch = p.in_dims[0], ch = p.in_dims[1];
      const int64_t plane = count / (batch * ch);
      auto folded = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * ch));
      reference::fold_batch_norm(ch, constant(p.inputs[1]), constant(p.inputs[2]),
                                 constant(p.inputs[3]), constant(p.inputs[4]), p.value0,
                                 folded->data(), folded->data() + ch);
      if (p.in_dims.size() == 4 || plane == 1) {
        step.own = [=] {
          channel_affine_nhwc(x, y, batch * plane, ch, folded->data(),
                                       folded->data() + ch, *pool_ptr);
        };
      } else {
        step.own = [=] {
          reference::batch_norm(x, y, batch, ch, plane, folded->data(), folded->data() + ch, nullptr);
        };
      }
      break;
    }
    case Op::kConcat: {
      // The decoded axis: guessing it from where the first input's dims differ from the output's
      // fails for a one-input Concat (DenseNet's first layer of each block), whose row length
      // then came out larger than the output stride.
      if (p.inputs.size() == 1) {
        step.own = [=] { copy_floats(x, y, count, *pool_ptr); };
        break;
      }
      int64_t outer = 0, axis_len = 0, inner = 0;
      split_at_axis(internal_dims(p.out_dims), internal_axis(p.axis, p.out_dims.size()), &outer,
                    &axis_len, &inner);
      // Each input fills concat_axis[i] * inner floats of each of `outer` output rows; on the pool
      // (XNNPACK's copy ran on the caller alone: a detector's concatenations of 0.2-2 MB were
      // the largest serial part of its frame).
      auto inputs = std::make_shared<std::vector<const float*>>();
      auto widths = std::make_shared<std::vector<int64_t>>();
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        inputs->push_back(buffers[p.inputs[i]]);
        widths->push_back(p.concat_axis[i] * inner);
      }
      step.own = [=] { concat_rows(*inputs, *widths, outer, y, *pool_ptr); };
      break;
    }
    case Op::kAdd: {
      // Element-wise: ranges of elements on the pool give the same bits.
      const auto [lo, hi] = activation_range(p.activation);
      const float* x2 = buffers[p.inputs[1]];
      const SlicedOperator sliced = SlicedOperator::per_range(
          count, 2,  // two inputs read per element
          [&](SliceRange r, xnn_operator_t* op) {
            xnn_status st = xnn_create_add_nd_f32(lo, hi, 0, op);
            const size_t shape[1] = {size_t(r.end - r.begin)};
            if (st == xnn_status_success) {
              st = xnn_setup_add_nd_f32(*op, 1, shape, 1, shape, x + r.begin, x2 + r.begin, y + r.begin, nullptr);
            }
            return st;
          },
          "add for " + where, 0, pool.thread_count());
      step.own = [sliced, pool_ptr] { sliced.run(*pool_ptr); };
      break;
    }
    case Op::kSoftmax: {
      const int64_t axis = p.axis;
      int64_t outer = 0, axis_len = 0, inner = 0;
      split_at_axis(internal_dims(p.in_dims), internal_axis(axis, p.in_dims.size()), &outer,
                    &axis_len, &inner);
      if (inner == 1) {
        xnn_operator_t op = nullptr;
        check_xnn(xnn_create_softmax_nc_f32(size_t(axis_len), size_t(axis_len), size_t(axis_len), 0, &op),
                  "softmax create for " + where);
        add_op(op);
        check_xnn(xnn_setup_softmax_nc_f32(op, size_t(outer), x, y, tp), "softmax setup for " + where);
      } else {
        step.own = [=] { softmax_lines(x, y, outer, axis_len, inner, *pool_ptr); };
      }
      break;
    }
    case Op::kChannelScale: {
      // x[N, HW, C] * s[N, 1, C]: XNNPACK's multiply broadcasts the squeeze-excite gate; for one
      // image, ranges of pixels on the pool (element-wise: same bits).
      const int64_t n = p.in_dims[0], ch = p.in_dims[1], plane = p.in_dims[2] * p.in_dims[3];
      const float* gate = buffers[p.inputs[1]];
      const SlicedOperator sliced = SlicedOperator::per_range(
          plane, ch,
          [&](SliceRange r, xnn_operator_t* op) {
            xnn_status st = xnn_create_multiply_nd_f32(-kInf, kInf, 0, op);
            const size_t x_shape[3] = {size_t(n), size_t(r.end - r.begin), size_t(ch)};
            const size_t s_shape[3] = {size_t(n), 1, size_t(ch)};
            if (st == xnn_status_success) {
              st = xnn_setup_multiply_nd_f32(*op, 3, x_shape, 3, s_shape, x + r.begin * ch, gate,
                                             y + r.begin * ch, nullptr);
            }
            return st;
          },
          "multiply for " + where, n == 1 ? 0 : 1, pool.thread_count());
      step.own = [sliced, pool_ptr] { sliced.run(*pool_ptr); };
      break;
    }
    case Op::kHardSigmoid: {
      const float alpha = p.value0, beta = p.value1;
      step.own = [=] { hard_sigmoid_nc(x, y, count, alpha, beta, *pool_ptr); };
      break;
    }
    case Op::kSiLU:
      step.own = [=] { silu_nc(x, y, count, *pool_ptr); };
      break;
    case Op::kChannelShuffle: {
      const int64_t groups = p.groups, ch = p.in_dims[1];
      if (groups == 1 || groups == ch) {  // the identity permutation; XNNPACK wants 1 < groups < C
        step.own = [=] { copy_floats(x, y, count, *pool_ptr); };
        break;
      }
      xnn_operator_t op = nullptr;
      check_xnn(xnn_create_channel_shuffle_nc_x32(size_t(groups), size_t(ch / groups), size_t(ch),
                                                  size_t(ch), 0, &op),
                "channel shuffle create for " + where);
      add_op(op);
      check_xnn(xnn_setup_channel_shuffle_nc_x32(op, size_t(p.in_dims[0] * p.in_dims[2] * p.in_dims[3]),
                                                 x, y, tp),
                "channel shuffle setup for " + where);
      break;
    }
    case Op::kFlatten:
    case Op::kReshape:
    case Op::kIdentity: {
      const auto& in = p.in_dims;
      const auto& out = p.out_dims;
      const bool in_nhwc = needs_transpose(in);
      const bool out_nhwc = needs_transpose(out);
      if (p.op == Op::kIdentity || (!in_nhwc && !out_nhwc)) {
        step.own = [=] { copy_floats(x, y, count, *pool_ptr); };
      } else if (in_nhwc && !out_nhwc) {
        step.own = [=] { nhwc_to_nchw(x, y, in[0], in[1], in[2] * in[3], *pool_ptr); };
      } else if (!in_nhwc && out_nhwc) {
        step.own = [=] { nchw_to_nhwc(x, y, out[0], out[1], out[2] * out[3], *pool_ptr); };
      } else {
        auto scratch = std::make_shared<Buffer<float>>(count);
        step.own = [=] {
          nhwc_to_nchw(x, scratch->data(), in[0], in[1], in[2] * in[3], *pool_ptr);
          nchw_to_nhwc(scratch->data(), y, out[0], out[1], out[2] * out[3], *pool_ptr);
        };
      }
      break;
    }
    case Op::kTensorOp:  // alone, every 4-D tensor NHWC (compile plans layouts per sub-graph)
      return build_tensor_step(graph, index, p, buffers, pool, TensorLayouts{});
  }
  return step;
}

namespace {

// The other operand of `add` when it adds the result of convolution `conv` to something else.
uint32_t residual_operand(const NodePlan& conv, const NodePlan& add) {
  if (add.op != Op::kAdd || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) {
    return CO_UP_NO_TENSOR;
  }
  if (add.inputs[0] == conv.output) return add.inputs[1];
  if (add.inputs[1] == conv.output) return add.inputs[0];
  return CO_UP_NO_TENSOR;
}

}  // namespace

StepFusions plan_step_fusions(const co_up_subgraph_desc& graph, const backends::SubgraphPlan& plan) {
  const std::vector<NodePlan>& nodes = plan.nodes;
  const auto node_count = static_cast<uint32_t>(nodes.size());
  std::vector<int> uses(graph.tensor_count, 0);
  std::vector<uint32_t> producer(graph.tensor_count, node_count);
  for (uint32_t n = 0; n < node_count; ++n) {
    for (uint32_t t : nodes[n].inputs) {
      if (t != CO_UP_NO_TENSOR) ++uses[t];
    }
    producer[nodes[n].output] = n;
  }
  // A tensor only its one consumer in this sub-graph reads, so its producer may write elsewhere.
  auto private_result = [&](uint32_t t) {
    return uses[t] == 1 && !plan.is_output[t] && !plan.is_input[t] && producer[t] < node_count;
  };
  StepFusions f;
  f.writes.resize(node_count);
  f.fused.resize(node_count);
  f.extra_reads.resize(node_count);
  for (uint32_t n = 0; n < node_count; ++n) f.writes[n] = nodes[n].output;

  // Concat elision: a channel Concat whose inputs are all private convolution results gets them
  // written straight into its output, each convolution at its channel offset with the Concat's
  // channel count as pixel stride (GoogLeNet's inception and SqueezeNet's fire modules then copy
  // nothing).
  for (uint32_t n = 0; n < node_count; ++n) {
    const NodePlan& p = nodes[n];
    if (p.op != Op::kConcat || p.out_dims.size() != 4 || p.inputs.size() < 2 ||
        p.in_dims[1] == p.out_dims[1]) {
      continue;  // not a concatenation over channels
    }
    const bool all_convolutions = std::all_of(p.inputs.begin(), p.inputs.end(), [&](uint32_t t) {
      return private_result(t) && nodes[producer[t]].op == Op::kConv &&
             nodes[producer[t]].out_dims.size() == 4;
    });
    if (!all_convolutions) continue;
    int64_t offset = 0;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const uint32_t conv = producer[p.inputs[i]];
      f.fused[conv] = StepFusions::Write{p.output, offset, p.out_dims[1], CO_UP_NO_TENSOR,
                                         nodes[conv].conv.activation};
      f.writes[conv] = p.output;
      offset += p.concat_axis[i];
    }
    f.writes[n] = CO_UP_NO_TENSOR;
  }
  // Residual fusion: a convolution without activation whose only consumer is the next node, an
  // Add in the same layer, adds the other operand in its epilogue (AVX-512 convolutions only).
  for (uint32_t n = 0; n + 1 < node_count; ++n) {
    const NodePlan& p = nodes[n];
    if (f.fused[n] || f.writes[n] == CO_UP_NO_TENSOR || p.op != Op::kConv ||
        p.conv.activation != Activation::kNone || !avx512_conv_wins(p.conv) ||
        !private_result(p.output) ||
        element_at(graph.nodes, n).layer != element_at(graph.nodes, n + 1).layer) {
      continue;
    }
    const NodePlan& add = nodes[n + 1];
    const uint32_t residual = residual_operand(p, add);
    if (residual == CO_UP_NO_TENSOR || add.out_dims != p.out_dims) continue;
    f.fused[n] = StepFusions::Write{add.output, 0, p.conv.out_channels, residual, add.activation};
    f.writes[n] = add.output;
    f.writes[n + 1] = CO_UP_NO_TENSOR;  // the Add: done by the convolution
    ++n;
  }
  // SiLU fusion: a convolution on the own AVX-512 or depthwise kernels (no activation) whose only
  // consumer is the next node, a SiLU in the same layer, applies it in its epilogue (silu_nc
  // computes the same bits).
  for (uint32_t n = 0; n + 1 < node_count; ++n) {
    const NodePlan& p = nodes[n];
    const NodePlan& act = nodes[n + 1];
    if (p.op != Op::kConv || act.op != Op::kSiLU || act.inputs.empty() || act.inputs[0] != p.output ||
        f.writes[n] != p.output || f.writes[n + 1] != act.output ||
        f.fused[n] || p.conv.activation != Activation::kNone ||
        !(avx512_conv_wins(p.conv) || (avx512_gemm_available() && depthwise_kernel_wins(p.conv))) ||
        !private_result(p.output) ||
        element_at(graph.nodes, n).layer != element_at(graph.nodes, n + 1).layer) {
      continue;
    }
    f.fused[n] = StepFusions::Write{act.output, 0, p.conv.out_channels, CO_UP_NO_TENSOR, Activation::kNone, true};
    f.writes[n] = act.output;
    f.writes[n + 1] = CO_UP_NO_TENSOR;  // the SiLU: done by the convolution
    ++n;
  }
  // HardSwish fusion: the same for a convolution followed by HardSwish (MobileNetV3), on the own
  // AVX-512 kernel (its epilogue) or XNNPACK's (each slice applies it to the outputs it wrote, in
  // the same chunk); not on the own depthwise kernel.
  for (uint32_t n = 0; n + 1 < node_count; ++n) {
    const NodePlan& p = nodes[n];
    const NodePlan& act = nodes[n + 1];
    if (p.op != Op::kConv || act.op != Op::kHardSwish || act.inputs.empty() || act.inputs[0] != p.output ||
        f.writes[n] != p.output || f.writes[n + 1] != act.output || f.fused[n] ||
        p.conv.activation != Activation::kNone || p.out_dims.size() != 4 ||
        (!own_conv_runs(p.conv, false) && depthwise_kernel_wins(p.conv)) || !private_result(p.output) ||
        element_at(graph.nodes, n).layer != element_at(graph.nodes, n + 1).layer) {
      continue;
    }
    f.fused[n] = StepFusions::Write{act.output, 0, p.conv.out_channels, CO_UP_NO_TENSOR, Activation::kNone, false, true};
    f.writes[n] = act.output;
    f.writes[n + 1] = CO_UP_NO_TENSOR;  // the HardSwish: done by the convolution
    ++n;
  }
  plan_tensor_layouts(graph, plan, f);
  return f;
}

std::vector<F32Step> build_f32_steps(const co_up_subgraph_desc& graph,
                                     const backends::SubgraphPlan& plan, const StepFusions& fusions,
                                     const std::vector<float*>& buffers, const CpuPool& pool) {
  const std::vector<NodePlan>& nodes = plan.nodes;
  std::vector<F32Step> steps;
  steps.reserve(nodes.size());
  for (uint32_t n = 0; n < nodes.size(); ++n) {
    const NodePlan& p = nodes[n];
    if (fusions.writes[n] == CO_UP_NO_TENSOR) {
      steps.emplace_back();  // done by other nodes' steps
    } else if (const auto& w = fusions.fused[n]) {
      const ConvTarget target{buffers[w->tensor] + w->channel_offset, w->pixel_stride,
                              w->residual == CO_UP_NO_TENSOR ? nullptr : buffers[w->residual],
                              w->activation, w->silu, w->hardswish};
      steps.push_back(build_conv_step(p.conv, constant_data(graph, p.inputs[1]), constant_data(graph, p.inputs[2]),
                                      buffers[p.inputs[0]], target, pool, node_where(graph, n)));
    } else if (is_tensor_step(p, fusions.layouts)) {
      steps.push_back(build_tensor_step(graph, n, p, buffers, pool, fusions.layouts));
    } else {
      steps.push_back(build_f32_step(graph, n, p, buffers, pool));
    }
  }
  return steps;
}

}  // namespace co_up::xnnpack
