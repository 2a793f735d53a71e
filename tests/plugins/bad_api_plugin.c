/* Plugins whose co_up_plugin_get_api the loader must refuse; one source, three variants:
 *   TEST_PLUGIN_WRONG_MAJOR  returns a complete table that says abi_major = host major + 1
 *   TEST_PLUGIN_NULL_API     built "for" major + 1: returns NULL to any other host major
 *   TEST_PLUGIN_TRUNCATED    a table of the right version whose struct_size ends before
 *                            compiled_run (what an ABI-0.x plugin would look like)
 * None of the functions is ever meant to be called; they fail cleanly if they are. */
#include <co_up/plugin_abi.h>
#include <stddef.h>

static void status_release(co_up_status* status) { (void)status; }

static co_up_status kUnsupported = {sizeof(co_up_status), CO_UP_STATUS_UNSUPPORTED,
                                    "test plugin: not callable"};

static co_up_status* factory_create(const co_up_option* options, uint32_t option_count,
                                    co_up_factory** out_factory) {
  (void)options;
  (void)option_count;
  *out_factory = NULL;
  return &kUnsupported;
}

static co_up_plugin_api make_api(void) {
  co_up_plugin_api api = {0};
  api.struct_size = sizeof(co_up_plugin_api);
  api.abi_major = CO_UP_ABI_VERSION_MAJOR;
  api.abi_minor = CO_UP_ABI_VERSION_MINOR;
  api.name = "bad-api";
  api.version = "0.0.1";
  api.description = "co_up loader test plugin";
  api.kind = CO_UP_BACKEND_CPU;
  api.status_release = status_release;
  api.factory_create = factory_create;
  return api;
}

static co_up_plugin_api g_api;

CO_UP_PLUGIN_EXPORT const co_up_plugin_api* co_up_plugin_get_api(uint32_t host_abi_major,
                                                                 uint32_t host_abi_minor) {
  (void)host_abi_minor;
  g_api = make_api();
#if defined(TEST_PLUGIN_WRONG_MAJOR)
  (void)host_abi_major;
  g_api.name = "wrong-major";
  g_api.abi_major = CO_UP_ABI_VERSION_MAJOR + 1u;
  g_api.abi_minor = 0u;
  return &g_api;
#elif defined(TEST_PLUGIN_NULL_API)
  if (host_abi_major != CO_UP_ABI_VERSION_MAJOR + 1u) return NULL;
  return &g_api;
#elif defined(TEST_PLUGIN_TRUNCATED)
  (void)host_abi_major;
  g_api.name = "truncated";
  g_api.struct_size = (uint32_t)offsetof(co_up_plugin_api, compiled_run);
  return &g_api;
#else
#error "define one TEST_PLUGIN_* variant"
#endif
}
