// Device discovery and description; see opencl_devices.hpp.
#include "opencl_devices.hpp"

#include <algorithm>
#include <sstream>

#include "opencl_errors.hpp"
#include "pocl_cache.hpp"
#include "runtime/fast_fp64.hpp"

namespace kplay::rt::opencl {
namespace {

// Strings from clGet*Info end in NUL and sometimes in spaces (PoCL pads device names).
std::string tidy(std::string s) {
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  const auto first = s.find_first_not_of(' ');
  return first == std::string::npos ? std::string() : s.substr(first);
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  check(clGetPlatformInfo(platform, what, 0, nullptr, &size), "clGetPlatformInfo");
  std::string s(size, '\0');
  check(clGetPlatformInfo(platform, what, size, &s[0], nullptr), "clGetPlatformInfo");
  return tidy(s);
}

template <class T>
T device_value(cl_device_id device, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(device, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

[[noreturn]] void no_device(const std::string& why) { throw Error(ErrorCode::no_device, "no OpenCL device: " + why); }

}  // namespace

std::vector<DeviceHandle> list_devices() {
  settle_pocl_cache();  // before the ICD loader first loads PoCL, which reads it once
  cl_uint nplatforms = 0;
  cl_int r = clGetPlatformIDs(0, nullptr, &nplatforms);
  if (r == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (r == CL_SUCCESS && nplatforms == 0))
    no_device(
        "the OpenCL ICD loader found no platform (no driver registered in /etc/OpenCL/vendors "
        "or in the folder named by OCL_ICD_VENDORS)");
  if (r != CL_SUCCESS) no_device("clGetPlatformIDs failed: " + error_name(r));
  std::vector<cl_platform_id> platforms(nplatforms);
  r = clGetPlatformIDs(nplatforms, platforms.data(), nullptr);
  if (r != CL_SUCCESS) no_device("clGetPlatformIDs failed: " + error_name(r));

  std::vector<DeviceHandle> devices;
  std::vector<std::string> empty;  // why a platform contributed nothing
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    r = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n);
    std::string name;
    try {
      name = platform_string(p, CL_PLATFORM_NAME);
    } catch (const Error&) {
      name = "unnamed platform";
    }
    if (r != CL_SUCCESS || n == 0) {
      empty.push_back("platform '" + name + "': " + (r == CL_SUCCESS ? "no device" : error_name(r)));
      continue;
    }
    std::vector<cl_device_id> ids(n);
    r = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
    if (r != CL_SUCCESS) {
      empty.push_back("platform '" + name + "': " + error_name(r));
      continue;
    }
    for (cl_device_id d : ids) devices.push_back({p, d});
  }
  if (devices.empty()) {
    std::string why;
    for (const auto& e : empty) why += (why.empty() ? "" : "; ") + e;
    no_device(why);
  }
  return devices;
}

std::string device_string(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  check(clGetDeviceInfo(device, what, 0, nullptr, &size), "clGetDeviceInfo");
  std::string s(size, '\0');
  check(clGetDeviceInfo(device, what, size, &s[0], nullptr), "clGetDeviceInfo");
  return tidy(s);
}

bool has_extension(cl_device_id device, const std::string& name) {
  std::istringstream words(device_string(device, CL_DEVICE_EXTENSIONS));
  for (std::string w; words >> w;)
    if (w == name) return true;
  return false;
}

DeviceInfo describe(const DeviceHandle& h, int index) {
  DeviceInfo info;
  info.backend = "opencl";
  info.index = index;
  info.name = device_string(h.device, CL_DEVICE_NAME);
  info.platform = platform_string(h.platform, CL_PLATFORM_NAME);
  info.arch = device_string(h.device, CL_DEVICE_VERSION);
  info.driver_version = device_string(h.device, CL_DRIVER_VERSION);
  info.compiler_version = device_string(h.device, CL_DEVICE_OPENCL_C_VERSION);
  info.memory_bytes = device_value<cl_ulong>(h.device, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.max_alloc_bytes = device_value<cl_ulong>(h.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.compute_units = static_cast<int>(device_value<cl_uint>(h.device, CL_DEVICE_MAX_COMPUTE_UNITS));
  // A work-group may also be capped by the first work-item dimension; kplay's blocks stop at 1024.
  std::size_t sizes[3] = {};
  check(clGetDeviceInfo(h.device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, nullptr), "clGetDeviceInfo");
  const std::size_t group = std::min(device_value<std::size_t>(h.device, CL_DEVICE_MAX_WORK_GROUP_SIZE), sizes[0]);
  info.max_block = static_cast<int>(std::min<std::size_t>(group, 1024));
  // Resident work-items per compute unit, for grid-stride sizing: OpenCL does not report it.
  // NVIDIA's SMs hold 2048 threads (1536 on some consumer parts: a few waves more is harmless).
  const bool nvidia = device_string(h.device, CL_DEVICE_VENDOR).find("NVIDIA") != std::string::npos;
  info.max_threads_per_unit = nvidia ? 2048 : static_cast<int>(std::min<std::size_t>(group, 1 << 20));
  // CL_DEVICE_GLOBAL_MEM_CACHE_SIZE is the last-level cache on CPUs, but NVIDIA reports its
  // L1 caches there: unknown (0) then, and the tuner assumes its default.
  info.l2_bytes = nvidia ? 0 : device_value<cl_ulong>(h.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  info.compile_target = "OpenCL C binary for " + info.name;
  info.fast_fp64 = opencl_fast_fp64((device_value<cl_device_type>(h.device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) != 0,
                                    has_extension(h.device, "cl_khr_fp64"));
  std::string note;
  if (!device_value<cl_bool>(h.device, CL_DEVICE_COMPILER_AVAILABLE)) note = "the driver has no OpenCL C compiler";
  if (!has_extension(h.device, "cl_khr_fp64"))
    note += std::string(note.empty() ? "" : "; ") + "no cl_khr_fp64: float64 is not offered";
  info.note = note;
  return info;
}

TargetLimits limits_for(const DeviceHandle& h, const DeviceInfo& info) {
  TargetLimits lim;
  lim.backend = "opencl";
  lim.max_block = info.max_block;
  lim.compute_units = info.compute_units;
  lim.max_threads_per_unit = info.max_threads_per_unit;
  lim.cache_hints = false;                             // OpenCL C has no evict-first loads and stores
  lim.dtypes = {Dtype::f32, Dtype::f16, Dtype::bf16};  // 16-bit types are stored as ushort: always there
  if (has_extension(h.device, "cl_khr_fp64")) lim.dtypes.push_back(Dtype::f64);
  return lim;
}

}  // namespace kplay::rt::opencl
