// f32 execution of one decoded node on NHWC buffers: XNNPACK's f32 operators, cpu-xnnpack's own
// NHWC kernels, and (on x86-64 CPUs with AVX-512) the backend's own convolutions.
//
// Both plugins build their f32 work here: cpu-xnnpack for every node of its sub-graphs, npu-int8
// for its calibration frames and for the ops it has no int8 kernel for (LRN, Softmax, HardSwish,
// AveragePool, BatchNormalization), which run in f32 between a dequantise and a quantise.
#pragma once

#include <xnnpack.h>

#include <functional>
#include <vector>

#include "co_up/plugin_abi.h"
#include "node_decode.h"
#include "subgraph_plan.h"
#include "xnn_common.h"
#include "xnn_thread_pool.h"

namespace co_up::xnnpack {

struct F32Step {
  std::vector<XnnOperator> ops;  // run in order, when present
  std::function<void()> own;     // the backend's own kernel, when present

  void run(pthreadpool_t threadpool) const;
};

// Creates and sets up node `index` of `graph` (decoded as `plan`) to read and write the NHWC f32
// buffers `buffers[tensor]` (the plan's activation inputs and its output must have one; constant
// weights are read from `graph` now and packed). The buffers and the pool must outlive the step.
// Throws PluginError.
F32Step build_f32_step(const co_up_subgraph_desc& graph, uint32_t index,
                       const backends::NodePlan& plan, const std::vector<float*>& buffers,
                       const CpuPool& pool);

// Every node's step of a sub-graph, in order, as build_f32_step makes them, with two fusions that
// save passes over memory (their nodes' steps are then empty; per-layer hooks still run):
//  - a channel Concat whose inputs are all convolution results nothing else reads gets them
//    written straight into its output (each convolution at its channel offset);
//  - a convolution without activation whose only consumer is the next node, an Add in the same
//    layer, adds the other operand in its epilogue (AVX-512 convolutions only, avx512_conv.h).
// Results equal the unfused steps' up to the rounding of that one addition.
std::vector<F32Step> build_f32_steps(const co_up_subgraph_desc& graph,
                                     const backends::SubgraphPlan& plan,
                                     const std::vector<float*>& buffers, const CpuPool& pool);

}  // namespace co_up::xnnpack
