// The CUDA backend: the driver API (cuda_driver) plus NVRTC (nvrtc_compiler) behind the
// Backend interface. Uses the device's primary context, the one the CUDA runtime uses, so
// kernels launched on a caller's runtime stream see the caller's allocations.
#pragma once
#include <memory>
#include <vector>

#include "runtime/backend.hpp"

namespace kplay::rt::cuda {

// Throws Error(no_device) when there is no driver, no device, or no device `index`.
std::unique_ptr<Backend> make_cuda_backend(int index);

// Devices for `kplay devices`; never throws (the status says why there are none).
BackendReport probe_cuda();

// For the public API: the ordinal of the device that owns `ptr`, or Error(invalid_argument)
// "<name> is not device memory" when the driver does not know the pointer.
int pointer_device(std::uint64_t ptr, const char* name);

// For the public API: Error(unsupported) when the calling thread has a current context that is
// not the primary context of `ordinal` (kernels are loaded in the primary context).
void require_primary_context(int ordinal);

// Whether work on `stream` is being captured into a CUDA graph (then nothing may compile,
// allocate or synchronize). False when the query itself fails.
bool stream_is_capturing(void* stream);

// The legacy default stream (CU_STREAM_LEGACY), for callers that pass a null stream.
void* legacy_default_stream();

}  // namespace kplay::rt::cuda
