// f32 execution of one decoded node on NHWC buffers: XNNPACK's f32 operators, cpu-xnnpack's own
// NHWC kernels, and (on x86-64 CPUs with AVX-512) the backend's own convolutions.
//
// Both plugins build their f32 work here: cpu-xnnpack for every node of its sub-graphs, npu-int8
// for its calibration frames and for the ops it has no int8 kernel for (LRN, Softmax, HardSwish,
// AveragePool, BatchNormalization), which run in f32 between a dequantise and a quantise.
#pragma once

#include <xnnpack.h>

#include <functional>
#include <optional>
#include <vector>

#include "co_up/plugin_abi.h"
#include "node_decode.h"
#include "subgraph_plan.h"
#include "xnn_common.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

struct F32Step {
  std::vector<XnnOperator> ops;  // run in order, when present
  bool ops_on_pool = true;       // false: `ops` were set up without the pool, run on the caller
  std::function<void()> own;     // the backend's own kernel, when present

  void run(const CpuPool& pool) const;
};

// Creates and sets up node `index` of `graph` (decoded as `plan`) to read and write the NHWC f32
// buffers `buffers[tensor]` (the plan's activation inputs and its output must have one; constant
// weights are read from `graph` now and packed). The buffers and the pool must outlive the step.
// Throws PluginError.
F32Step build_f32_step(const co_up_subgraph_desc& graph, uint32_t index,
                       const backends::NodePlan& plan, const std::vector<float*>& buffers,
                       const CpuPool& pool);

// How the rank-N (transformer) steps hold their tensors (xnn_tensor_steps.h). Every 4-D tensor is
// NHWC inside a sub-graph except those that only rank-N steps (and Reshape, Flatten, Identity,
// Softmax) touch: those stay in their logical row-major order, so attention's [batch, heads,
// tokens, features] tensors are never reordered. A Transpose whose one reader is a MatMul is not
// run: the MatMul reads the Transpose's input through the permutation.
struct TensorLayouts {
  std::vector<bool> plain;  // per tensor; empty: none
  struct Fold {
    uint32_t source = CO_UP_NO_TENSOR;
    std::vector<int64_t> perm;
  };
  std::vector<std::optional<Fold>> folded;  // per tensor; empty: none

  bool is_plain(uint32_t t) const { return t < plain.size() && plain[t]; }
  const Fold* fold_of(uint32_t t) const { return t < folded.size() && folded[t] ? &*folded[t] : nullptr; }
};

// Two fusions that save passes over memory, decided from the graph alone (before any buffer
// exists, so that the memory plan knows which node writes which tensor):
//  - a channel Concat whose inputs are all convolution results nothing else reads gets them
//    written straight into its output (each convolution at its channel offset);
//  - a convolution without activation whose only consumer is the next node, an Add in the same
//    layer, adds the other operand in its epilogue (AVX-512 convolutions only, avx512_conv.h);
//    so for a following SiLU, and for a following HardSwish also on XNNPACK's convolutions (each
//    slice applies it to what it wrote, xnn_sliced_ops.h).
// Results equal the unfused steps' up to the rounding of that one addition.
struct StepFusions {
  // A convolution writing elsewhere than its own output.
  struct Write {
    uint32_t tensor = CO_UP_NO_TENSOR;  // whose buffer it writes (the Concat's or the Add's output)
    int64_t channel_offset = 0;         // its first channel there
    int64_t pixel_stride = 0;           // floats between pixels there
    uint32_t residual = CO_UP_NO_TENSOR;  // the tensor it adds before the activation, if any
    backends::Activation activation = backends::Activation::kNone;
    bool silu = false;  // a following SiLU done in the convolution's epilogue
    bool hardswish = false;  // a following HardSwish done in the convolution's epilogue
  };
  std::vector<std::optional<Write>> fused;  // per node
  // Per node, the tensor its step writes: its output, a fused target, or CO_UP_NO_TENSOR when its
  // step is empty (a Concat written in place, an Add done by the convolution before it).
  std::vector<uint32_t> writes;
  // Per node, tensors its step reads besides its inputs (a folded Transpose's input).
  std::vector<std::vector<uint32_t>> extra_reads;
  TensorLayouts layouts;
};
StepFusions plan_step_fusions(const co_up_subgraph_desc& graph, const backends::SubgraphPlan& plan);

// Every node's step of a sub-graph, in order, as build_f32_step makes them, with `fusions`
// applied (nodes whose work another step does get an empty step; per-layer hooks still run).
std::vector<F32Step> build_f32_steps(const co_up_subgraph_desc& graph,
                                     const backends::SubgraphPlan& plan, const StepFusions& fusions,
                                     const std::vector<float*>& buffers, const CpuPool& pool);

}  // namespace co_up::xnnpack
