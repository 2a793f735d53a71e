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
#include "plugin_adapter.h"
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

Int8Partition& partition_of(co_up_compiled& compiled, int32_t direction, uint32_t index,
                            const char* call) {
  Int8Partition& p = *compiled.partition;
  backends::check_port(call, direction, index,
                       direction == CO_UP_IO_INPUT ? p.input_count() : p.output_count());
  return p;
}

// The backend as backends::PluginAdapter builds the ABI table from it.
struct Int8Backend {
  static constexpr backends::PluginInfo kInfo = {
      kBackendName, kBackendVersion,
      "int8 reference accelerator: quantises its whole partition (per-channel weights, activations "
      "calibrated on its first frames), XNNPACK int8 operators and AVX512-VNNI kernels",
      CO_UP_BACKEND_ACCELERATOR,
      0,  // boundary_layouts: NCHW only
  };
  static constexpr const backends::StatusOrigin& kStatusOrigin = int8::kStatusOrigin;
  static constexpr const backends::DecodeRules& kDecodeRules = int8::kDecodeRules;

  // XNNPACK's initialisation is process-wide and idempotent; it is never undone.
  static std::unique_ptr<co_up_factory> create_factory(const co_up_option*, uint32_t) {
    xnnpack::initialize_xnnpack("map N's layers to a CPU");
    return std::make_unique<co_up_factory>();
  }

  static std::unique_ptr<co_up_device> create_device(co_up_factory&, const co_up_option* options,
                                                     uint32_t option_count) {
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
    return device;
  }

  // For a node that can run here, how: int8 with which kernel, or in f32 between a dequantise
  // and a quantise.
  static void refine_query(co_up_device& device, const co_up_subgraph_desc& graph,
                           uint32_t node_index, co_up_node_support& support) {
    const backends::NodePlan plan = backends::decode_node(kDecodeRules, graph, node_index);
    const bool vnni = device.partition.use_vnni && vnni_available();
    std::snprintf(support.reason, sizeof(support.reason), "%s",
                  plan_execution(plan, vnni).note.c_str());
  }

  static std::unique_ptr<co_up_compiled> compile(co_up_device& device,
                                                 const co_up_subgraph_desc& graph) {
    auto compiled = std::make_unique<co_up_compiled>();
    compiled->partition =
        std::make_unique<Int8Partition>(graph, kDecodeRules, *device.pool, device.partition);
    return compiled;
  }

  // Inputs are written in f32 (the ABI's layout) into a staging buffer and quantised at unmap;
  // outputs are dequantised into f32 at map. Both are the runtime's timed transfers.
  static void* map(co_up_compiled& compiled, int32_t direction, uint32_t index) {
    Int8Partition& p = partition_of(compiled, direction, index, "compiled_map");
    return direction == CO_UP_IO_INPUT ? static_cast<void*>(p.input_staging(index))
                                       : const_cast<float*>(p.read_output(index));
  }

  static void unmap(co_up_compiled& compiled, int32_t direction, uint32_t index) {
    Int8Partition& p = partition_of(compiled, direction, index, "compiled_unmap");
    if (direction == CO_UP_IO_INPUT) p.enter_staged_input(index);
  }

  // Binding quantises straight from the runtime's buffer (f32 NCHW -> int8 NHWC in one pass); the
  // pointer is not kept past the call.
  static void bind_input(co_up_compiled& compiled, uint32_t index, const void* host_ptr) {
    Int8Partition& p = partition_of(compiled, CO_UP_IO_INPUT, index, "compiled_bind_input");
    if (reinterpret_cast<uintptr_t>(host_ptr) % alignof(float) != 0) {
      fail(CO_UP_STATUS_UNSUPPORTED,
           "compiled_bind_input: host_ptr is not 4-byte aligned (map and copy instead)");
    }
    p.enter_input(index, static_cast<const float*>(host_ptr));
  }

  static void run(co_up_compiled& compiled, const co_up_run_hooks* hooks) {
    compiled.partition->run(backends::LayerHooks(hooks));
  }
};

constexpr co_up_plugin_api kApi = backends::PluginAdapter<Int8Backend>::api();

}  // namespace
}  // namespace co_up::int8

extern "C" CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(
    uint32_t host_abi_major, uint32_t /*host_abi_minor*/) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return nullptr;
  return &co_up::int8::kApi;
}
