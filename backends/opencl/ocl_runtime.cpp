// OpenCL plumbing of the opencl backend (see ocl_runtime.h).
#include "ocl_runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace co_up::opencl {

std::string cl_error_name(cl_int code) {
  const char* name = "unknown OpenCL error";
  switch (code) {
#define CO_UP_CL_ERROR(x) \
  case x: name = #x; break;
    CO_UP_CL_ERROR(CL_DEVICE_NOT_FOUND)
    CO_UP_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    CO_UP_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    CO_UP_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    CO_UP_CL_ERROR(CL_OUT_OF_RESOURCES)
    CO_UP_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    CO_UP_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    CO_UP_CL_ERROR(CL_MEM_COPY_OVERLAP)
    CO_UP_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    CO_UP_CL_ERROR(CL_MAP_FAILURE)
    CO_UP_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    CO_UP_CL_ERROR(CL_INVALID_VALUE)
    CO_UP_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    CO_UP_CL_ERROR(CL_INVALID_PLATFORM)
    CO_UP_CL_ERROR(CL_INVALID_DEVICE)
    CO_UP_CL_ERROR(CL_INVALID_CONTEXT)
    CO_UP_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    CO_UP_CL_ERROR(CL_INVALID_MEM_OBJECT)
    CO_UP_CL_ERROR(CL_INVALID_BINARY)
    CO_UP_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    CO_UP_CL_ERROR(CL_INVALID_PROGRAM)
    CO_UP_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    CO_UP_CL_ERROR(CL_INVALID_KERNEL_NAME)
    CO_UP_CL_ERROR(CL_INVALID_KERNEL)
    CO_UP_CL_ERROR(CL_INVALID_ARG_INDEX)
    CO_UP_CL_ERROR(CL_INVALID_ARG_VALUE)
    CO_UP_CL_ERROR(CL_INVALID_ARG_SIZE)
    CO_UP_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    CO_UP_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    CO_UP_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    CO_UP_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    CO_UP_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    CO_UP_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    CO_UP_CL_ERROR(CL_INVALID_OPERATION)
    CO_UP_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    CO_UP_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
#undef CO_UP_CL_ERROR
    case -1001: name = "CL_PLATFORM_NOT_FOUND_KHR"; break;
    default: break;
  }
  return std::string(name) + " (" + std::to_string(code) + ")";
}

void fail_cl(cl_int code, const std::string& what) {
  const bool oom = code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
                   code == CL_OUT_OF_HOST_MEMORY || code == CL_INVALID_BUFFER_SIZE;
  fail(oom ? CO_UP_STATUS_OUT_OF_MEMORY : CO_UP_STATUS_RUNTIME_ERROR,
       what + " failed: " + cl_error_name(code) +
           (oom ? " (the OpenCL device is out of memory: map fewer layers to G or use a smaller "
                  "input)"
                : ""));
}

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  s.resize(std::strlen(s.c_str()));
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T value{};
  if (clGetDeviceInfo(d, what, sizeof(T), &value, nullptr) != CL_SUCCESS) return T{};
  return value;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 6 && s.find_first_not_of("0123456789") == std::string::npos;
}

bool matches(const std::string& selector, uint32_t index, const std::string& name) {
  if (selector.empty()) return true;
  if (is_index(selector)) return static_cast<uint32_t>(std::stoul(selector)) == index;
  return lower(name).find(lower(selector)) != std::string::npos;
}

// FNV-1a 64: a stable key for the cache (not a security boundary).
uint64_t fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

bool make_dirs(const std::string& path) {
  std::string partial;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size > 0) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  log.resize(std::strlen(log.c_str()));
  while (!log.empty() && std::isspace(static_cast<unsigned char>(log.back()))) log.pop_back();
  return log;
}

}  // namespace

std::string DeviceInfo::summary() const {
  std::ostringstream s;
  s << "platform " << platform_index << " '" << platform_name << "', device " << device_index
    << " '" << name << "' (" << type << ", " << version << ", " << compute_units << " CUs, "
    << (global_mem_bytes >> 20) << " MiB" << (host_unified_memory ? ", unified memory" : "")
    << ")";
  return s.str();
}

std::vector<DeviceInfo> enumerate_devices(std::string* out_error) {
  std::vector<DeviceInfo> devices;
  cl_uint platform_count = 0;
  const cl_int err = clGetPlatformIDs(0, nullptr, &platform_count);
  if (err != CL_SUCCESS || platform_count == 0) {
    *out_error = "the OpenCL ICD loader found no platform (" +
                 (err != CL_SUCCESS ? cl_error_name(err) : std::string("0 platforms")) +
                 "; install a driver that registers in /etc/OpenCL/vendors, e.g. a GPU driver "
                 "or pocl-opencl-icd)";
    return devices;
  }
  std::vector<cl_platform_id> platforms(platform_count);
  clGetPlatformIDs(platform_count, platforms.data(), nullptr);
  for (cl_uint p = 0; p < platform_count; ++p) {
    cl_uint device_count = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count) != CL_SUCCESS) {
      continue;
    }
    std::vector<cl_device_id> ids(device_count);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, device_count, ids.data(), nullptr);
    for (cl_uint d = 0; d < device_count; ++d) {
      DeviceInfo info;
      info.platform_index = p;
      info.device_index = d;
      info.platform = platforms[p];
      info.device = ids[d];
      info.platform_name = platform_string(platforms[p], CL_PLATFORM_NAME);
      info.platform_version = platform_string(platforms[p], CL_PLATFORM_VERSION);
      info.name = device_string(ids[d], CL_DEVICE_NAME);
      info.version = device_string(ids[d], CL_DEVICE_VERSION);
      info.driver_version = device_string(ids[d], CL_DRIVER_VERSION);
      const auto type = device_value<cl_device_type>(ids[d], CL_DEVICE_TYPE);
      info.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
      info.type = info.is_gpu                                ? "GPU"
                  : (type & CL_DEVICE_TYPE_CPU) != 0         ? "CPU"
                  : (type & CL_DEVICE_TYPE_ACCELERATOR) != 0 ? "accelerator"
                                                             : "other";
      info.compute_units = device_value<cl_uint>(ids[d], CL_DEVICE_MAX_COMPUTE_UNITS);
      info.global_mem_bytes = device_value<cl_ulong>(ids[d], CL_DEVICE_GLOBAL_MEM_SIZE);
      info.max_alloc_bytes = device_value<cl_ulong>(ids[d], CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      info.max_work_group_size = device_value<size_t>(ids[d], CL_DEVICE_MAX_WORK_GROUP_SIZE);
      info.host_unified_memory = device_value<cl_bool>(ids[d], CL_DEVICE_HOST_UNIFIED_MEMORY) != 0;
      devices.push_back(std::move(info));
    }
  }
  if (devices.empty()) {
    *out_error = "the OpenCL ICD loader found " + std::to_string(platform_count) +
                 " platform(s) but no device (check the driver / permissions on the GPU device)";
  }
  return devices;
}

const DeviceInfo& select_device(const std::vector<DeviceInfo>& devices, const std::string& platform,
                                const std::string& device) {
  const DeviceInfo* first = nullptr;
  const DeviceInfo* first_gpu = nullptr;
  for (const DeviceInfo& d : devices) {
    if (!matches(platform, d.platform_index, d.platform_name)) continue;
    if (!matches(device, d.device_index, d.name)) continue;
    if (!first) first = &d;
    if (!first_gpu && d.is_gpu) first_gpu = &d;
  }
  // An explicit device wins as named; otherwise a GPU beats a CPU implementation.
  const DeviceInfo* chosen = device.empty() && first_gpu ? first_gpu : first;
  if (chosen) return *chosen;
  std::string what;
  if (!platform.empty()) what += "platform='" + platform + "'";
  if (!device.empty()) what += std::string(what.empty() ? "" : " ") + "device='" + device + "'";
  std::string found;
  for (const DeviceInfo& d : devices) found += (found.empty() ? "" : "; ") + d.summary();
  fail(CO_UP_STATUS_INVALID_ARGUMENT,
       "no OpenCL device matches " + what + " (name substring or index); found: " + found);
}

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/co_up/opencl";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/co_up/opencl";
  }
  return "";
}

BuildResult build_program(cl_context context, const DeviceInfo& device, const std::string& source,
                          const std::string& options, const std::string& cache_dir) {
  BuildResult result;
  cl_device_id id = device.device;
  if (!cache_dir.empty()) {
    // Everything that changes the binary: the source, options, and the exact driver.
    uint64_t key = fnv1a(source);
    key = fnv1a(options, key);
    key = fnv1a(device.platform_name + '\n' + device.platform_version + '\n' + device.name + '\n' +
                    device.version + '\n' + device.driver_version,
                key);
    char name[32];
    std::snprintf(name, sizeof(name), "%016llx.bin", static_cast<unsigned long long>(key));
    result.cache_file = cache_dir + "/" + name;
    std::ifstream in(result.cache_file, std::ios::binary);
    if (in) {
      const std::vector<unsigned char> binary((std::istreambuf_iterator<char>(in)),
                                              std::istreambuf_iterator<char>());
      const unsigned char* data = binary.data();
      const size_t size = binary.size();
      cl_int status = CL_SUCCESS;
      cl_int err = CL_SUCCESS;
      ClProgram program(
          size > 0 ? clCreateProgramWithBinary(context, 1, &id, &size, &data, &status, &err)
                   : nullptr);
      // A stale or foreign binary is not an error: rebuild from source and overwrite it.
      if (program && err == CL_SUCCESS && status == CL_SUCCESS &&
          clBuildProgram(program.get(), 1, &id, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
        result.program = std::move(program);
        result.from_cache = true;
        return result;
      }
    }
  }
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int err = CL_SUCCESS;
  ClProgram program(clCreateProgramWithSource(context, 1, &text, &length, &err));
  check_cl(err, "clCreateProgramWithSource");
  err = clBuildProgram(program.get(), 1, &id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = build_log(program.get(), id);
    for (char& c : log) {
      if (c == '\n') c = '|';  // one-line status; '|' separates the log's lines
    }
    fail(CO_UP_STATUS_RUNTIME_ERROR, "building the OpenCL kernels for '" + device.name +
                                         "' failed: " + cl_error_name(err) + "; build log: " +
                                         (log.empty() ? "(empty)" : log));
  }
  if (!cache_dir.empty() && make_dirs(cache_dir)) {
    size_t size = 0;
    if (clGetProgramInfo(program.get(), CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) ==
            CL_SUCCESS &&
        size > 0) {
      std::vector<unsigned char> binary(size);
      unsigned char* data = binary.data();
      if (clGetProgramInfo(program.get(), CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr) ==
          CL_SUCCESS) {
        // Write then rename, so a concurrent reader never sees half a binary.
        const std::string tmp = result.cache_file + ".tmp" + std::to_string(getpid());
        std::ofstream out(tmp, std::ios::binary);
        out.write(reinterpret_cast<const char*>(binary.data()), static_cast<std::streamsize>(size));
        out.close();
        if (!out || std::rename(tmp.c_str(), result.cache_file.c_str()) != 0) {
          std::remove(tmp.c_str());
        }
      }
    }
  }
  result.program = std::move(program);
  return result;
}

}  // namespace co_up::opencl
