// ABI glue of the npu-int8 backend: an accelerator (CO_UP_BACKEND_ACCELERATOR) that quantises the
// whole partition it is given to int8 and runs it on the host thread of its processor letter —
// so `N` works on every machine and behaves like an NPU: different numerics (int8, calibrated),
// whole-partition execution (one layer_begin/layer_end pair per run), terminal dtype and layout
// conversions at the partition's boundary. See int8_partition.h for the life of a partition.
//
// Device options (key=value strings, as every device gets them; unknown keys are ignored):
//   processor, cores, threads, pin   as for the CPU backends (backends/common/plugin_options.h)
//   calibration_frames=N             frames run in f32 to calibrate activations (default 4; the
//                                    CLI passes --calibration=N)
//   kernels=auto|xnnpack             auto: AVX512-VNNI convolutions where the CPU has them;
//                                    xnnpack: XNNPACK's int8 operators only (same results)
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include <xnnpack.h>

#include "co_up/plugin_abi.h"
#include "int8_partition.h"
#include "int8_vnni.h"
#include "node_decode.h"
#include "plugin_options.h"
#include "plugin_status.h"
#include "run_hooks.h"
#include "subgraph_desc.h"
#include "xnn_thread_pool.h"

namespace co_up::int8 {
namespace {

using backends::fail;

constexpr const char* kBackendName = "npu-int8";
constexpr const char* kBackendVersion = "1.0.0";
constexpr uint32_t kDefaultCalibrationFrames = 4;

constexpr backends::StatusOrigin kStatusOrigin = {
    kBackendName,
    {sizeof(co_up_status), CO_UP_STATUS_OUT_OF_MEMORY,
     "npu-int8: out of memory (free memory or use smaller partitions)"},
    "out of memory (free memory or split the partition)"};
constexpr backends::DecodeRules kDecodeRules = {kBackendName, "quantises it"};

uint32_t parse_calibration_frames(std::string_view value) {
  if (value.empty() || value.size() > 7 || value.find_first_not_of("0123456789") != std::string_view::npos ||
      std::stoul(std::string(value)) < 1) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         "option calibration_frames='" + std::string(value) +
             "' must be an integer from 1 to 9999999 (frames run in f32 to calibrate int8)");
  }
  return static_cast<uint32_t>(std::stoul(std::string(value)));
}

}  // namespace
}  // namespace co_up::int8

struct co_up_factory {};

struct co_up_device {
  char processor = '?';
  co_up::int8::PartitionOptions partition;
  // Declared last: workers are joined before anything they could use goes away.
  std::unique_ptr<co_up::xnnpack::CpuPool> pool;
};

struct co_up_compiled {
  std::unique_ptr<co_up::int8::Int8Partition> partition;
};

namespace co_up::int8 {
namespace {

void status_release(co_up_status* status) { backends::release_status(kStatusOrigin, status); }

co_up_status* factory_create(const co_up_option*, uint32_t, co_up_factory** out_factory) {
  return backends::guarded(kStatusOrigin, "factory_create", [&] {
    if (!out_factory) fail(CO_UP_STATUS_INVALID_ARGUMENT, "factory_create: out_factory is NULL");
    *out_factory = nullptr;
    xnnpack::initialize_xnnpack("map N's layers to a CPU");
    *out_factory = std::make_unique<co_up_factory>().release();
  });
}

// XNNPACK's initialisation is process-wide and idempotent; it is never undone.
void factory_release(co_up_factory* factory) { std::unique_ptr<co_up_factory>{factory}; }

co_up_status* device_create(co_up_factory* factory, const co_up_option* options,
                            uint32_t option_count, co_up_device** out_device) {
  return backends::guarded(kStatusOrigin, "device_create", [&] {
    if (!factory || !out_device) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "device_create: factory or out_device is NULL");
    }
    *out_device = nullptr;
    auto device = std::make_unique<co_up_device>();
    backends::CpuDeviceOptions parsed;
    device->partition.calibration_frames = kDefaultCalibrationFrames;
    backends::for_each_option(options, option_count, [&](std::string_view key, std::string_view value) {
      if (backends::parse_cpu_device_option(key, value, parsed)) return;
      if (key == "calibration_frames") {
        device->partition.calibration_frames = parse_calibration_frames(value);
      } else if (key == "kernels") {
        if (value != "auto" && value != "xnnpack") {
          fail(CO_UP_STATUS_INVALID_ARGUMENT,
               "option kernels='" + std::string(value) + "' must be 'auto' or 'xnnpack'");
        }
        device->partition.use_vnni = value == "auto";
      }
    });
    device->processor = parsed.processor;
    const int threads = parsed.thread_count();
    if (!parsed.cores.empty() && threads > static_cast<int>(parsed.cores.size())) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT,
           std::string("processor ") + device->processor + ": option threads=" +
               std::to_string(threads) + " exceeds the " + std::to_string(parsed.cores.size()) +
               " CPU(s) of its host cores (use threads <= number of cores)");
    }
    try {
      device->pool = std::make_unique<xnnpack::CpuPool>(
          threads,
          parsed.pin ? std::span<const int>(parsed.cores) : std::span<const int>(),
          xnnpack::Schedule::kDynamic);
    } catch (const std::runtime_error& e) {
      fail(CO_UP_STATUS_RUNTIME_ERROR, std::string("processor ") + device->processor + ": " + e.what());
    }
    *out_device = device.release();
  });
}

void device_release(co_up_device* device) { std::unique_ptr<co_up_device>{device}; }

// Whether the node can run here, and for a node that can, how: int8 with which kernel, or in f32
// between a dequantise and a quantise.
co_up_status* device_query_node(co_up_device* device, const co_up_subgraph_desc* graph,
                                uint32_t node_index, co_up_node_support* out_support) {
  co_up_status* status = backends::query_node(kStatusOrigin, kDecodeRules, device != nullptr,
                                              graph, node_index, out_support);
  if (status || !out_support->supported) return status;
  return backends::guarded(kStatusOrigin, "device_query_node", [&] {
    const backends::NodePlan plan = backends::decode_node(kDecodeRules, *graph, node_index);
    const bool vnni = device->partition.use_vnni && vnni_available();
    std::snprintf(out_support->reason, sizeof(out_support->reason), "%s",
                  plan_execution(plan, vnni).note.c_str());
  });
}

co_up_status* compiled_create(co_up_device* device, const co_up_subgraph_desc* graph,
                              co_up_compiled** out_compiled) {
  return backends::guarded(kStatusOrigin, "compiled_create", [&] {
    if (!device || !out_compiled) {
      fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_create: device or out_compiled is NULL");
    }
    *out_compiled = nullptr;
    backends::check_graph(graph);
    auto compiled = std::make_unique<co_up_compiled>();
    compiled->partition =
        std::make_unique<Int8Partition>(*graph, kDecodeRules, *device->pool, device->partition);
    *out_compiled = compiled.release();
  });
}

void compiled_release(co_up_compiled* compiled) { std::unique_ptr<co_up_compiled>{compiled}; }

Int8Partition& partition_of(co_up_compiled* compiled, int32_t direction, uint32_t index,
                            const char* call) {
  if (!compiled) fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(call) + ": compiled is NULL");
  if (direction != CO_UP_IO_INPUT && direction != CO_UP_IO_OUTPUT) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(call) + ": direction " +
                                            std::to_string(direction) + " is neither input nor output");
  }
  Int8Partition& p = *compiled->partition;
  const uint32_t count = direction == CO_UP_IO_INPUT ? p.input_count() : p.output_count();
  if (index >= count) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         std::string(call) + ": " + (direction == CO_UP_IO_INPUT ? "input" : "output") +
             " index " + std::to_string(index) + " is out of range (" + std::to_string(count) + ")");
  }
  return p;
}

// Inputs are written in f32 (the ABI's layout) into a staging buffer and quantised at unmap;
// outputs are dequantised into f32 at map. Both are the runtime's timed transfers.
co_up_status* compiled_map(co_up_compiled* compiled, int32_t direction, uint32_t index,
                           void** out_host_ptr) {
  return backends::guarded(kStatusOrigin, "compiled_map", [&] {
    if (!out_host_ptr) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_map: out_host_ptr is NULL");
    Int8Partition& p = partition_of(compiled, direction, index, "compiled_map");
    *out_host_ptr = direction == CO_UP_IO_INPUT ? static_cast<void*>(p.input_staging(index))
                                                : const_cast<float*>(p.read_output(index));
  });
}

co_up_status* compiled_unmap(co_up_compiled* compiled, int32_t direction, uint32_t index) {
  return backends::guarded(kStatusOrigin, "compiled_unmap", [&] {
    Int8Partition& p = partition_of(compiled, direction, index, "compiled_unmap");
    if (direction == CO_UP_IO_INPUT) p.enter_staged_input(index);
  });
}

// Binding quantises straight from the runtime's buffer (f32 NCHW -> int8 NHWC in one pass); the
// pointer is not kept past the call.
co_up_status* compiled_bind_input(co_up_compiled* compiled, uint32_t index, const void* host_ptr) {
  return backends::guarded(kStatusOrigin, "compiled_bind_input", [&] {
    if (!host_ptr) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_bind_input: host_ptr is NULL");
    Int8Partition& p = partition_of(compiled, CO_UP_IO_INPUT, index, "compiled_bind_input");
    if (reinterpret_cast<uintptr_t>(host_ptr) % alignof(float) != 0) {
      fail(CO_UP_STATUS_UNSUPPORTED,
           "compiled_bind_input: host_ptr is not 4-byte aligned (map and copy instead)");
    }
    p.enter_input(index, static_cast<const float*>(host_ptr));
  });
}

co_up_status* compiled_run(co_up_compiled* compiled, const co_up_run_hooks* hooks) {
  return backends::guarded(kStatusOrigin, "compiled_run", [&] {
    if (!compiled) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_run: compiled is NULL");
    compiled->partition->run(backends::LayerHooks(hooks));
  });
}

constexpr co_up_plugin_api kApi = {
    sizeof(co_up_plugin_api),
    CO_UP_ABI_VERSION_MAJOR,
    CO_UP_ABI_VERSION_MINOR,
    kBackendName,
    kBackendVersion,
    "int8 reference accelerator: quantises its whole partition (per-channel weights, activations "
    "calibrated on its first frames), XNNPACK int8 operators and AVX512-VNNI kernels",
    CO_UP_BACKEND_ACCELERATOR,
    &status_release,
    &factory_create,
    &factory_release,
    &device_create,
    &device_release,
    &device_query_node,
    &compiled_create,
    &compiled_release,
    &compiled_map,
    &compiled_unmap,
    &compiled_bind_input,
    &compiled_run,
    0,  // boundary_layouts: NCHW only
};

}  // namespace
}  // namespace co_up::int8

extern "C" CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(
    uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return nullptr;
  return &co_up::int8::kApi;
}
