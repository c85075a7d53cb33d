// The OpenCL backend: any OpenCL 1.2 device (NVIDIA's driver, PoCL on the CPU, ...) behind the
// Backend interface. Devices are every device of every platform, flattened in platform order.
// One context and one in-order, profiling queue per backend; a cl_command_queue of the caller's
// (same context) may be passed to launch instead. DevicePtr.handle holds a cl_mem. The public
// API makes its backends from the caller's queue instead, to share the caller's context.
#pragma once
#include <memory>
#include <string>

#include "runtime/backend.hpp"

namespace kplay::rt::opencl {

// Throws Error(no_device, "no OpenCL device: ...") when there is no platform, no device, or no
// device `index`.
std::unique_ptr<Backend> make_opencl_backend(int index);

// Devices for `kplay devices`; never throws (the status says why there are none).
BackendReport probe_opencl();

// For the public API, where the caller brings a cl_command_queue and cl_mem buffers of its own:
// "opencl:<context>:<device>" of the queue, one key per context and device (the backend made for
// it retains the context, so the key stays unique while it lives). Throws Error(invalid_argument)
// when the driver does not take `queue` for a command queue.
std::string queue_identity(void* queue);

// A backend on the context and device of the caller's `queue` (retained), so kernels accept the
// caller's buffers and run on the caller's queue when it is passed as the stream. Its own queue
// (transfers, timing) is a new profiling queue in that context. Throws like queue_identity.
std::unique_ptr<Backend> make_opencl_backend_for_queue(void* queue);

}  // namespace kplay::rt::opencl
