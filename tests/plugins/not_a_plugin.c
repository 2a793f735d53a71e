/* A valid shared object that is not a co_up plugin: it lacks co_up_plugin_get_api. */
#include <co_up/plugin_abi.h>

CO_UP_PLUGIN_EXPORT int not_a_plugin_answer(void) { return 42; }
