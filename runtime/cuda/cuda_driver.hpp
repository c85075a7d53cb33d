// The CUDA driver API, loaded at run time from libcuda.so.1 so that kplay starts on machines
// without an NVIDIA driver and can say "no CUDA device" instead of failing to load. Entry points
// are resolved through cuGetProcAddress with kDriverAbiVersion, which gives the ABI version of
// each function that cuda_api.hpp declares (cuMemAlloc -> cuMemAlloc_v2, ...).
#pragma once

#include <string>

#include "cuda_api.hpp"

namespace kplay::rt::cuda {

struct Driver {
// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` is a declarator here, parentheses would break it
#define KPLAY_CU_FN(name, abi_version) decltype(&api::name) name = nullptr;
#include "cuda_driver_functions.inc"
#undef KPLAY_CU_FN
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

// Loads and initializes the driver once per process. Throws Error(no_device) saying why
// (library missing, cuInit failed, no device).
const Driver& driver();

// Throws Error(runtime_failed) "<what>: <CUDA error name>: <description>" unless r == CUDA_SUCCESS.
void check(CUresult r, const char* what);

std::string version_string(int cuda_version);  // 13000 -> "13.0"

}  // namespace kplay::rt::cuda
