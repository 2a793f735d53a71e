// f32 execution of one decoded node on NHWC buffers, with XNNPACK's f32 operators and
// cpu-xnnpack's own NHWC kernels (same semantics as cpu-xnnpack, which cpu-reference checks).
//
// The npu-int8 backend needs f32 twice: to run its whole partition during the calibration frames
// (recording every tensor's range), and afterwards for the ops that have no int8 kernel here (LRN,
// Softmax, HardSwish, AveragePool, BatchNormalization), which keep running in f32 between a
// dequantise and a quantise.
#pragma once

#include <xnnpack.h>

#include <functional>
#include <vector>

#include "co_up/plugin_abi.h"
#include "int8_xnn.h"
#include "node_decode.h"
#include "xnn_thread_pool.h"

namespace co_up::int8 {

struct F32Step {
  std::vector<XnnOperator> ops;  // run in order, when present
  std::function<void()> own;     // a cpu-xnnpack kernel, when present

  void run(pthreadpool_t threadpool) const;
};

// Creates and sets up node `index` of `graph` (decoded as `plan`) to read and write the NHWC f32
// buffers `buffers[tensor]` (the plan's activation inputs and its output must have one; constant
// weights are read from `graph` now and packed). The buffers and the pool must outlive the step.
// Throws PluginError.
F32Step build_f32_step(const co_up_subgraph_desc& graph, uint32_t index,
                       const backends::NodePlan& plan, const std::vector<float*>& buffers,
                       const xnnpack::CpuPool& pool);

}  // namespace co_up::int8
