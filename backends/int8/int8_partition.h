// Int8Partition: one compiled partition of the npu-int8 backend — the whole sub-graph an
// accelerator node stands for, quantised to int8 and run as one unit.
//
// Life of a partition:
//   compile      every node decoded and validated; its f32 step created (XNNPACK f32 operators,
//                weights packed) and, for convolutions and fully connected layers, its weights
//                quantised per output channel (symmetric int8, scale = max|w| / 127).
//   calibration  the first `calibration_frames` runs execute the partition in f32 and record the
//                range of every activation (the partition's inputs included).
//   switch       after the last calibration run: asymmetric int8 parameters per tensor, int32
//                biases, the int8 operators created (XNNPACK's qc8/qs8/s8 operators, or the
//                AVX512-VNNI convolutions where the CPU has them), f32 steps kept only for the
//                ops without an int8 kernel (LRN, Softmax, HardSwish, AveragePool,
//                BatchNormalization, and any an int8 operator declines), each between a
//                dequantise and a quantise; every other f32 buffer and packed f32 weight freed.
//   int8 runs    inputs quantised (f32 NCHW -> int8 NHWC, one pass) as they are bound, the int8
//                program run, outputs dequantised (int8 NHWC -> f32 NCHW) as they are mapped.
// So the outputs of a given sequence of inputs are deterministic: the same whatever the thread
// count, the execution mode or the machine's timing.
//
// Threading: one thread at a time (the ABI's rule for a compiled sub-graph). The pool is the
// device's and must outlive the partition.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "co_up/plugin_abi.h"
#include "int8_quant.h"
#include "node_decode.h"
#include "run_hooks.h"
#include "xnn_common.h"
#include "xnn_steps.h"
#include "xnn_thread_pool.h"

namespace co_up::int8 {

// cpu-xnnpack's shared pieces (backends/xnnpack): owned operators, buffers, f32 steps.
using xnnpack::activation_range;
using xnnpack::Buffer;
using xnnpack::build_f32_step;
using xnnpack::check_xnn;
using xnnpack::F32Step;
using xnnpack::internal_axis;
using xnnpack::internal_dims;
using xnnpack::needs_transpose;
using xnnpack::split_at_axis;
using xnnpack::XnnOperator;

struct PartitionOptions {
  uint32_t calibration_frames = 4;  // >= 1
  bool use_vnni = true;             // AVX512-VNNI convolutions where the CPU has them
};

// How a node runs once calibrated, and the one-line note the capability query gives.
struct NodeExecution {
  bool int8 = false;
  std::string note;
};
// From the op alone (what the capability query can know before calibration).
NodeExecution plan_execution(const backends::NodePlan& plan, bool vnni);

class Int8Partition {
 public:
  // Throws PluginError (UNSUPPORTED or INVALID_ARGUMENT naming the node, OUT_OF_MEMORY).
  Int8Partition(const co_up_subgraph_desc& graph, const backends::DecodeRules& rules,
                const xnnpack::CpuPool& pool, PartitionOptions options);
  ~Int8Partition();
  Int8Partition(const Int8Partition&) = delete;
  Int8Partition& operator=(const Int8Partition&) = delete;

  uint32_t input_count() const;
  uint32_t output_count() const;

  // Input i in the ABI's layout (f32, NCHW for 4-D): a staging buffer to write, converted at the
  // next enter_staged_input or run; or converted straight from the caller's memory.
  float* input_staging(uint32_t i);
  void enter_staged_input(uint32_t i);
  void enter_input(uint32_t i, const float* values);
  // Output i in the ABI's layout, valid until the next run.
  const float* read_output(uint32_t i);

  // One frame. Calls hooks.begin(first_layer) and hooks.end(last_layer) around the whole
  // partition (accelerator semantics: the runtime cannot see inside it).
  void run(const backends::LayerHooks& hooks);

  bool calibrated() const { return calibrated_; }
  uint32_t frames_run() const { return frames_run_; }
  // After calibration: per node, whether it runs int8 and how ("int8 (AVX512-VNNI)", "f32: ...").
  const std::vector<NodeExecution>& node_execution() const { return execution_; }
  // After calibration: the int8 parameters of tensor `t` (index into the description's tensors).
  QuantParams tensor_params(uint32_t t) const;

 private:
  struct Tensor;
  struct Node;
  struct Port;
  struct Step;

  void observe_ranges();
  void switch_to_int8();
  void assign_params();
  Step build_int8_step(uint32_t n);
  void enter(Port& port, const float* values);
  void stage_outputs_f32();

  const xnnpack::CpuPool& pool_;
  PartitionOptions options_;
  uint32_t first_layer_ = 0;
  uint32_t last_layer_ = 0;
  bool calibrated_ = false;
  bool outputs_staged_ = false;  // the last run was f32: its outputs already sit in staging
  uint32_t frames_run_ = 0;
  std::vector<Tensor> tensors_;
  std::vector<Node> nodes_;
  std::vector<Port> inputs_;
  std::vector<Port> outputs_;
  std::vector<Step> program_;  // after calibration
  std::vector<NodeExecution> execution_;
};

}  // namespace co_up::int8
