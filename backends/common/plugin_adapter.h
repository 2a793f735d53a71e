// PluginAdapter: the C plugin table (co_up/plugin_abi.h) built from a C++ backend class, so that
// a backend writes its factory, device, compile, map/unmap, bind and run as C++ that throws
// PluginError, and none of the ABI glue: NULL-argument checks, out-pointers cleared before work,
// the catch-everything boundary (plugin_status.h), release functions and the common node query
// (node_decode.h).
//
// The backend defines the ABI's opaque structs (co_up_factory, co_up_device, co_up_compiled) and
// a class B with these static members:
//   kInfo                                   PluginInfo: name, version, description, kind, layouts
//   kStatusOrigin, kDecodeRules             its StatusOrigin and DecodeRules
//   create_factory(options, count)          -> std::unique_ptr<co_up_factory>
//   create_device(factory&, options, count) -> std::unique_ptr<co_up_device>
//   compile(device&, graph)                 -> std::unique_ptr<co_up_compiled>; `graph` has
//                                              passed check_graph
//   map(compiled&, direction, index)        -> void*; checks direction and index itself
//   unmap(compiled&, direction, index)
//   bind_input(compiled&, index, host_ptr)  host_ptr is not NULL
//   run(compiled&, hooks)                   hooks may be NULL
// and optionally:
//   description()                           -> const char*, when the line is only known at run
//                                              time (what a driver sees); else kInfo's
//   release_device(device*)                 instead of deleting it (device is not NULL)
//   release_compiled(compiled*)             instead of deleting it (compiled is not NULL)
//   answer_query(device&, graph*, index, support&)
//                                           the whole answer, instead of the common decode
//                                           (device and support are not NULL; `graph` is
//                                           unchecked); kDecodeRules is then not needed
//   refine_query(device&, graph, index, support&)
//                                           after the common decode accepted the node: a
//                                           backend-specific check that may decline it
//
// Part of co_up_backend_common; the table is a constant, the adapter holds no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "co_up/plugin_abi.h"
#include "node_decode.h"
#include "plugin_status.h"
#include "subgraph_desc.h"

namespace co_up::backends {

// What the table says about the plugin, besides its functions.
struct PluginInfo {
  const char* name;
  const char* version;
  const char* description;  // one line for --list-plugins
  int32_t kind;             // co_up_backend_kind
  uint32_t boundary_layouts;  // bit (1u << CO_UP_LAYOUT_NHWC) when it holds activations NHWC
  uint32_t external_io = 0;   // CO_UP_EXTERNAL_IO_* cases of io_memory that compile honours
};

// Throws INVALID_ARGUMENT unless `direction` is CO_UP_IO_INPUT or CO_UP_IO_OUTPUT and `index` is
// below `count`, the ports in that direction: "<call>: input index 3 is out of range (2)".
void check_port(const char* call, int32_t direction, uint32_t index, size_t count);

template <typename B>
class PluginAdapter {
 public:
  static constexpr co_up_plugin_api api() {
    co_up_plugin_api table = {
        sizeof(co_up_plugin_api),
        CO_UP_ABI_VERSION_MAJOR,
        CO_UP_ABI_VERSION_MINOR,
        B::kInfo.name,
        B::kInfo.version,
        B::kInfo.description,
        B::kInfo.kind,
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
        B::kInfo.boundary_layouts,
        B::kInfo.external_io,
    };
    if constexpr (requires { B::description(); }) table.description = B::description();
    return table;
  }

 private:
  static void status_release(co_up_status* status) {
    release_status(B::kStatusOrigin, status);
  }

  static co_up_status* factory_create(const co_up_option* options, uint32_t option_count,
                                      co_up_factory** out_factory) {
    return guarded(B::kStatusOrigin, "factory_create", [&] {
      if (!out_factory) fail(CO_UP_STATUS_INVALID_ARGUMENT, "factory_create: out_factory is NULL");
      *out_factory = nullptr;
      *out_factory = B::create_factory(options, option_count).release();
    });
  }

  static void factory_release(co_up_factory* factory) { std::unique_ptr<co_up_factory>{factory}; }

  static co_up_status* device_create(co_up_factory* factory, const co_up_option* options,
                                     uint32_t option_count, co_up_device** out_device) {
    return guarded(B::kStatusOrigin, "device_create", [&] {
      if (!factory || !out_device) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, "device_create: factory or out_device is NULL");
      }
      *out_device = nullptr;
      *out_device = B::create_device(*factory, options, option_count).release();
    });
  }

  static void device_release(co_up_device* device) {
    if constexpr (requires { B::release_device(device); }) {
      if (device) B::release_device(device);
    } else {
      std::unique_ptr<co_up_device>{device};
    }
  }

  static co_up_status* device_query_node(co_up_device* device, const co_up_subgraph_desc* graph,
                                         uint32_t node_index, co_up_node_support* out_support) {
    if constexpr (requires { B::answer_query(*device, graph, node_index, *out_support); }) {
      return guarded(B::kStatusOrigin, "device_query_node", [&] {
        if (!device || !out_support) {
          fail(CO_UP_STATUS_INVALID_ARGUMENT, "device_query_node: device or out_support is NULL");
        }
        B::answer_query(*device, graph, node_index, *out_support);
      });
    } else {
      return common_query(device, graph, node_index, out_support);
    }
  }

  static co_up_status* common_query(co_up_device* device, const co_up_subgraph_desc* graph,
                                    uint32_t node_index, co_up_node_support* out_support) {
    co_up_status* status = query_node(B::kStatusOrigin, B::kDecodeRules, device != nullptr, graph,
                                      node_index, out_support);
    if constexpr (requires { B::refine_query(*device, *graph, node_index, *out_support); }) {
      if (status != nullptr || !out_support->supported) return status;
      return guarded(B::kStatusOrigin, "device_query_node", [&] {
        B::refine_query(*device, *graph, node_index, *out_support);
      });
    } else {
      return status;
    }
  }

  static co_up_status* compiled_create(co_up_device* device, const co_up_subgraph_desc* graph,
                                       co_up_compiled** out_compiled) {
    return guarded(B::kStatusOrigin, "compiled_create", [&] {
      if (!device || !out_compiled) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_create: device or out_compiled is NULL");
      }
      *out_compiled = nullptr;
      check_graph(graph);
      *out_compiled = B::compile(*device, *graph).release();
    });
  }

  static void compiled_release(co_up_compiled* compiled) {
    if constexpr (requires { B::release_compiled(compiled); }) {
      if (compiled) B::release_compiled(compiled);
    } else {
      std::unique_ptr<co_up_compiled>{compiled};
    }
  }

  static co_up_status* compiled_map(co_up_compiled* compiled, int32_t direction, uint32_t index,
                                    void** out_host_ptr) {
    return guarded(B::kStatusOrigin, "compiled_map", [&] {
      if (!compiled || !out_host_ptr) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_map: compiled or out_host_ptr is NULL");
      }
      *out_host_ptr = B::map(*compiled, direction, index);
    });
  }

  static co_up_status* compiled_unmap(co_up_compiled* compiled, int32_t direction,
                                      uint32_t index) {
    return guarded(B::kStatusOrigin, "compiled_unmap", [&] {
      if (!compiled) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_unmap: compiled is NULL");
      B::unmap(*compiled, direction, index);
    });
  }

  static co_up_status* compiled_bind_input(co_up_compiled* compiled, uint32_t index,
                                           const void* host_ptr) {
    return guarded(B::kStatusOrigin, "compiled_bind_input", [&] {
      if (!compiled || !host_ptr) {
        fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_bind_input: compiled or host_ptr is NULL");
      }
      B::bind_input(*compiled, index, host_ptr);
    });
  }

  static co_up_status* compiled_run(co_up_compiled* compiled, const co_up_run_hooks* hooks) {
    return guarded(B::kStatusOrigin, "compiled_run", [&] {
      if (!compiled) fail(CO_UP_STATUS_INVALID_ARGUMENT, "compiled_run: compiled is NULL");
      B::run(*compiled, hooks);
    });
  }
};

}  // namespace co_up::backends
