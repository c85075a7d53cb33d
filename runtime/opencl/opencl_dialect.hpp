// The OpenCL C 1.2 kernel language as codegen sees it: which templates and compiler options. Needs
// no OpenCL headers, so `kplay emit` renders opencl kernels even where the backend is not built.
#pragma once
#include "runtime/target.hpp"

namespace kplay::rt::opencl {

Dialect dialect();

}  // namespace kplay::rt::opencl
