// Creating backends by name. The only place that knows which backends exist; adding one means
// a folder under runtime/, a line here and in backend_factory.cpp, and one CMake line.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"

namespace kplay::rt {

// "cuda" or "opencl". Throws Error(no_device) with a plain reason ("no CUDA device: ...",
// "kplay was built without the OpenCL backend") and Error(invalid_argument) for unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name, int device_index = 0);

// Every backend kplay knows, built or not, with its devices; never throws.
std::vector<BackendReport> probe_backends();

std::vector<std::string> backend_names();

}  // namespace kplay::rt
