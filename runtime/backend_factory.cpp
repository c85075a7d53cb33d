// Backend creation by name; the single list of backends.
#include "backend_factory.hpp"

#include "kplay/error.hpp"
#include "runtime/cuda/cuda_dialect.hpp"
#include "runtime/opencl/opencl_dialect.hpp"

#ifdef KPLAY_WITH_CUDA
#include "runtime/cuda/cuda_backend.hpp"
#include "runtime/cuda/nvrtc_compiler.hpp"
#endif
#ifdef KPLAY_WITH_OPENCL
#include "runtime/opencl/opencl_backend.hpp"
#endif

namespace kplay::rt {

std::vector<std::string> backend_names() { return {"cuda", "opencl"}; }

std::string choose_backend(std::string* why) { return choose_backend(probe_backends(), why); }

std::string choose_backend(const std::vector<BackendReport>& reports, std::string* why) {
  std::string passed;
  for (const BackendReport& r : reports) {
    if (r.available && !r.devices.empty()) {
      if (why) *why = passed;
      return r.backend;
    }
    passed += (passed.empty() ? "" : "; ") + r.status;
  }
  throw Error(ErrorCode::no_device, "no device for any backend: " + passed);
}

Dialect dialect_of(const std::string& name) {
  if (name == "cuda") return cuda::dialect();
  if (name == "opencl") return opencl::dialect();
  throw Error(ErrorCode::invalid_argument, "unknown backend '" + name + "' (expected cuda or opencl)");
}

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
  reports.push_back({"cuda", false, "not built (configured with KPLAY_WITH_CUDA=OFF)", {}, ""});
#endif
#ifdef KPLAY_WITH_OPENCL
  reports.push_back(opencl::probe_opencl());
#else
  reports.push_back({"opencl", false, "not built (OpenCL headers were not found at configure time)", {}, ""});
#endif
  return reports;
}

Binary compile_offline(const std::string& backend, const RenderedKernel& kernel, const std::string& arch) {
  if (backend != "cuda") throw Error(ErrorCode::invalid_argument, "--ptx needs --backend cuda");
#ifdef KPLAY_WITH_CUDA
  const std::string bad = "--arch '" + arch + "': expected sm_XX, e.g. sm_90";
  if (arch.rfind("sm_", 0) != 0 && arch.rfind("compute_", 0) != 0) throw Error(ErrorCode::invalid_argument, bad);
  cuda::CompileTarget target;
  try {
    target.arch = std::stoi(arch.substr(arch.find('_') + 1));
  } catch (const std::exception&) {
    throw Error(ErrorCode::invalid_argument, bad);
  }
  target.ptx = true;
  return cuda::Nvrtc::get().compile(kernel, target);
#else
  (void)kernel;
  (void)arch;
  throw Error(ErrorCode::no_device, "kplay was built without the CUDA backend (KPLAY_WITH_CUDA=OFF)");
#endif
}

namespace interop {
namespace {
[[noreturn, maybe_unused]] void not_built(const char* backend) {
  throw Error(ErrorCode::no_device,
              std::string("no ") + backend + " device: kplay was built without the " + backend + " backend");
}
}  // namespace

#ifdef KPLAY_WITH_CUDA
int cuda_pointer_device(std::uint64_t ptr, const char* name) { return cuda::pointer_device(ptr, name); }
void cuda_require_primary_context(int ordinal) { cuda::require_primary_context(ordinal); }
bool cuda_stream_is_capturing(void* stream) { return cuda::stream_is_capturing(stream); }
void* cuda_legacy_default_stream() { return cuda::legacy_default_stream(); }
#else
int cuda_pointer_device(std::uint64_t, const char*) { not_built("CUDA"); }
void cuda_require_primary_context(int) { not_built("CUDA"); }
bool cuda_stream_is_capturing(void*) { return false; }
void* cuda_legacy_default_stream() { not_built("CUDA"); }
#endif

#ifdef KPLAY_WITH_OPENCL
std::string opencl_queue_identity(void* queue) { return opencl::queue_identity(queue); }
std::unique_ptr<Backend> make_opencl_backend_for_queue(void* queue) {
  return opencl::make_opencl_backend_for_queue(queue);
}
#else
std::string opencl_queue_identity(void*) { not_built("OpenCL"); }
std::unique_ptr<Backend> make_opencl_backend_for_queue(void*) { not_built("OpenCL"); }
#endif
}  // namespace interop

}  // namespace kplay::rt
