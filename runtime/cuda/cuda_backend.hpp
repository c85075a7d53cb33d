// The CUDA backend: the driver API (cuda_driver) plus NVRTC (nvrtc_compiler) behind the
// Backend interface. Uses the device's primary context, the one the CUDA runtime uses, so
// kernels launched on a caller's runtime stream see the caller's allocations.
#pragma once
#include <memory>
#include <vector>

#include "../backend.hpp"

namespace kplay::rt::cuda {

// Throws Error(no_device) when there is no driver, no device, or no device `index`.
std::unique_ptr<Backend> make_cuda_backend(int index);

// Devices for `kplay devices`; never throws (the status says why there are none).
BackendReport probe_cuda();

}  // namespace kplay::rt::cuda
