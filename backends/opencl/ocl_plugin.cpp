// ABI glue of the opencl backend: factory (the devices the ICD loader sees) -> device (context,
// kernels built once through the program-binary cache) -> compiled sub-graph (one in-order queue,
// one buffer per tensor, steps with their kernel arguments set at compile time).
//
// Convolution = own im2col kernel + CLBlast GEMM (batched over groups; 1x1/stride 1 convolutions
// skip im2col), depthwise convolution = own direct kernel, fully connected = CLBlast GEMV (batch
// 1) or GEMM; everything else = own kernels from kernels/ocl_kernels.cl.
//
// Statuses, node decoding and the sub-graph checks are backends/common's (see plugin_status.h), so
// all backends accept the same graphs with the same messages.
#include <clblast.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "co_up/plugin_abi.h"
#include "node_decode.h"
#include "ocl_kernels_source.h"  // generated: kOclKernelsSource
#include "ocl_runtime.h"
#include "ocl_tensor_plan.h"
#include "op_shapes.h"
#include "plugin_adapter.h"
#include "plugin_options.h"
#include "plugin_status.h"
#include "run_hooks.h"
#include "subgraph_desc.h"
#include "subgraph_plan.h"

namespace co_up::opencl {

using backends::Activation;
using backends::Conv2dShape;
using backends::element_at;
using backends::element_count;
using backends::NodePlan;
using backends::Op;
using backends::Pool2dShape;

namespace {

constexpr const char* kBackendName = "opencl";
constexpr const char* kBackendVersion = "1.0.0";

// What opencl's statuses and decoding messages say about it.
constexpr backends::StatusOrigin kStatusOrigin = {
    kBackendName,
    {sizeof(co_up_status), CO_UP_STATUS_OUT_OF_MEMORY, "opencl: out of host memory"},
    "out of host memory"};
constexpr backends::DecodeRules kDecodeRules = {kBackendName, "uploads it", false, implements_tensor_op};

void check_clblast(clblast::StatusCode status, const std::string& what) {
  if (status == clblast::StatusCode::kSuccess) return;
  const int code = static_cast<int>(status);
  if (code > -1000) fail_cl(code, "CLBlast " + what);  // an OpenCL error code passed through
  fail(CO_UP_STATUS_RUNTIME_ERROR, "CLBlast " + what + " failed: CLBlast status " +
                                       std::to_string(code) + " (see clblast.h StatusCode)");
}

// Elements per work-item of the per-channel element-wise kernels; passed to the kernel build as
// -DROW_CHUNK so host and kernels agree.
constexpr int64_t kRowChunk = 64;

// Grouped convolutions with up to this many groups run one GEMM per group (see conv_step).
constexpr size_t kMaxPerGroupGemms = 8;

// Work-items of a kernel that gives each one ROW_CHUNK elements of each of `rows` rows.
int64_t chunked_items(int64_t rows, int64_t row_length) {
  return rows * ((row_length + kRowChunk - 1) / kRowChunk);
}

cl_int act_code(Activation a) {
  switch (a) {
    case Activation::kRelu: return 1;
    case Activation::kRelu6: return 2;
    default: return 0;
  }
}

}  // namespace
}  // namespace co_up::opencl

using co_up::opencl::ClContext;
using co_up::opencl::ClKernel;
using co_up::opencl::ClMem;
using co_up::opencl::ClProgram;
using co_up::opencl::ClQueue;
using co_up::opencl::DeviceInfo;

struct co_up_factory {
  std::vector<DeviceInfo> devices;
};

struct co_up_device {
  char processor = '?';
  DeviceInfo info;
  size_t work_group_size = 0;  // option; 0 = per kernel, from the device's own limits
  // Declared before the program: released after it.
  ClContext context;
  ClProgram program;
  bool program_from_cache = false;
  std::string cache_file;
};

struct co_up_compiled {
  // One node: enqueues its work on the queue (kernel arguments were set at compile time).
  struct Step {
    uint32_t layer = 0;
    std::function<void(co_up_compiled&)> enqueue;
  };

  co_up_device* device = nullptr;
  // Member order: the queue is released after everything enqueued on it (buffers, kernels).
  ClQueue queue;
  std::vector<ClMem> buffers;  // per tensor; empty handle when the tensor is not used
  std::vector<size_t> bytes;   // per tensor
  std::vector<ClMem> extra;    // folded batch-norm parameters, scratch
  cl_mem col = nullptr;        // im2col scratch (in `extra`)
  cl_mem gemm_temp = nullptr;  // CLBlast GEMM temporary (in `extra`)
  std::vector<ClKernel> kernels;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<void*> mapped_inputs;  // non-NULL while mapped
  std::vector<void*> mapped_outputs;
  std::vector<Step> steps;
};

namespace co_up::opencl {
namespace {

// ---------------------------------------------------------------------------------------------
// Kernel launch helpers

class KernelArgs {
 public:
  explicit KernelArgs(cl_kernel kernel) : kernel_(kernel) {}
  KernelArgs& mem(cl_mem m) { return raw(sizeof(cl_mem), &m); }
  KernelArgs& i(int64_t v) {
    if (v > INT32_MAX || v < INT32_MIN) {
      fail(CO_UP_STATUS_UNSUPPORTED, "tensor too large for 32-bit indexing in OpenCL kernels");
    }
    const cl_int x = static_cast<cl_int>(v);
    return raw(sizeof(x), &x);
  }
  KernelArgs& f(float v) { return raw(sizeof(v), &v); }

 private:
  KernelArgs& raw(size_t size, const void* value) {
    check_cl(clSetKernelArg(kernel_, index_, size, value), "clSetKernelArg");
    ++index_;
    return *this;
  }
  cl_kernel kernel_;
  cl_uint index_ = 0;
};

// A kernel of the device's program with its 1-D launch shape, owned by the compiled sub-graph.
struct Launch {
  cl_kernel kernel = nullptr;
  size_t local = 0;
  size_t global = 0;

  void enqueue(cl_command_queue queue) const {
    if (global == 0) return;
    check_cl(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
             "clEnqueueNDRangeKernel");
  }
};

// Work-group size per device and kernel: the largest multiple of the kernel's preferred multiple
// up to 256 (or the device option), within what the kernel allows on this device.
Launch make_launch(co_up_compiled& c, const char* name, int64_t items) {
  cl_int err = CL_SUCCESS;
  ClKernel kernel(clCreateKernel(c.device->program.get(), name, &err));
  check_cl(err, std::string("clCreateKernel(") + name + ")");
  size_t kernel_max = 0;
  size_t multiple = 1;
  cl_device_id dev = c.device->info.device;
  check_cl(clGetKernelWorkGroupInfo(kernel.get(), dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(kernel_max),
                                    &kernel_max, nullptr),
           "clGetKernelWorkGroupInfo");
  clGetKernelWorkGroupInfo(kernel.get(), dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                           sizeof(multiple), &multiple, nullptr);
  const size_t n = static_cast<size_t>(items);
  size_t local = c.device->work_group_size;
  if (local == 0) {
    // Up to 256, but small enough that every compute unit gets a few work-groups: kernels that
    // give each work-item a whole row have few work-items.
    const size_t units = std::max<uint32_t>(1, c.device->info.compute_units);
    local = std::clamp<size_t>(n / (4 * units), multiple, 256);
  }
  local = std::max<size_t>(1, std::min(local, kernel_max));
  if (multiple > 1 && local >= multiple) local -= local % multiple;
  Launch launch;
  launch.kernel = kernel.get();
  launch.local = local;
  launch.global = (n + local - 1) / local * local;
  c.kernels.push_back(std::move(kernel));
  return launch;
}

cl_mem make_buffer(co_up_compiled& c, size_t bytes, cl_mem_flags flags, const void* data,
                   const std::string& what) {
  const DeviceInfo& info = c.device->info;
  if (bytes > info.max_alloc_bytes) {
    fail(CO_UP_STATUS_OUT_OF_MEMORY,
         what + " needs " + std::to_string(bytes) + " bytes, more than the " +
             std::to_string(info.max_alloc_bytes) + " one OpenCL buffer may hold on '" + info.name +
             "' (CL_DEVICE_MAX_MEM_ALLOC_SIZE; map this layer to another processor)");
  }
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(c.device->context.get(), flags, std::max<size_t>(bytes, 4),
                            const_cast<void*>(data), &err);
  check_cl(err, "clCreateBuffer for " + what + " (" + std::to_string(bytes) + " bytes)");
  return m;
}

// ---------------------------------------------------------------------------------------------
// Steps

using Step = co_up_compiled::Step;

Step conv_step(co_up_compiled& c, const co_up_subgraph_desc& graph, const NodePlan& p,
               size_t* col_floats, size_t* temp_bytes) {
  const Conv2dShape& s = p.conv;
  const int64_t oh = s.out_height();
  const int64_t ow = s.out_width();
  const int64_t plane = oh * ow;
  const cl_mem x = c.buffers[p.inputs[0]].get();
  const cl_mem w = c.buffers[p.inputs[1]].get();
  const cl_mem bias = p.inputs[2] != CO_UP_NO_TENSOR ? c.buffers[p.inputs[2]].get() : w;
  const cl_int has_bias = p.inputs[2] != CO_UP_NO_TENSOR;
  const cl_mem y = c.buffers[p.output].get();
  Step step;
  if (s.is_depthwise()) {
    const int64_t rows = s.batch * s.out_channels * oh;  // one work-item per output row
    Launch dw = make_launch(c, "depthwise_conv2d", rows);
    KernelArgs(dw.kernel).mem(x).mem(w).mem(bias).i(has_bias).i(s.in_channels).i(s.in_height)
        .i(s.in_width).i(s.out_channels).i(s.kernel_h).i(s.kernel_w).i(s.stride_h).i(s.stride_w)
        .i(s.pad_top).i(s.pad_left).i(s.dilation_h).i(s.dilation_w).i(oh).i(ow)
        .i(act_code(s.activation)).mem(y).i(rows);
    step.enqueue = [dw](co_up_compiled& cc) { dw.enqueue(cc.queue.get()); };
    return step;
  }
  const size_t groups = static_cast<size_t>(s.group);
  const size_t m = static_cast<size_t>(s.out_channels / s.group);
  const size_t k = static_cast<size_t>(s.in_channels / s.group * s.kernel_h * s.kernel_w);
  const size_t n = static_cast<size_t>(plane);
  const size_t in_image = static_cast<size_t>(s.in_channels * s.in_height * s.in_width);
  const size_t out_image = static_cast<size_t>(s.out_channels) * n;
  // A 1x1, stride-1, unpadded convolution reads its input as the GEMM's B directly.
  const bool direct = s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 &&
                      s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0;
  std::optional<Launch> im2col;
  if (!direct) {
    const int64_t col_count = static_cast<int64_t>(groups * k * n);
    *col_floats = std::max(*col_floats, static_cast<size_t>(col_count));
    im2col = make_launch(c, "im2col", static_cast<int64_t>(groups * k) * oh);  // per (row, oh)
    // Arguments 0 (x) and 1 (offset) and 15 (col) are set per run: the scratch is shared.
  }
  // Few groups (AlexNet's 2): one GEMM per group, with the shared temporary buffer. Many groups:
  // CLBlast's strided batched GEMM, one call (it allocates its own temporaries).
  const bool per_group_gemm = groups <= kMaxPerGroupGemms;
  if (per_group_gemm) {
    size_t temp = 0;
    cl_command_queue q = c.queue.get();
    check_clblast(clblast::GemmTempBufferSize<float>(clblast::Layout::kRowMajor,
                                                     clblast::Transpose::kNo,
                                                     clblast::Transpose::kNo, m, n, k, 0, k, 0, n,
                                                     0, n, &q, temp),
                  "GemmTempBufferSize");
    *temp_bytes = std::max(*temp_bytes, temp);
  }
  std::optional<Launch> epilogue;
  if (has_bias || s.activation != Activation::kNone) {
    const int64_t items = chunked_items(s.batch * s.out_channels, plane);
    epilogue = make_launch(c, "bias_activation", items);
    KernelArgs(epilogue->kernel).mem(y).mem(bias).i(has_bias).i(s.out_channels).i(plane)
        .i(act_code(s.activation)).i(items);
  }
  const Conv2dShape shape = s;
  step.enqueue = [=](co_up_compiled& cc) {
    cl_command_queue q = cc.queue.get();
    for (int64_t img = 0; img < shape.batch; ++img) {
      cl_mem b = x;
      size_t b_offset = static_cast<size_t>(img) * in_image;
      if (im2col) {
        KernelArgs(im2col->kernel).mem(x).i(static_cast<int64_t>(b_offset)).i(shape.in_channels)
            .i(shape.in_height).i(shape.in_width).i(shape.kernel_h).i(shape.kernel_w)
            .i(shape.stride_h).i(shape.stride_w).i(shape.pad_top).i(shape.pad_left)
            .i(shape.dilation_h).i(shape.dilation_w).i(oh).i(ow).mem(cc.col)
            .i(static_cast<int64_t>(groups * k) * oh);
        im2col->enqueue(q);
        b = cc.col;
        b_offset = 0;
      }
      const size_t c_offset = static_cast<size_t>(img) * out_image;
      if (groups == 1 && n == 1) {
        // A 1x1 output plane (a classifier written as a convolution): matrix-vector product.
        check_clblast(clblast::Gemv<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo, m,
                                           k, 1.0f, w, 0, k, b, b_offset, 1, 0.0f, y, c_offset, 1,
                                           &q, nullptr),
                      "Gemv for a convolution with a 1x1 output");
      } else if (per_group_gemm) {
        for (size_t g = 0; g < groups; ++g) {
          check_clblast(clblast::Gemm<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                                             clblast::Transpose::kNo, m, n, k, 1.0f, w, g * m * k,
                                             k, b, b_offset + g * k * n, n, 0.0f, y,
                                             c_offset + g * m * n, n, &q, nullptr, cc.gemm_temp),
                        "Gemm for a convolution");
        }
      } else {
        check_clblast(clblast::GemmStridedBatched<float>(
                          clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                          clblast::Transpose::kNo, m, n, k, 1.0f, w, 0, k, m * k, b, b_offset, n,
                          k * n, 0.0f, y, c_offset, n, m * n, groups, &q, nullptr),
                      "GemmStridedBatched for a grouped convolution");
      }
    }
    if (epilogue) epilogue->enqueue(q);
  };
  return step;
}

Step fully_connected_step(co_up_compiled& c, const NodePlan& p, size_t* temp_bytes) {
  const cl_mem x = c.buffers[p.inputs[0]].get();
  const cl_mem w = c.buffers[p.inputs[1]].get();
  const cl_int has_bias = p.inputs[2] != CO_UP_NO_TENSOR;
  const cl_mem bias = has_bias ? c.buffers[p.inputs[2]].get() : w;
  const cl_mem y = c.buffers[p.output].get();
  const size_t batch = static_cast<size_t>(p.in_dims[0]);
  const size_t m = static_cast<size_t>(p.fc_out);
  const size_t k = static_cast<size_t>(p.fc_in);
  const int64_t count = static_cast<int64_t>(batch * m);
  if (batch > 1) {
    size_t temp = 0;
    cl_command_queue q = c.queue.get();
    check_clblast(clblast::GemmTempBufferSize<float>(clblast::Layout::kRowMajor,
                                                     clblast::Transpose::kNo,
                                                     clblast::Transpose::kYes, batch, m, k, 0, k,
                                                     0, k, 0, m, &q, temp),
                  "GemmTempBufferSize");
    *temp_bytes = std::max(*temp_bytes, temp);
  }
  std::optional<Launch> epilogue;
  if (has_bias || p.activation != Activation::kNone) {
    // Rows of one element (y[n][m] gets bias[m]): one work-item each.
    epilogue = make_launch(c, "bias_activation", count);
    KernelArgs(epilogue->kernel).mem(y).mem(bias).i(has_bias).i(p.fc_out).i(1)
        .i(act_code(p.activation)).i(count);
  }
  Step step;
  step.enqueue = [=](co_up_compiled& cc) {
    cl_command_queue q = cc.queue.get();
    if (batch == 1) {
      // y[m] = W[m, :] . x: a matrix-vector product, as CLBlast's GEMV does it best.
      check_clblast(clblast::Gemv<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo, m, k,
                                         1.0f, w, 0, k, x, 0, 1, 0.0f, y, 0, 1, &q, nullptr),
                    "Gemv for a fully connected layer");
    } else {
      check_clblast(clblast::Gemm<float>(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                                         clblast::Transpose::kYes, batch, m, k, 1.0f, x, 0, k, w,
                                         0, k, 0.0f, y, 0, m, &q, nullptr, cc.gemm_temp),
                    "Gemm for a fully connected layer");
    }
    if (epilogue) epilogue->enqueue(q);
  };
  return step;
}

// A rank-N op or CNN form (ocl_tensor_plan.h): its tables uploaded once, its launches and GEMM.
Step tensor_step(co_up_compiled& c, const NodePlan& p) {
  const TensorPlan plan = plan_tensor_node(p);
  const cl_mem_flags flags = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
  std::vector<cl_mem> int_tables, float_tables;
  for (const auto& t : plan.int_tables) {
    c.extra.emplace_back(make_buffer(c, t.size() * sizeof(int32_t), flags, t.data(), "index table"));
    int_tables.push_back(c.extra.back().get());
  }
  for (const auto& t : plan.float_tables) {
    c.extra.emplace_back(make_buffer(c, t.size() * sizeof(float), flags, t.data(), "weight table"));
    float_tables.push_back(c.extra.back().get());
  }
  std::vector<Launch> launches;
  for (const TensorKernel& k : plan.kernels) {
    Launch l = make_launch(c, k.name.c_str(), k.items);
    KernelArgs args(l.kernel);
    for (const TensorArg& a : k.args) {
      switch (a.kind) {
        case TensorArg::Kind::kTensor: args.mem(c.buffers[static_cast<size_t>(a.value)].get()); break;
        case TensorArg::Kind::kIntTable: args.mem(int_tables[static_cast<size_t>(a.value)]); break;
        case TensorArg::Kind::kFloatTable: args.mem(float_tables[static_cast<size_t>(a.value)]); break;
        case TensorArg::Kind::kInt: args.i(a.value); break;
        case TensorArg::Kind::kFloat: args.f(a.f); break;
      }
    }
    args.i(k.items);
    launches.push_back(l);
  }
  std::optional<TensorGemm> gemm = plan.gemm;
  Step step;
  step.enqueue = [launches, gemm](co_up_compiled& cc) {
    cl_command_queue q = cc.queue.get();
    if (gemm) {
      const size_t batch = gemm->y_offsets.size();
      const std::vector<float> alphas(batch, 1.0f), betas(batch, 0.0f);
      check_clblast(clblast::GemmBatched<float>(
                        clblast::Layout::kRowMajor, clblast::Transpose::kNo, clblast::Transpose::kNo,
                        gemm->m, gemm->n, gemm->k, alphas.data(), cc.buffers[gemm->a].get(),
                        gemm->a_offsets.data(), gemm->k, cc.buffers[gemm->b].get(), gemm->b_offsets.data(),
                        gemm->n, betas.data(), cc.buffers[gemm->y].get(), gemm->y_offsets.data(), gemm->n,
                        batch, &q, nullptr),
                    "GemmBatched for a MatMul");
    }
    for (const Launch& l : launches) l.enqueue(q);
  };
  return step;
}

Step build_step(co_up_compiled& c, const co_up_subgraph_desc& graph, uint32_t index,
                const NodePlan& p, size_t* col_floats, size_t* temp_bytes) {
  const uint32_t layer = element_at(graph.nodes, index).layer;
  auto data = [&](uint32_t t) {
    return static_cast<const float*>(element_at(graph.tensors, t).data);
  };
  const cl_mem x = c.buffers[p.inputs[0]].get();
  const cl_mem y = c.buffers[p.output].get();
  const int64_t count = element_count(p.out_dims);
  Step step;
  auto single = [&](const Launch& l) {
    step.enqueue = [l](co_up_compiled& cc) { l.enqueue(cc.queue.get()); };
  };
  switch (p.op) {
    case Op::kConv:
      step = conv_step(c, graph, p, col_floats, temp_bytes);
      break;
    case Op::kFullyConnected:
      step = fully_connected_step(c, p, temp_bytes);
      break;
    case Op::kMaxPool: {
      const Pool2dShape& s = p.pool;
      const int64_t rows = count / s.out_width();  // one work-item per output row
      Launch l = make_launch(c, "max_pool2d", rows);
      KernelArgs(l.kernel).mem(x).i(s.in_height).i(s.in_width).i(s.kernel_h).i(s.kernel_w)
          .i(s.stride_h).i(s.stride_w).i(s.pad_top).i(s.pad_left).i(s.out_height())
          .i(s.out_width()).mem(y).i(rows);
      single(l);
      break;
    }
    case Op::kAveragePool: {
      const Pool2dShape& s = p.pool;
      const int64_t rows = count / s.out_width();  // one work-item per output row
      Launch l = make_launch(c, "average_pool2d", rows);
      KernelArgs(l.kernel).mem(x).i(s.in_height).i(s.in_width).i(s.kernel_h).i(s.kernel_w)
          .i(s.stride_h).i(s.stride_w).i(s.pad_top).i(s.pad_left).i(s.pad_bottom).i(s.pad_right)
          .i(s.count_include_pad).i(s.out_height()).i(s.out_width()).mem(y).i(rows);
      single(l);
      break;
    }
    case Op::kGlobalAveragePool:
    case Op::kGlobalMaxPool: {
      Launch l = make_launch(c, p.op == Op::kGlobalAveragePool ? "global_average_pool"
                                                               : "global_max_pool",
                             count);
      KernelArgs(l.kernel).mem(x).i(p.in_dims[2] * p.in_dims[3]).mem(y).i(count);
      single(l);
      break;
    }
    case Op::kRelu:
    case Op::kSigmoid:
    case Op::kHardSwish: {
      const char* name = p.op == Op::kRelu ? "relu" : p.op == Op::kSigmoid ? "sigmoid" : "hard_swish";
      Launch l = make_launch(c, name, count);
      KernelArgs(l.kernel).mem(x).mem(y).i(count);
      single(l);
      break;
    }
    case Op::kClip: {
      Launch l = make_launch(c, "clip", count);
      KernelArgs(l.kernel).mem(x).mem(y).f(p.value0).f(p.value1).i(count);
      single(l);
      break;
    }
    case Op::kAdd: {
      Launch l = make_launch(c, "add", count);
      KernelArgs(l.kernel).mem(x).mem(c.buffers[p.inputs[1]].get()).mem(y)
          .i(act_code(p.activation)).i(count);
      single(l);
      break;
    }
    case Op::kLrn: {
      const int64_t plane = p.in_dims[2] * p.in_dims[3];
      const int64_t items = chunked_items(count / plane, plane);
      Launch l = make_launch(c, "lrn", items);
      KernelArgs(l.kernel).mem(x).i(p.in_dims[1]).i(plane).i(p.size)
          .f(p.value0).f(p.value1).f(p.value2).mem(y).i(items);
      single(l);
      break;
    }
    case Op::kBatchNormalization: {
      const int64_t channels = p.in_dims[1];
      const int64_t plane = count / (p.in_dims[0] * channels);
      std::vector<float> multiplier(static_cast<size_t>(channels));
      std::vector<float> offset(static_cast<size_t>(channels));
      const float* scale = data(p.inputs[1]);
      const float* shift = data(p.inputs[2]);
      const float* mean = data(p.inputs[3]);
      const float* var = data(p.inputs[4]);
      for (size_t ch = 0; ch < multiplier.size(); ++ch) {
        multiplier[ch] = scale[ch] / std::sqrt(var[ch] + p.value0);
        offset[ch] = shift[ch] - mean[ch] * multiplier[ch];
      }
      const cl_mem_flags flags = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
      c.extra.emplace_back(make_buffer(c, multiplier.size() * 4, flags, multiplier.data(),
                                       "batch-norm multiplier"));
      const cl_mem mul = c.extra.back().get();
      c.extra.emplace_back(make_buffer(c, offset.size() * 4, flags, offset.data(), "batch-norm offset"));
      const cl_mem off = c.extra.back().get();
      const int64_t items = chunked_items(count / plane, plane);
      Launch l = make_launch(c, "batch_norm", items);
      KernelArgs(l.kernel).mem(x).mem(mul).mem(off).i(channels).i(plane).mem(y).i(items);
      single(l);
      break;
    }
    case Op::kConcat: {
      std::vector<Launch> parts;
      const int64_t total = p.axis_len * p.inner;
      int64_t column = 0;
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        const int64_t block = p.concat_axis[i] * p.inner;
        const int64_t items = chunked_items(p.outer, block);
        Launch l = make_launch(c, "concat_slice", items);
        KernelArgs(l.kernel).mem(c.buffers[p.inputs[i]].get()).i(block).i(total).i(column).mem(y)
            .i(items);
        parts.push_back(l);
        column += block;
      }
      step.enqueue = [parts](co_up_compiled& cc) {
        for (const Launch& l : parts) l.enqueue(cc.queue.get());
      };
      break;
    }
    case Op::kSoftmax: {
      Launch l = make_launch(c, "softmax", p.outer * p.inner);
      KernelArgs(l.kernel).mem(x).i(p.axis_len).i(p.inner).mem(y).i(p.outer * p.inner);
      single(l);
      break;
    }
    case Op::kFlatten:
    case Op::kReshape:
    case Op::kIdentity: {
      const size_t bytes = static_cast<size_t>(count) * sizeof(float);
      step.enqueue = [x, y, bytes](co_up_compiled& cc) {
        check_cl(clEnqueueCopyBuffer(cc.queue.get(), x, y, 0, 0, bytes, 0, nullptr, nullptr),
                 "clEnqueueCopyBuffer");
      };
      break;
    }
    case Op::kChannelScale:
    case Op::kHardSigmoid:
    case Op::kSiLU:
    case Op::kChannelShuffle:
    case Op::kTensorOp:
      step = tensor_step(c, p);
      break;
  }
  step.layer = layer;
  return step;
}

// ---------------------------------------------------------------------------------------------
// Compile and run

void run(co_up_compiled& c, const co_up_run_hooks* hooks);

std::unique_ptr<co_up_compiled> compile(co_up_device* device, const co_up_subgraph_desc& graph) {
  auto c = std::make_unique<co_up_compiled>();
  c->device = device;
  const uint32_t tensor_count = graph.tensor_count;
  const backends::SubgraphPlan subgraph = backends::plan_subgraph(kDecodeRules, graph);
  const std::vector<NodePlan>& plans = subgraph.nodes;
  const std::vector<bool>& is_input = subgraph.is_input;
  const std::vector<bool>& is_output = subgraph.is_output;
  c->inputs = subgraph.inputs;
  c->outputs = subgraph.outputs;
  auto tensor_name = [&](uint32_t t) { return backends::tensor_name(graph, t); };

  // Tensors on the device: inputs, node outputs, and constants the kernels read (batch-norm
  // parameters are folded on the host instead).
  std::vector<bool> needed(tensor_count, false);
  for (uint32_t t : c->inputs) needed[t] = true;
  for (const NodePlan& plan : plans) {
    needed[plan.output] = true;
    const size_t read = plan.op == Op::kBatchNormalization ? 1 : plan.inputs.size();
    for (size_t i = 0; i < read; ++i) {
      if (plan.inputs[i] != CO_UP_NO_TENSOR) needed[plan.inputs[i]] = true;
    }
  }

  cl_int err = CL_SUCCESS;
  const cl_command_queue_properties properties = CL_QUEUE_PROFILING_ENABLE;
  c->queue = ClQueue(clCreateCommandQueue(device->context.get(), device->info.device, properties, &err));
  check_cl(err, "clCreateCommandQueue");

  c->buffers.resize(tensor_count);
  c->bytes.assign(tensor_count, 0);
  for (uint32_t t = 0; t < tensor_count; ++t) {
    if (!needed[t]) continue;
    const co_up_tensor_desc& d = element_at(graph.tensors, t);
    const int64_t count = element_count(d);
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    c->bytes[t] = bytes;
    cl_mem_flags flags = CL_MEM_READ_WRITE;
    const void* host = nullptr;
    if (d.data && !is_input[t]) {
      flags = CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR;
      host = d.data;
    } else if (is_input[t] || is_output[t]) {
      // Host-visible memory: on unified-memory SoCs map/unmap then copies nothing.
      flags |= CL_MEM_ALLOC_HOST_PTR;
    }
    c->buffers[t] = ClMem(make_buffer(*c, bytes, flags, host, "tensor '" + tensor_name(t) + "'"));
  }
  // Every activation buffer starts as zeros. Inputs, so the warm-up run below computes on defined
  // data; outputs too, because CLBlast computes C = alpha*AB + beta*C even for beta = 0, and
  // 0 * (NaN bits left in fresh device memory) is NaN.
  const float zero = 0.0f;
  for (uint32_t t = 0; t < tensor_count; ++t) {
    if (!needed[t] || (element_at(graph.tensors, t).data && !is_input[t])) continue;
    check_cl(clEnqueueFillBuffer(c->queue.get(), c->buffers[t].get(), &zero, sizeof(zero), 0,
                                 c->bytes[t], 0, nullptr, nullptr),
             "clEnqueueFillBuffer");
  }

  size_t col_floats = 0;
  size_t temp_bytes = 0;
  for (uint32_t n = 0; n < graph.node_count; ++n) {
    c->steps.push_back(build_step(*c, graph, n, plans[n], &col_floats, &temp_bytes));
  }
  if (col_floats > 0) {
    c->extra.emplace_back(make_buffer(*c, col_floats * sizeof(float), CL_MEM_READ_WRITE, nullptr,
                                      "im2col scratch"));
    c->col = c->extra.back().get();
  }
  if (temp_bytes > 0) {
    c->extra.emplace_back(make_buffer(*c, temp_bytes, CL_MEM_READ_WRITE, nullptr, "GEMM scratch"));
    c->gemm_temp = c->extra.back().get();
  }
  c->mapped_inputs.assign(c->inputs.size(), nullptr);
  c->mapped_outputs.assign(c->outputs.size(), nullptr);
  // One warm-up run: CLBlast compiles its kernels on first use, and lazily allocating drivers
  // commit the buffers, so the first frame is not slow and out-of-memory shows up here.
  run(*c, nullptr);
  return c;
}

void run(co_up_compiled& c, const co_up_run_hooks* hooks) {
  for (size_t i = 0; i < c.mapped_inputs.size(); ++i) {
    if (c.mapped_inputs[i]) {
      fail(CO_UP_STATUS_INVALID_STATE, "compiled_run: input " + std::to_string(i) +
                                           " is still mapped (call compiled_unmap before run)");
    }
  }
  const backends::LayerHooks layer_hooks(hooks);
  cl_command_queue q = c.queue.get();
  // Device time per layer (event profiling; the queue is in order): from a marker that completes
  // when the previous layer's commands have, to a marker that completes with this layer's last.
  const bool device_time = layer_hooks.has_device_time();
  ClEvent layer_start;
  for (size_t s = 0; s < c.steps.size(); ++s) {
    if (backends::starts_layer(c.steps, s)) {
      layer_hooks.begin(c.steps[s].layer);
      if (device_time) {
        cl_event marker = nullptr;
        check_cl(clEnqueueMarkerWithWaitList(q, 0, nullptr, &marker), "clEnqueueMarkerWithWaitList");
        layer_start = ClEvent(marker);
      }
    }
    c.steps[s].enqueue(c);
    // The hooks time finished work: wait for this layer's kernels before reporting its end.
    if (backends::ends_layer(c.steps, s) && layer_hooks.has_end()) {
      ClEvent layer_done;
      if (device_time) {
        cl_event marker = nullptr;
        check_cl(clEnqueueMarkerWithWaitList(q, 0, nullptr, &marker), "clEnqueueMarkerWithWaitList");
        layer_done = ClEvent(marker);
      }
      check_cl(clFinish(q), "clFinish");
      layer_hooks.end(c.steps[s].layer);
      if (device_time) {
        cl_ulong from = 0, to = 0;
        const cl_int a = clGetEventProfilingInfo(layer_start.get(), CL_PROFILING_COMMAND_END,
                                                 sizeof(from), &from, nullptr);
        const cl_int b = clGetEventProfilingInfo(layer_done.get(), CL_PROFILING_COMMAND_END,
                                                 sizeof(to), &to, nullptr);
        // A driver without profiling for markers reports an error: then no device time.
        if (a == CL_SUCCESS && b == CL_SUCCESS && to >= from) {
          layer_hooks.device_time(c.steps[s].layer, static_cast<uint64_t>(to - from));
        }
      }
    }
  }
  check_cl(clFinish(q), "clFinish");
}

// ---------------------------------------------------------------------------------------------
// The backend as backends::PluginAdapter builds the ABI table from it.

// Enumerated once per process: the description and every factory share it.
const std::vector<DeviceInfo>& icd_devices(std::string* out_error) {
  static std::string error;
  static const std::vector<DeviceInfo> devices = enumerate_devices(&error);
  if (out_error) *out_error = error;
  return devices;
}

struct OclBackend {
  static constexpr backends::PluginInfo kInfo = {
      kBackendName, kBackendVersion, nullptr /* description() */, CO_UP_BACKEND_GPU,
      0,  // boundary_layouts: NCHW only
  };
  static constexpr const backends::StatusOrigin& kStatusOrigin = opencl::kStatusOrigin;
  static constexpr const backends::DecodeRules& kDecodeRules = opencl::kDecodeRules;

  static const char* description();

  static std::unique_ptr<co_up_factory> create_factory(const co_up_option*, uint32_t) {
    std::string error;
    const auto& devices = icd_devices(&error);
    if (devices.empty()) fail(CO_UP_STATUS_NO_DEVICE, error);
    auto factory = std::make_unique<co_up_factory>();
    factory->devices = devices;
    return factory;
  }

  static std::unique_ptr<co_up_device> create_device(co_up_factory& factory_ref,
                                                     const co_up_option* options,
                                                     uint32_t option_count);

  static std::unique_ptr<co_up_compiled> compile(co_up_device& device,
                                                 const co_up_subgraph_desc& graph) {
    // Compiles are serialised process-wide: the warm-up run's first CLBlast call per routine
    // builds and caches CLBlast's programs, and concurrent first calls (the runtime compiles
    // sub-graphs in parallel) gave wrong results on PoCL.
    static std::mutex compile_mutex;
    std::lock_guard lock(compile_mutex);
    return opencl::compile(&device, graph);
  }

  static void release_compiled(co_up_compiled* compiled) {
    // Unmap what the caller left mapped, and drain the queue before buffers go away.
    for (size_t i = 0; i < compiled->mapped_inputs.size(); ++i) {
      if (compiled->mapped_inputs[i]) {
        clEnqueueUnmapMemObject(compiled->queue.get(), compiled->buffers[compiled->inputs[i]].get(),
                                compiled->mapped_inputs[i], 0, nullptr, nullptr);
      }
    }
    for (size_t i = 0; i < compiled->mapped_outputs.size(); ++i) {
      if (compiled->mapped_outputs[i]) {
        clEnqueueUnmapMemObject(compiled->queue.get(), compiled->buffers[compiled->outputs[i]].get(),
                                compiled->mapped_outputs[i], 0, nullptr, nullptr);
      }
    }
    if (compiled->queue) clFinish(compiled->queue.get());
    std::unique_ptr<co_up_compiled>{compiled};
  }

  static void* map(co_up_compiled& c, int32_t direction, uint32_t index);
  static void unmap(co_up_compiled& c, int32_t direction, uint32_t index);

  static void bind_input(co_up_compiled&, uint32_t, const void*) {
    // Wrapping the caller's memory would need a CL_MEM_USE_HOST_PTR buffer per run (and its
    // alignment rules per driver); mapped CL_MEM_ALLOC_HOST_PTR buffers already avoid copies on
    // unified memory, so the runtime maps and copies instead.
    fail(CO_UP_STATUS_UNSUPPORTED,
         "compiled_bind_input: opencl reads inputs from its own host-visible buffers (map them)");
  }

  static void run(co_up_compiled& c, const co_up_run_hooks* hooks) { opencl::run(c, hooks); }
};

std::unique_ptr<co_up_device> OclBackend::create_device(co_up_factory& factory_ref,
                                                        const co_up_option* options,
                                                        uint32_t option_count) {
  co_up_factory* factory = &factory_ref;
  auto device = std::make_unique<co_up_device>();
  std::string platform_sel;
  std::string device_sel;
  std::string cache_dir = default_cache_dir();
  std::string build_options = "-cl-std=CL1.2 -DROW_CHUNK=" + std::to_string(kRowChunk);
  backends::for_each_option(options, option_count, [&](std::string_view key,
                                                       std::string_view value_view) {
    const std::string value(value_view);
    if (key == "processor") {
      if (value.size() == 1) device->processor = value[0];
    } else if (key == "platform") {
      platform_sel = value;
    } else if (key == "device") {
      device_sel = value;
    } else if (key == "cache_dir") {
      cache_dir = value == "off" || value == "none" ? "" : value;
    } else if (key == "work_group_size") {
      if (value.empty() || value.size() > 5 ||
          value.find_first_not_of("0123456789") != std::string::npos || std::stoi(value) < 1) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT,
             "option work_group_size='" + value + "' must be an integer >= 1");
      }
      device->work_group_size = static_cast<size_t>(std::stoi(value));
    } else if (key == "test_broken_kernel") {
      // Test-only: makes the kernel source fail to compile, to check the build-log status.
      if (value == "1" || value == "on") build_options += " -DCO_UP_TEST_BROKEN_KERNEL";
    }
  });
  device->info = select_device(factory->devices, platform_sel, device_sel);
  cl_int err = CL_SUCCESS;
  cl_device_id id = device->info.device;
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device->info.platform), 0};
  device->context = ClContext(clCreateContext(properties, 1, &id, nullptr, nullptr, &err));
  check_cl(err, "clCreateContext for '" + device->info.name + "'");
  BuildResult built =
      build_program(device->context.get(), device->info, kOclKernelsSource, build_options, cache_dir);
  device->program = std::move(built.program);
  device->program_from_cache = built.from_cache;
  device->cache_file = built.cache_file;
  return device;
}

void* OclBackend::map(co_up_compiled& c, int32_t direction, uint32_t index) {
  co_up_compiled* compiled = &c;
  const bool input = direction == CO_UP_IO_INPUT;
  const auto& list = input ? compiled->inputs : compiled->outputs;
  if ((direction != CO_UP_IO_INPUT && direction != CO_UP_IO_OUTPUT) || index >= list.size()) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "compiled_map: " + std::string(input ? "input" : "output") + " index " +
             std::to_string(index) + " is out of range (" + std::to_string(list.size()) + ")");
  }
  void*& mapped = input ? compiled->mapped_inputs[index] : compiled->mapped_outputs[index];
  if (!mapped) {
    const uint32_t t = list[index];
    cl_int err = CL_SUCCESS;
    // Inputs: the caller overwrites the whole tensor, so nothing needs to come back to the host.
    const cl_map_flags flags = input ? CL_MAP_WRITE_INVALIDATE_REGION : CL_MAP_READ;
    mapped = clEnqueueMapBuffer(compiled->queue.get(), compiled->buffers[t].get(), CL_TRUE, flags,
                                0, compiled->bytes[t], 0, nullptr, nullptr, &err);
    check_cl(err, "clEnqueueMapBuffer");
  }
  return mapped;
}

void OclBackend::unmap(co_up_compiled& c, int32_t direction, uint32_t index) {
  co_up_compiled* compiled = &c;
  const bool input = direction == CO_UP_IO_INPUT;
  const auto& list = input ? compiled->inputs : compiled->outputs;
  if ((direction != CO_UP_IO_INPUT && direction != CO_UP_IO_OUTPUT) || index >= list.size()) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "compiled_unmap: index " + std::to_string(index) + " is out of range");
  }
  void*& mapped = input ? compiled->mapped_inputs[index] : compiled->mapped_outputs[index];
  if (!mapped) return;  // unmapping twice is harmless
  void* ptr = mapped;
  mapped = nullptr;
  check_cl(clEnqueueUnmapMemObject(compiled->queue.get(),
                                   compiled->buffers[list[index]].get(), ptr, 0, nullptr, nullptr),
           "clEnqueueUnmapMemObject");
}

// The --list-plugins line names what the ICD loader sees (and so does --list-devices).
const char* OclBackend::description() {
  static const std::string text = [] {
    std::string error;
    const auto& devices = icd_devices(&error);
    std::string s = "OpenCL 1.2 GPU backend (ICD loader, CLBlast GEMM, own kernels); ";
    if (devices.empty()) return s + "no device: " + error;
    s += "ICD sees: ";
    for (size_t i = 0; i < devices.size(); ++i) s += (i ? "; " : "") + devices[i].summary();
    return s;
  }();
  return text.c_str();
}

// A function-local static: description() enumerates the ICD's devices, at first use.
const co_up_plugin_api* plugin_api() {
  static const co_up_plugin_api api = backends::PluginAdapter<OclBackend>::api();
  return &api;
}

}  // namespace
}  // namespace co_up::opencl

extern "C" CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(
    uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return nullptr;
  return co_up::opencl::plugin_api();
}
