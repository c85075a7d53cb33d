// Finding and opening libnvrtc at run time. NVRTC comes from the CUDA toolkit or, in a Python
// environment, from NVIDIA's pip wheel that torch depends on (nvidia-cuda-nvrtc), which puts it
// in site-packages/nvidia/... where the loader does not look. The order, first found wins:
//   1. KPLAY_NVRTC, a path to a libnvrtc shared object; if it does not load, that is the error.
//   2. A libnvrtc this process already loaded (torch's), by soname.
//   3. The loader's path: libnvrtc.so.13, .so.12, .so; then /usr/local/cuda/lib64.
//   4. The wheel in a site-packages beside kplay (nvidia/cu13/lib/libnvrtc.so.13 for CUDA 13,
//      nvidia/cuda_nvrtc/lib/libnvrtc.so.12 for CUDA 12).
// NVRTC opens its libnvrtc-builtins by name through the loader's search, so a libnvrtc opened by
// path (steps 1, 3's folders and 4) has the builtins beside it opened first.
#pragma once
#include <string>
#include <vector>

namespace kplay::rt::cuda {

struct NvrtcLibrary {
  void* handle = nullptr;  // from dlopen; kept open for the process
  std::string path;        // the file the loader mapped
  std::string found;       // how it was found, e.g. "KPLAY_NVRTC", "on the library path"
};

// Where to look, each step of the order above; standard() is this process's (the tests pass their
// own folders).
struct NvrtcSearch {
  std::string env;                          // KPLAY_NVRTC's value, "" when unset
  std::vector<std::string> loaded_sonames;  // step 2
  std::vector<std::string> loader_names;    // step 3, the names the loader searches
  std::vector<std::string> toolkit_dirs;    // step 3, folders off the loader's path
  std::vector<std::string> site_packages;   // step 4
  static NvrtcSearch standard();
};

// Opens NVRTC in the order above. Throws Error(invalid_argument) naming KPLAY_NVRTC when it is set
// and does not load, Error(no_device) saying where it looked when there is none.
NvrtcLibrary open_nvrtc_library(const NvrtcSearch& where);

// The site-packages folders that may hold the wheel, from the folder kplay was loaded from: the
// Python extension's (site-packages/kplay) parent, and for a command in a virtual environment's
// bin/, that environment's lib/python3.*/site-packages. Only folders that exist.
std::vector<std::string> site_packages_beside(const std::string& loaded_from);

// The first wheel-installed libnvrtc under any of `roots` (site-packages folders), "" if none.
std::string find_wheel_nvrtc(const std::vector<std::string>& roots);

}  // namespace kplay::rt::cuda
