#include "plugin_adapter.h"

#include <string>

namespace co_up::backends {

void check_port(const char* call, int32_t direction, uint32_t index, size_t count) {
  if (direction != CO_UP_IO_INPUT && direction != CO_UP_IO_OUTPUT) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT, std::string(call) + ": direction " +
                                            std::to_string(direction) + " is neither input nor output");
  }
  if (index >= count) {
    fail(CO_UP_STATUS_INVALID_ARGUMENT,
         std::string(call) + ": " + (direction == CO_UP_IO_INPUT ? "input" : "output") +
             " index " + std::to_string(index) + " is out of range (" + std::to_string(count) + ")");
  }
}

}  // namespace co_up::backends
