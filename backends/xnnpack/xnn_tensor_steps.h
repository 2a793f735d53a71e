// cpu-xnnpack's steps for the rank-N (transformer) ops: MatMul on the backend's batched GEMM
// (xnn_gemm.h), the element-wise, normalisation, softmax and data-movement kernels of
// xnn_tensor_kernels.h, and the rarely hot Reduce and Gather on cpu-reference's kernels.
//
// Layouts (TensorLayouts in xnn_steps.h): a step reads each operand through its strides (NHWC for
// a 4-D tensor held that way, row-major for a plain one, permuted for a folded Transpose).
// MatMul, Transpose and Slice read any strides directly; the other kernels want row-major
// operands and get them through a conversion into a buffer of the step's own, made at creation
// (only where a 4-D tensor of a CNN part meets a rank-N op; nothing is allocated per run).
#pragma once

#include <cstdint>
#include <vector>

#include "xnn_steps.h"

namespace co_up::xnnpack {

// Fills f.layouts and folds every Transpose whose only reader is a MatMul of this sub-graph into
// that MatMul (the Transpose's step becomes empty: f.writes; its input is read by the MatMul:
// f.extra_reads). `f.writes` and `f.extra_reads` must have one entry per node.
void plan_tensor_layouts(const co_up_subgraph_desc& graph, const backends::SubgraphPlan& plan,
                         StepFusions& f);

// Whether node `p` is built by build_tensor_step: a rank-N op, every Softmax of a 4-D tensor
// (plain or NHWC, so that its result does not depend on where sub-graph boundaries fall), or a
// Reshape / Flatten / Identity that reads or writes a plain 4-D tensor.
bool is_tensor_step(const backends::NodePlan& p, const TensorLayouts& layouts);

// As build_f32_step, for the nodes is_tensor_step names. Throws PluginError.
F32Step build_tensor_step(const co_up_subgraph_desc& graph, uint32_t index,
                          const backends::NodePlan& p, const std::vector<float*>& buffers,
                          const CpuPool& pool, const TensorLayouts& layouts);

}  // namespace co_up::xnnpack
