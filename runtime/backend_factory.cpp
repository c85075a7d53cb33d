// Backend creation by name; the single list of backends.
#include "backend_factory.hpp"

#include "kplay/error.hpp"

#ifdef KPLAY_WITH_CUDA
#include "cuda/cuda_backend.hpp"
#endif
#ifdef KPLAY_WITH_OPENCL
#include "opencl/opencl_backend.hpp"
#endif

namespace kplay::rt {

std::vector<std::string> backend_names() { return {"cuda", "opencl"}; }

std::unique_ptr<Backend> make_backend(const std::string& name, int device_index) {
  if (name == "cuda") {
#ifdef KPLAY_WITH_CUDA
    return cuda::make_cuda_backend(device_index);
#else
    throw Error(ErrorCode::no_device, "no CUDA device: kplay was built without the CUDA backend");
#endif
  }
  if (name == "opencl") {
#ifdef KPLAY_WITH_OPENCL
    return opencl::make_opencl_backend(device_index);
#else
    throw Error(ErrorCode::no_device, "no OpenCL device: kplay was built without the OpenCL backend");
#endif
  }
  throw Error(ErrorCode::invalid_argument, "unknown backend '" + name + "' (expected cuda or opencl)");
}

std::vector<BackendReport> probe_backends() {
  std::vector<BackendReport> reports;
#ifdef KPLAY_WITH_CUDA
  reports.push_back(cuda::probe_cuda());
#else
  reports.push_back({"cuda", false, "not built (CUDA headers were not found at configure time)", {}});
#endif
#ifdef KPLAY_WITH_OPENCL
  reports.push_back(opencl::probe_opencl());
#else
  reports.push_back({"opencl", false, "not built (OpenCL headers were not found at configure time)", {}});
#endif
  return reports;
}

}  // namespace kplay::rt
