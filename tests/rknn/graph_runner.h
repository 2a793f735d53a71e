// ReferenceGraphRunner: runs the nodes of a co_up Graph with the cpu-reference kernels
// (backends/reference/ref_kernels.h), on the calling thread, keeping every tensor addressable by
// its TensorId. The numerics are cpu-reference's; what it adds is access to intermediate tensors
// (a partition's boundary values) without the plugin ABI or the Executor.
//
// Used by the ONNX export round trip (tests/onnx) and by the fake librknnrt.so (tests/rknn), which
// computes an exported partition with it. Weights are packed once, at construction.
//
// Threading: one runner is used by one thread at a time. The Graph must outlive the runner.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "graph/graph.h"
#include "ref_kernels.h"

namespace co_up::test {

class ReferenceGraphRunner {
 public:
  // Prepares `nodes` (every non-Input node of the graph when empty), in the order given.
  // Throws std::invalid_argument naming a node it cannot run.
  explicit ReferenceGraphRunner(const graph::Graph& graph, std::vector<graph::NodeId> nodes = {});

  // The values of tensor `t`: constants hold their data; inputs are written by the caller before
  // run(); everything the nodes compute is valid after it. Sized to the tensor's element count.
  std::span<float> values(graph::TensorId t);

  void run();

 private:
  using Step = std::function<void()>;
  Step build_step(const graph::Node& node);
  float* data(graph::TensorId t);

  const graph::Graph& graph_;
  std::vector<reference::AlignedBuffer> tensors_;  // per TensorId; empty if unused
  size_t scratch_floats_ = 0;
  reference::AlignedBuffer scratch_;  // GEMM panels shared by every Conv
  std::vector<Step> steps_;
};

// Runs the whole graph on `inputs` (one per graph input) and returns its outputs.
std::vector<std::vector<float>> run_reference(const graph::Graph& graph,
                                              const std::vector<std::vector<float>>& inputs);

}  // namespace co_up::test
