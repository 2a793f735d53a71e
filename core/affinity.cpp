#include "core/affinity.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include "core/error.h"

namespace co_up {

void pin_current_thread(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores) CPU_SET(core, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (rc != 0) {
    throw RuntimeError("cannot pin thread to cores " + format_cores(cores) + ": " +
                       std::strerror(rc) + " (check the platform's core ids)");
  }
}

std::vector<int> current_thread_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cores.push_back(c);
    }
  }
  return cores;
}

std::string format_cores(const std::vector<int>& cores) {
  std::string text;
  for (size_t i = 0; i < cores.size(); ++i) text += (i ? "," : "") + std::to_string(cores[i]);
  return text;
}

}  // namespace co_up
