// dlopen-based loading of the CUDA driver; see cuda_driver.hpp.
#include "cuda_driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include "kplay/error.hpp"

namespace kplay::rt::cuda {
namespace {

using GetProcAddress = decltype(&api::cuGetProcAddress);

[[noreturn]] void no_device(const std::string& why) { throw Error(ErrorCode::no_device, "no CUDA device: " + why); }

Driver load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    no_device(std::string("the NVIDIA driver library libcuda.so.1 was not found (") + (err ? err : "dlopen failed") +
              ")");
  }
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) no_device("the NVIDIA driver is too old (no cuGetProcAddress_v2); CUDA 12 or newer is needed");

  Driver d;
  std::string missing;
#define KPLAY_CU_FN(name, abi_version)                                                                      \
  {                                                                                                         \
    void* p = nullptr;                                                                                      \
    CUdriverProcAddressQueryResult status{};                                                                \
    if (get_proc(#name, &p, kDriverAbiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || !p) \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                                          \
    d.name = reinterpret_cast<decltype(d.name)>(p);                                                         \
  }
#include "cuda_driver_functions.inc"
#undef KPLAY_CU_FN
  if (!missing.empty()) no_device("the NVIDIA driver lacks " + missing);

  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    no_device(std::string("cuInit failed (") + (name ? name : "unknown error") + ")");
  }
  d.cuDriverGetVersion(&d.version);
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) no_device("the driver reports no device");
  return d;
}
}  // namespace

const Driver& driver() {
  // Loaded once; a failure is remembered and rethrown, so every caller gets the same reason.
  static std::once_flag once;
  static Driver d;
  static std::string failure;
  std::call_once(once, [] {
    try {
      d = load();
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw Error(ErrorCode::no_device, failure);
  return d;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  const Driver& d = driver();
  d.cuGetErrorName(r, &name);
  d.cuGetErrorString(r, &text);
  throw Error(ErrorCode::runtime_failed,
              std::string(what) + ": " + (name ? name : "CUDA error") + ": " + (text ? text : "no description"));
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace kplay::rt::cuda
