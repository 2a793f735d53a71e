/* "fake-npu": a well-formed ACCELERATOR plugin whose hardware is absent, the way a vendor NPU
 * plugin behaves on a machine without the vendor runtime: factory_create returns
 * CO_UP_STATUS_NO_DEVICE with a message saying why. The loader must list it as declined, with
 * that message, and keep loading the others. Every other entry is a stub that fails cleanly. */
#include <co_up/plugin_abi.h>
#include <stdlib.h>

#define FAKE_NPU_DECLINE_MESSAGE "no NPU device here (librknnrt.so not found)"

static co_up_status* make_status(int32_t code, const char* message) {
  co_up_status* status = (co_up_status*)calloc(1, sizeof(co_up_status));
  if (status == NULL) abort();
  status->struct_size = sizeof(co_up_status);
  status->code = code;
  status->message = message; /* static strings only: nothing to free but the struct */
  return status;
}

static void status_release(co_up_status* status) { free(status); }

static co_up_status* factory_create(const co_up_option* options, uint32_t option_count,
                                    co_up_factory** out_factory) {
  (void)options;
  (void)option_count;
  *out_factory = NULL;
  return make_status(CO_UP_STATUS_NO_DEVICE, FAKE_NPU_DECLINE_MESSAGE);
}

static void factory_release(co_up_factory* factory) { (void)factory; }

static co_up_status* device_create(co_up_factory* factory, const co_up_option* options,
                                   uint32_t option_count, co_up_device** out_device) {
  (void)factory;
  (void)options;
  (void)option_count;
  *out_device = NULL;
  return make_status(CO_UP_STATUS_NO_DEVICE, FAKE_NPU_DECLINE_MESSAGE);
}

static void device_release(co_up_device* device) { (void)device; }

static co_up_status* device_query_node(co_up_device* device, const co_up_subgraph_desc* graph,
                                       uint32_t node_index, co_up_node_support* out_support) {
  (void)device;
  (void)graph;
  (void)node_index;
  out_support->supported = 0;
  return NULL;
}

static co_up_status* compiled_create(co_up_device* device, const co_up_subgraph_desc* graph,
                                     co_up_compiled** out_compiled) {
  (void)device;
  (void)graph;
  *out_compiled = NULL;
  return make_status(CO_UP_STATUS_INVALID_STATE, "fake-npu has no device");
}

static void compiled_release(co_up_compiled* compiled) { (void)compiled; }

static co_up_status* compiled_map(co_up_compiled* compiled, int32_t direction, uint32_t index,
                                  void** out_host_ptr) {
  (void)compiled;
  (void)direction;
  (void)index;
  *out_host_ptr = NULL;
  return make_status(CO_UP_STATUS_INVALID_STATE, "fake-npu has no device");
}

static co_up_status* compiled_unmap(co_up_compiled* compiled, int32_t direction, uint32_t index) {
  (void)compiled;
  (void)direction;
  (void)index;
  return make_status(CO_UP_STATUS_INVALID_STATE, "fake-npu has no device");
}

static co_up_status* compiled_run(co_up_compiled* compiled, const co_up_run_hooks* hooks) {
  (void)compiled;
  (void)hooks;
  return make_status(CO_UP_STATUS_INVALID_STATE, "fake-npu has no device");
}

static const co_up_plugin_api kApi = {
    sizeof(co_up_plugin_api),
    CO_UP_ABI_VERSION_MAJOR,
    CO_UP_ABI_VERSION_MINOR,
    "fake-npu",
    "0.1.0",
    "co_up loader test plugin: an NPU plugin on a machine without the NPU",
    CO_UP_BACKEND_ACCELERATOR,
    status_release,
    factory_create,
    factory_release,
    device_create,
    device_release,
    device_query_node,
    compiled_create,
    compiled_release,
    compiled_map,
    compiled_unmap,
    NULL, /* compiled_bind_input: optional */
    compiled_run,
    0,
};

CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(uint32_t host_abi_major,
                                                                 uint32_t host_abi_minor) {
  (void)host_abi_minor;
  return host_abi_major == CO_UP_ABI_VERSION_MAJOR ? &kApi : NULL;
}
