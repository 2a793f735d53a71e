// Operators of the co_up IR: names and attributes, as they cross the plugin ABI.
//
// CNN activations are 4-D NCHW f32 tensors; the transformer ops below take rank-N f32 tensors (batch N is 1 in the zoo, but kernels
// handle any N). Names and attributes follow ONNX where ONNX has the operator, so importers map
// one-to-one. Every attribute listed is always present on a node the builder made.
//
//  op_type            inputs                         attributes (type)
//  ------------------ ------------------------------ ---------------------------------------------
//  Conv               X, W[M, C/group, kH, kW], B[M]? strides(ints 2), pads(ints 4: top,left,
//                                                    bottom,right), dilations(ints 2), group(int),
//                                                    activation(string: "none"|"relu"|"relu6")
//                     Depthwise = group == C == M (or M a multiple of C).
//  FullyConnected     X[N, K] (or N,C,H,W flattened), W[M, K], B[M]?   activation(string)
//                     Y[n, m] = sum_k X[n, k] * W[m, k] + B[m]
//  MaxPool            X                              kernel_shape(ints 2), strides(ints 2),
//  AveragePool                                       pads(ints 4), ceil_mode(int 0|1),
//                                                    count_include_pad(int, AveragePool only)
//                     Padding never wins a max; out = floor_or_ceil((H + pt + pb - k) / s) + 1,
//                     and with ceil_mode the last window must start inside the input or top/left
//                     padding (ONNX/Caffe rule).
//  GlobalAveragePool  X                              -           (Y is N,C,1,1)
//  GlobalMaxPool      X                              -
//  Relu               X                              -
//  Clip               X                              min(float), max(float)   (ReLU6 = Clip 0..6)
//  Sigmoid            X                              -
//  HardSwish          X                              -   y = x * clip(x + 3, 0, 6) / 6
//  LRN                X                              size(int), alpha(float), beta(float),
//                                                    bias(float)   across channels, ONNX formula:
//                     y = x / (bias + alpha / size * sum_{c' in window} x[c']^2) ^ beta
//  BatchNormalization X, scale, bias, mean, var      epsilon(float)  (folded into Conv at load;
//                                                    backends may still see it after a non-Conv)
//  Concat             X0, X1, ...                    axis(int)
//  Add                A, B (numpy broadcasting)      activation(string)
//  Sub, Mul, Div, Pow A, B (numpy broadcasting)      -   either operand may be computed or constant
//  Sqrt, Erf, Tanh,   X                              -   element-wise, any rank
//    Exp
//  MatMul             A[..., M, K], B[..., K, N]     -   numpy matmul: batch dims broadcast, rank >= 2
//                                                        (1-D operands are reshaped at import)
//  Transpose          X                              perm(ints, a permutation of 0..rank-1)
//  ReduceMean,        X                              axes(ints: sorted, distinct, >= 0),
//    ReduceSum                                       keepdims(int 0|1)
//  Gather             X                              axis(int), indices(ints, each in [0, dim)),
//                                                    indices_shape(ints)   constant indices only
//  Slice              X                              starts(ints), ends(ints), steps(ints): one per
//                                                    axis, starts in [0, dim), steps >= 1
//                     out[d] = ceil((ends[d] - starts[d]) / steps[d])
//  LayerNormalization X, Scale, Bias?                axis(int), epsilon(float): normalises over
//                                                    axes axis..rank-1, Scale/Bias of that shape
//  Gelu               X                              approximate(string: "none" (erf) | "tanh")
//  LeakyRelu          X                              alpha(float)   y = x >= 0 ? x : alpha * x
//  Resize             X (rank >= 2)                  mode(string: "nearest" | "linear"),
//                                                    coordinate_transformation_mode(string:
//                                                    "asymmetric" | "half_pixel" |
//                                                    "pytorch_half_pixel" | "align_corners"),
//                                                    nearest_mode(string: "floor" |
//                                                    "round_prefer_floor" | "round_prefer_ceil" |
//                                                    "ceil"), sizes(ints: the output shape),
//                                                    scales(floats: per axis, the scale the
//                                                    coordinate transform divides by; 1 and
//                                                    sizes == input on all but the last 2 axes)
//                     ONNX Resize semantics; linear is bilinear over the last two axes with the
//                     source index clamped into the input (edge values).
//  Pad                X                              mode(string: "constant" | "reflect" |
//                                                    "edge"), pads(ints 2*rank: begins then ends,
//                                                    >= 0; reflect needs pads < dim), value(float)
//  Softmax            X                              axis(int)   (over that one axis)
//  Flatten            X                              axis(int)   -> 2-D [prod(dims<axis), rest]
//  Reshape            X                              shape(ints)  (resolved, no -1 or 0 entries),
//                                                    any rank (Squeeze/Unsqueeze map here)
//  Identity           X                              -   (Dropout at inference maps here)
//
// CNN forms (4-D NCHW only; not the generic rank-N elementwise ops):
//  ChannelScale       X[N,C,H,W], S[N,C,1,1]         -   Y = X * S broadcast over H and W: the
//                     (both computed)                    squeeze-excite gate of MobileNetV3,
//                                                        EfficientNet, RegNetY (ONNX: Mul)
//  HardSigmoid        X                              alpha(float), beta(float)
//                                                        y = max(0, min(1, alpha * x + beta))
//  SiLU               X                              -   y = x * sigmoid(x) (Swish; ONNX:
//                                                        Mul(x, Sigmoid(x)), fused at import)
//  ChannelShuffle     X[N,C,H,W]                     groups(int, divides C)   ShuffleNet's
//                     Reshape [N,g,C/g,H,W] -> Transpose(0,2,1,3,4) -> Reshape [N,C,H,W]:
//                     Y[n, j*g + i] = X[n, i*(C/g) + j], i < g, j < C/g
//
// "activation" is a fused activation the graph passes may attach to Conv, FullyConnected and Add;
// the builder always sets it to "none", fusion sets it. Backends must honour it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace co_up::graph {

enum class OpType : uint8_t {
  kInput,  // graph input placeholder: no computation, never sent to a backend
  kConv,
  kFullyConnected,
  kMaxPool,
  kAveragePool,
  kGlobalAveragePool,
  kGlobalMaxPool,
  kRelu,
  kClip,
  kSigmoid,
  kHardSwish,
  kLrn,
  kBatchNormalization,
  kConcat,
  kAdd,
  kSoftmax,
  kFlatten,
  kReshape,
  kIdentity,
  // CNN forms (see the table above).
  kChannelScale,
  kHardSigmoid,
  kSiLU,
  kChannelShuffle,
  kSub,
  kMul,
  kDiv,
  kPow,
  kSqrt,
  kErf,
  kTanh,
  kExp,
  kMatMul,
  kTranspose,
  kReduceMean,
  kReduceSum,
  kGather,
  kSlice,
  kLayerNormalization,
  kGelu,
  kLeakyRelu,
  kResize,
  kPad,
};

// ABI spelling of an op ("Conv", "FullyConnected", ...).
std::string_view op_type_name(OpType op);
std::optional<OpType> op_type_from_name(std::string_view name);

// Compute ops start a new layer unit with --units=ops and carry the MAC count (Conv,
// FullyConnected, MatMul).
bool is_compute_op(OpType op);

// Element-wise binary ops with numpy broadcasting (Add, Sub, Mul, Div, Pow).
bool is_broadcast_binary_op(OpType op);
// Element-wise unary ops without attributes that keep the shape (Relu, Sigmoid, Sqrt, Erf, ...).
bool is_unary_math_op(OpType op);

}  // namespace co_up::graph
