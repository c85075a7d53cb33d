// The CUDA (NVRTC) kernel language as codegen sees it: which templates and compiler options. Needs
// no CUDA headers, so `kplay emit` renders cuda kernels even where the backend is not built.
#pragma once
#include "runtime/target.hpp"

namespace kplay::rt::cuda {

Dialect dialect();

}  // namespace kplay::rt::cuda
