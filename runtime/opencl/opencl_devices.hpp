// OpenCL device discovery: every device of every platform, flattened in platform order (the
// index `kplay --device N` selects), and what kplay reports and allows for each.
#pragma once
#include <CL/cl.h>

#include <string>
#include <vector>

#include "runtime/backend.hpp"

namespace kplay::rt::opencl {

struct DeviceHandle {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
};

// Throws Error(no_device, "no OpenCL device: ...") saying why there is none (no platform, no
// device on any platform).
std::vector<DeviceHandle> list_devices();

// Queries for one device; throw Error(runtime_failed) naming the call on failure.
std::string device_string(cl_device_id device, cl_device_info what);
bool has_extension(cl_device_id device, const std::string& name);

DeviceInfo describe(const DeviceHandle& handle, int index);
// Block limit, no cache hints, and float64 only where the device has cl_khr_fp64.
TargetLimits limits_for(const DeviceHandle& handle, const DeviceInfo& info);

}  // namespace kplay::rt::opencl
