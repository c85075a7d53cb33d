// NVRTC loading, target choice and compilation; see nvrtc_compiler.hpp.
#include "nvrtc_compiler.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

#include "cuda_api.hpp"
#include "kplay/error.hpp"
#include "nvrtc_library.hpp"

namespace kplay::rt::cuda {

struct Nvrtc::Api {
// NOLINTNEXTLINE(bugprone-macro-parentheses): `name` is a declarator here, parentheses would break it
#define KPLAY_NVRTC_FN(name) decltype(&api::name) name = nullptr;
#include "nvrtc_functions.inc"
#undef KPLAY_NVRTC_FN
  NvrtcLibrary library;
};

namespace {
Nvrtc::Api load_api() {
  Nvrtc::Api api;
  api.library = open_nvrtc_library(NvrtcSearch::standard());
  std::string missing;
#define KPLAY_NVRTC_FN(name)                                                         \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(api.library.handle, #name)); \
  if (!api.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
#include "nvrtc_functions.inc"
#undef KPLAY_NVRTC_FN
  if (!missing.empty())
    throw Error(ErrorCode::no_device,
                "NVRTC " + api.library.path + " (" + api.library.found + ") is too old: it lacks " + missing);
  return api;
}

// First line of the log that says "error", for the one-line message.
std::string first_error(const std::string& log) {
  std::size_t pos = 0;
  while (pos < log.size()) {
    std::size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(pos, end - pos);
    if (line.find("error") != std::string::npos) return line;
    pos = end + 1;
  }
  return "see the compiler log";
}
}  // namespace

std::string CompileTarget::describe() const {
  return ptx ? "compute_" + std::to_string(arch) + " PTX" : "sm_" + std::to_string(arch) + " cubin";
}

CompileTarget choose_target(int device_arch, const std::vector<int>& archs, const std::string& nvrtc_version,
                            const std::string& driver_version) {
  if (archs.empty()) throw Error(ErrorCode::unsupported, "NVRTC " + nvrtc_version + " reports no architectures");
  CompileTarget t;
  if (std::find(archs.begin(), archs.end(), device_arch) != archs.end()) {
    t.arch = device_arch;
    return t;
  }
  const int newest = *std::max_element(archs.begin(), archs.end());
  const int oldest = *std::min_element(archs.begin(), archs.end());
  if (device_arch > newest) {
    t.arch = newest;
    t.ptx = true;
    t.note = "NVRTC " + nvrtc_version + " does not know sm_" + std::to_string(device_arch) +
             "; compiling PTX for compute_" + std::to_string(newest) + " and letting driver " + driver_version +
             " JIT-compile it";
    return t;
  }
  throw Error(ErrorCode::unsupported, "sm_" + std::to_string(device_arch) + " is not supported: NVRTC " +
                                          nvrtc_version + " builds sm_" + std::to_string(oldest) + "..sm_" +
                                          std::to_string(newest) + " and driver " + driver_version +
                                          " cannot run PTX for newer architectures on it");
}

const Nvrtc& Nvrtc::get() {
  // Loaded once; a failure is remembered and rethrown, so every caller gets the same reason.
  static std::once_flag once;
  static Api api;
  static std::string failure;
  static ErrorCode failure_code = ErrorCode::no_device;
  std::call_once(once, [] {
    try {
      api = load_api();
    } catch (const Error& e) {
      failure = e.what();
      failure_code = e.code();
    }
  });
  if (!failure.empty()) throw Error(failure_code, failure);
  static const Nvrtc instance(&api);
  return instance;
}

const std::string& Nvrtc::path() const { return api_->library.path; }
const std::string& Nvrtc::found() const { return api_->library.found; }

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  api_->nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> Nvrtc::supported_archs() const {
  int n = 0;
  if (api_->nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return {};
  std::vector<int> archs(static_cast<std::size_t>(n));
  api_->nvrtcGetSupportedArchs(archs.data());
  return archs;
}

Binary Nvrtc::compile(const RenderedKernel& kernel, const CompileTarget& target) const {
  nvrtcProgram prog = nullptr;
  const std::string program_name = kernel.entry + ".cu";
  nvrtcResult r = api_->nvrtcCreateProgram(&prog, kernel.source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    throw Error(ErrorCode::compile_failed, std::string("nvrtcCreateProgram: ") + api_->nvrtcGetErrorString(r));
  struct Destroy {
    const Api* api;
    nvrtcProgram* p;
    ~Destroy() { api->nvrtcDestroyProgram(p); }
  } destroy{api_, &prog};

  std::vector<std::string> options = kernel.options;
  options.push_back(std::string("--gpu-architecture=") + (target.ptx ? "compute_" : "sm_") +
                    std::to_string(target.arch));
  std::vector<const char*> argv;
  std::string options_text;
  for (const auto& o : options) {
    argv.push_back(o.c_str());
    options_text += (options_text.empty() ? "" : " ") + o;
  }
  r = api_->nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());

  std::size_t log_size = 0;
  api_->nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) api_->nvrtcGetProgramLog(prog, &log[0]);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();

  if (r != NVRTC_SUCCESS)
    throw Error(ErrorCode::compile_failed,
                "NVRTC " + version() + " failed to compile " + kernel.entry + " for " + target.describe() + ": " +
                    first_error(log),
                log, options_text);

  Binary b;
  b.log = log;
  std::size_t size = 0;
  if (target.ptx) {
    api_->nvrtcGetPTXSize(prog, &size);
    b.bytes.resize(size);
    api_->nvrtcGetPTX(prog, &b.bytes[0]);
    b.format = "ptx";
  } else {
    api_->nvrtcGetCUBINSize(prog, &size);
    b.bytes.resize(size);
    api_->nvrtcGetCUBIN(prog, &b.bytes[0]);
    b.format = "cubin";
  }
  return b;
}

}  // namespace kplay::rt::cuda
