// co_up_opencl_devices: lists every OpenCL platform and device the ICD loader sees, with the
// indices and names the platform JSON's "platform" / "device" options select, and which device
// the opencl backend picks without options. Exit 1 when there is none.
#include <cstdio>
#include <string>

#include "ocl_runtime.h"

int main(int argc, char** argv) {
  using namespace co_up::opencl;
  std::string platform;
  std::string device;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--platform=", 0) == 0) {
      platform = arg.substr(11);
    } else if (arg.rfind("--device=", 0) == 0) {
      device = arg.substr(9);
    } else {
      std::fprintf(stderr, "usage: %s [--platform=NAME|INDEX] [--device=NAME|INDEX]\n", argv[0]);
      return 2;
    }
  }
  std::string error;
  const auto devices = enumerate_devices(&error);
  if (devices.empty()) {
    std::fprintf(stderr, "co_up_opencl_devices: %s\n", error.c_str());
    return 1;
  }
  for (const DeviceInfo& d : devices) {
    std::printf("%s\n    platform version '%s', driver '%s', max work-group %zu, max alloc %llu MiB\n",
                d.summary().c_str(), d.platform_version.c_str(), d.driver_version.c_str(),
                d.max_work_group_size, static_cast<unsigned long long>(d.max_alloc_bytes >> 20));
  }
  try {
    const DeviceInfo& chosen = select_device(devices, platform, device);
    std::printf("selected: %s\n", chosen.summary().c_str());
  } catch (const PluginError& e) {
    std::fprintf(stderr, "co_up_opencl_devices: %s\n", e.what());
    return 1;
  }
  return 0;
}
