// NVRTC, loaded at run time (found as nvrtc_library.hpp says), and the choice of what to
// compile for a device. Needs no GPU: `kplay emit --ptx` and the tests use it on any machine.
// NVRTC is thread-safe, so compiles may run in parallel.
#pragma once
#include <string>
#include <vector>

#include "runtime/backend.hpp"

namespace kplay::rt::cuda {

// What to build for one device.
struct CompileTarget {
  int arch = 0;                  // e.g. 90
  bool ptx = false;              // true: PTX for compute_<arch>, JIT-compiled by the driver
  std::string note;              // said to the user when falling back to PTX
  std::string describe() const;  // "sm_90 cubin" / "compute_90 PTX"
};

// From the device's compute capability (e.g. 90) and the architectures NVRTC supports: a cubin
// for the device's own sm_XX when NVRTC knows it; PTX for NVRTC's newest architecture when the
// device is newer (the driver JITs it); an Error(unsupported) naming both versions otherwise.
CompileTarget choose_target(int device_arch, const std::vector<int>& nvrtc_archs, const std::string& nvrtc_version,
                            const std::string& driver_version);

class Nvrtc {
 public:
  // Throws Error(no_device) if libnvrtc cannot be found or lacks a function kplay uses, and
  // Error(invalid_argument) if KPLAY_NVRTC names one that does not load; the same every call.
  static const Nvrtc& get();

  const std::string& path() const;   // the libnvrtc file loaded
  const std::string& found() const;  // how it was found: "on the library path", "KPLAY_NVRTC", ...

  std::string version() const;               // "13.0"
  std::vector<int> supported_archs() const;  // e.g. {75, 80, 86, 87, 89, 90, 100, ...}
  // Compiles `kernel` for `target`. Throws Error(compile_failed) with the log and the options.
  Binary compile(const RenderedKernel& kernel, const CompileTarget& target) const;

  struct Api;
  explicit Nvrtc(const Api* api) : api_(api) {}

 private:
  const Api* api_;
};

}  // namespace kplay::rt::cuda
