/* Test plugins that grab SIGQUIT the way PoCL's LLVM does (a handler that returns, so SIGQUIT no
 * longer quits), each at one point of the plugin's life, and otherwise compute as the
 * cpu-reference plugin they wrap (dlopened from the same directory, file name
 * WRAPPED_PLUGIN_FILE). One source, variants:
 *
 *   TEST_PLUGIN_SIGNAL_AT_LOAD     "signal-at-load": in a static initialiser (during dlopen)
 *   TEST_PLUGIN_SIGNAL_AT_FACTORY  "signal-at-factory": in factory_create
 *   TEST_PLUGIN_SIGNAL_AT_DEVICE   "signal-at-device": in device_create
 *   TEST_PLUGIN_SIGNAL_AT_COMPILE  "signal-at-compile": in compiled_create
 *
 * Every variant's device_create also appends "<backend> <processor letter>\n" to the file named by
 * $CO_UP_TEST_DEVICE_MARKER when that is set, so a test sees which devices co_up created. */
#define _GNU_SOURCE
#include <co_up/plugin_helpers.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(TEST_PLUGIN_SIGNAL_AT_LOAD)
#define BACKEND_NAME "signal-at-load"
#elif defined(TEST_PLUGIN_SIGNAL_AT_FACTORY)
#define BACKEND_NAME "signal-at-factory"
#elif defined(TEST_PLUGIN_SIGNAL_AT_DEVICE)
#define BACKEND_NAME "signal-at-device"
#elif defined(TEST_PLUGIN_SIGNAL_AT_COMPILE)
#define BACKEND_NAME "signal-at-compile"
#else
#error "define one TEST_PLUGIN_SIGNAL_AT_* variant"
#endif

#include "inner_plugin.h"
static co_up_plugin_api g_api;

static void swallow(int sig) { (void)sig; }

static void grab_sigquit(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = swallow;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGQUIT, &action, NULL);
}

#if defined(TEST_PLUGIN_SIGNAL_AT_LOAD)
__attribute__((constructor)) static void grab_at_load(void) { grab_sigquit(); }
#endif

static co_up_status* factory_create(const co_up_option* options, uint32_t option_count,
                                    co_up_factory** out_factory) {
#if defined(TEST_PLUGIN_SIGNAL_AT_FACTORY)
  grab_sigquit();
#endif
  return g_inner->factory_create(options, option_count, out_factory);
}

static co_up_status* device_create(co_up_factory* factory, const co_up_option* options,
                                   uint32_t option_count, co_up_device** out_device) {
  const char* marker = getenv("CO_UP_TEST_DEVICE_MARKER");
  if (marker != NULL && *marker != '\0') {
    const char* processor = "?";
    for (uint32_t i = 0; i < option_count; ++i) {
      if (strcmp(options[i].key, "processor") == 0) processor = options[i].value;
    }
    FILE* f = fopen(marker, "a");
    if (f != NULL) {
      fprintf(f, "%s %s\n", BACKEND_NAME, processor);
      fclose(f);
    }
  }
#if defined(TEST_PLUGIN_SIGNAL_AT_DEVICE)
  grab_sigquit();
#endif
  return g_inner->device_create(factory, options, option_count, out_device);
}

static co_up_status* compiled_create(co_up_device* device, const co_up_subgraph_desc* graph,
                                     co_up_compiled** out_compiled) {
#if defined(TEST_PLUGIN_SIGNAL_AT_COMPILE)
  grab_sigquit();
#endif
  return g_inner->compiled_create(device, graph, out_compiled);
}

CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(uint32_t host_abi_major,
                                                                 uint32_t host_abi_minor) {
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR) return NULL;
  if (load_inner(host_abi_major, host_abi_minor) == NULL) return NULL;
  g_api = *g_inner;
  g_api.name = BACKEND_NAME;
  g_api.description = "co_up loader test plugin wrapping cpu-reference; grabs SIGQUIT";
  g_api.factory_create = factory_create;
  g_api.device_create = device_create;
  g_api.compiled_create = compiled_create;
  return &g_api;
}
