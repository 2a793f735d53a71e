/* For test plugins that wrap another plugin: loads the wrapped plugin (file WRAPPED_PLUGIN_FILE,
 * in the directory this plugin was loaded from) once, and closes it when this plugin is unloaded.
 * A header of static functions because each wrapping plugin is one C file built into its own .so;
 * the including file defines _GNU_SOURCE (for dladdr) before its first include. */
#ifndef CO_UP_TESTS_INNER_PLUGIN_H_
#define CO_UP_TESTS_INNER_PLUGIN_H_

#include <co_up/plugin_abi.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void* g_inner_handle;
static const co_up_plugin_api* g_inner;

static const co_up_plugin_api* load_inner(uint32_t host_abi_major, uint32_t host_abi_minor) {
  if (g_inner != NULL) return g_inner;
  Dl_info self;
  if (dladdr((void*)&load_inner, &self) == 0 || self.dli_fname == NULL) return NULL;
  char path[4096];
  const char* slash = strrchr(self.dli_fname, '/');
  int dir_length = slash != NULL ? (int)(slash - self.dli_fname) : 1;
  snprintf(path, sizeof path, "%.*s/%s", dir_length, slash != NULL ? self.dli_fname : ".",
           WRAPPED_PLUGIN_FILE);
  g_inner_handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (g_inner_handle == NULL) return NULL;
  co_up_plugin_get_api_fn get_api =
      (co_up_plugin_get_api_fn)dlsym(g_inner_handle, CO_UP_PLUGIN_ENTRY_POINT);
  g_inner = get_api != NULL ? get_api(host_abi_major, host_abi_minor) : NULL;
  return g_inner;
}

__attribute__((destructor)) static void unload_inner(void) {
  if (g_inner_handle != NULL) dlclose(g_inner_handle);
}

#endif /* CO_UP_TESTS_INNER_PLUGIN_H_ */
