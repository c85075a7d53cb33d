// Creating backends by name. The only place that knows which backends exist; adding one means
// a folder under runtime/, a line here and in backend_factory.cpp, and one CMake line.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <cstdint>

#include "backend.hpp"

namespace kplay::rt {

// "cuda" or "opencl". Throws Error(no_device) with a plain reason ("no CUDA device: ...",
// "kplay was built without the OpenCL backend") and Error(invalid_argument) for unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name, int device_index = 0);

// Every backend kplay knows, built or not, with its devices; never throws.
std::vector<BackendReport> probe_backends();

std::vector<std::string> backend_names();

// What `--backend auto` takes: the first backend of backend_names() (CUDA, then OpenCL) that has
// a usable device (CUDA devices are not, where NVRTC is missing). `why` gets the statuses of those passed over ("no
// CUDA device: ..."). Throws Error(no_device) with every backend's status when none has a device.
std::string choose_backend(std::string* why = nullptr);
// The same choice among `reports` (probe_backends()'s, in its order).
std::string choose_backend(const std::vector<BackendReport>& reports, std::string* why);

// A backend's kernel language by name, without opening a device (kplay emit, tests); throws
// Error(invalid_argument) for unknown names.
Dialect dialect_of(const std::string& name);

// Compiles without a device: PTX for `arch` ("sm_90", "compute_90"; CUDA only, through NVRTC),
// for `kplay emit --ptx`. Throws Error(invalid_argument) for another backend or a malformed
// arch, Error(no_device) where the backend or its compiler is missing.
Binary compile_offline(const std::string& backend, const RenderedKernel& kernel, const std::string& arch);

// The caller's own objects, for the public API (src/api/), which reaches backends only through
// this header. Each throws Error(no_device) where the backend is not built.
namespace interop {
// The ordinal of the CUDA device that owns `ptr`, or Error(invalid_argument) "<name> is not
// device memory" when the driver does not know the pointer.
int cuda_pointer_device(std::uint64_t ptr, const char* name);
// Error(unsupported) when the calling thread's current context is not `ordinal`'s primary one.
void cuda_require_primary_context(int ordinal);
// Whether work on `stream` is being captured into a CUDA graph; false when the query fails.
bool cuda_stream_is_capturing(void* stream);
// CU_STREAM_LEGACY, for callers that pass a null stream.
void* cuda_legacy_default_stream();
// A stable name for the context and device of an OpenCL queue ("opencl:<context>:<device>").
std::string opencl_queue_identity(void* queue);
// A backend on the context and device of the caller's OpenCL queue.
std::unique_ptr<Backend> make_opencl_backend_for_queue(void* queue);
}  // namespace interop

}  // namespace kplay::rt
