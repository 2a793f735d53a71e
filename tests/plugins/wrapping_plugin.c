/* Test plugins that really compute: each wraps the cpu-reference plugin (dlopened from the same
 * directory, file name WRAPPED_PLUGIN_FILE) and changes one thing about it. One source, variants:
 *
 *   TEST_PLUGIN_NEWER_MINOR     "newer-minor": a table for ABI minor host+1, one member longer
 *                               than this host knows; must load and run (minors only append)
 *   TEST_PLUGIN_NULL_FUNCTION   "null-function": device_release is NULL; must be refused, naming it
 *   TEST_PLUGIN_FAILING_INIT    "failing-init": factory_create fails with RUNTIME_ERROR (not
 *                               NO_DEVICE); must be refused with the plugin's message
 *   TEST_PLUGIN_FAILING_NPU     "failing-npu": an accelerator whose compiled_create fails; a run
 *                               that maps layers to it must stop at setup naming plugin and message
 *   TEST_PLUGIN_PARTIAL_NPU     "partial-npu": an accelerator whose capability query declines
 *                               every op but Conv, FullyConnected and MaxPool (for --npu_fallback)
 *   TEST_PLUGIN_CRASHING        "crashing": a CPU backend whose device_create misbehaves as its
 *                               option "fault" says: "segv" (writes to a read-only page: a real
 *                               fault, which UBSan's null check would not let through as one),
 *                               "abort", "hang" (sleeps for ever); without it, the reference
 *                               plugin as is
 *   TEST_PLUGIN_DECLINING_IO_MEMORY  "cpu-xnnpack" wrapped (in a directory of its own): a
 *                               compiled_create given io_memory answers UNSUPPORTED, as the ABI
 *                               lets a backend do; the runtime must copy those boundaries instead
 *
 * Statuses of the wrapper's own are static (status_release ignores them); the others come from
 * the reference plugin and go back to it. */
#define _GNU_SOURCE
#include <co_up/plugin_helpers.h>
#include <dlfcn.h>

#include "inner_plugin.h"

/* This host's table, then what a newer minor appended (never read by this host). */
static struct {
  co_up_plugin_api api;
  void (*appended_in_a_newer_minor)(void);
} g_table;

static co_up_status kInitFailed = {sizeof(co_up_status), CO_UP_STATUS_RUNTIME_ERROR,
                                   "failing-init: firmware upload failed (device reset needed)"};
static co_up_status kCompileFailed = {
    sizeof(co_up_status), CO_UP_STATUS_RUNTIME_ERROR,
    "vendor compiler rejected the partition (out of NPU SRAM: needs 9 MiB, has 4 MiB)"};

#if defined(TEST_PLUGIN_DECLINING_IO_MEMORY)
static co_up_status kIoMemoryDeclined = {sizeof(co_up_status), CO_UP_STATUS_UNSUPPORTED,
                                         "declining-io-memory: io_memory not taken"};
#endif

static void status_release(co_up_status* status) {
  if (status == &kInitFailed || status == &kCompileFailed) return;
#if defined(TEST_PLUGIN_DECLINING_IO_MEMORY)
  if (status == &kIoMemoryDeclined) return;
#endif
  g_inner->status_release(status);
}

#if defined(TEST_PLUGIN_FAILING_INIT)
static co_up_status* failing_factory_create(const co_up_option* options, uint32_t option_count,
                                            co_up_factory** out_factory) {
  (void)options;
  (void)option_count;
  *out_factory = NULL;
  return &kInitFailed;
}
#endif

#if defined(TEST_PLUGIN_FAILING_NPU)
static co_up_status* failing_compiled_create(co_up_device* device, const co_up_subgraph_desc* graph,
                                             co_up_compiled** out_compiled) {
  (void)device;
  (void)graph;
  *out_compiled = NULL;
  return &kCompileFailed;
}
#endif

#if defined(TEST_PLUGIN_PARTIAL_NPU)
static co_up_status* partial_query_node(co_up_device* device, const co_up_subgraph_desc* graph,
                                        uint32_t node_index, co_up_node_support* out_support) {
  co_up_status* status = g_inner->device_query_node(device, graph, node_index, out_support);
  if (status != NULL || !out_support->supported) return status;
  const char* op = co_up_subgraph_node(graph, node_index)->op_type;
  if (strcmp(op, "Conv") != 0 && strcmp(op, "FullyConnected") != 0 && strcmp(op, "MaxPool") != 0) {
    out_support->supported = 0;
    snprintf(out_support->reason, sizeof out_support->reason,
             "partial-npu runs Conv, FullyConnected and MaxPool only, not %s", op);
  }
  return NULL;
}
#endif

#if defined(TEST_PLUGIN_DECLINING_IO_MEMORY)
static co_up_status* declining_compiled_create(co_up_device* device, const co_up_subgraph_desc* graph,
                                               co_up_compiled** out_compiled) {
  if (graph->io_memory_count > 0) {
    *out_compiled = NULL;
    return &kIoMemoryDeclined;
  }
  return g_inner->compiled_create(device, graph, out_compiled);
}
#endif

#if defined(TEST_PLUGIN_CRASHING)
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static co_up_status* crashing_device_create(co_up_factory* factory, const co_up_option* options,
                                            uint32_t option_count, co_up_device** out_device) {
  co_up_option passed[64];
  uint32_t passed_count = 0;
  for (uint32_t i = 0; i < option_count; ++i) {
    if (strcmp(options[i].key, "fault") != 0) {
      if (passed_count < 64) passed[passed_count++] = options[i];
      continue;
    }
    if (strcmp(options[i].value, "segv") == 0) {
      volatile int* read_only =
          mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      *read_only = 1;
    } else if (strcmp(options[i].value, "abort") == 0) {
      abort();
    } else if (strcmp(options[i].value, "hang") == 0) {
      for (;;) pause();
    }
  }
  return g_inner->device_create(factory, passed, passed_count, out_device);
}
#endif

CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(uint32_t host_abi_major,
                                                                 uint32_t host_abi_minor) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return NULL;
  if (load_inner(host_abi_major, host_abi_minor) == NULL) return NULL;
  g_table.api = *g_inner;
  g_table.api.status_release = status_release;
  g_table.api.description = "co_up loader test plugin wrapping cpu-reference";
#if defined(TEST_PLUGIN_NEWER_MINOR)
  g_table.api.name = "newer-minor";
  g_table.api.abi_minor = CO_UP_ABI_VERSION_MINOR + 1u;
  g_table.api.struct_size = sizeof g_table;
#elif defined(TEST_PLUGIN_NULL_FUNCTION)
  g_table.api.name = "null-function";
  g_table.api.device_release = NULL;
#elif defined(TEST_PLUGIN_FAILING_INIT)
  g_table.api.name = "failing-init";
  g_table.api.factory_create = failing_factory_create;
#elif defined(TEST_PLUGIN_FAILING_NPU)
  g_table.api.name = "failing-npu";
  g_table.api.kind = CO_UP_BACKEND_ACCELERATOR;
  g_table.api.compiled_create = failing_compiled_create;
#elif defined(TEST_PLUGIN_PARTIAL_NPU)
  g_table.api.name = "partial-npu";
  g_table.api.kind = CO_UP_BACKEND_ACCELERATOR;
  g_table.api.device_query_node = partial_query_node;
#elif defined(TEST_PLUGIN_DECLINING_IO_MEMORY)
  g_table.api.compiled_create = declining_compiled_create;  /* keeps the name "cpu-xnnpack" */
#elif defined(TEST_PLUGIN_CRASHING)
  g_table.api.name = "crashing";
  g_table.api.device_create = crashing_device_create;
#else
#error "define one TEST_PLUGIN_* variant"
#endif
  return &g_table.api;
}
