// See device_fixture.hpp.
#include "device_fixture.hpp"

#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>

#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#ifdef KPLAY_WITH_CUDA
#include "runtime/cuda/nvrtc_compiler.hpp"
#endif

namespace kplay::test {
namespace {
struct Slot {
  std::unique_ptr<rt::Backend> backend;
  std::string why;
};

Slot& slot(const std::string& name) {
  static std::map<std::string, Slot> slots;
  auto it = slots.find(name);
  if (it != slots.end()) return it->second;
  Slot s;
  // KPLAY_CUDA_DEVICE / KPLAY_OPENCL_DEVICE pick the device index (default 0).
  std::string var = "KPLAY_" + name + "_DEVICE";
  for (auto& ch : var) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const char* index = std::getenv(var.c_str());
  try {
    s.backend = rt::make_backend(name, index && *index ? std::atoi(index) : 0);
  } catch (const Error& e) {
    s.why = e.what();
  }
  return slots.emplace(name, std::move(s)).first->second;
}
}  // namespace

bool backend_available(const std::string& name, std::string* why) {
  if (name == "nvrtc") {
#ifdef KPLAY_WITH_CUDA
    try {
      rt::cuda::Nvrtc::get();
      return true;
    } catch (const Error& e) {
      if (why) *why = e.what();
      return false;
    }
#else
    if (why) *why = "kplay was built without the CUDA backend";
    return false;
#endif
  }
  Slot& s = slot(name);
  if (why) *why = s.why;
  return s.backend != nullptr;
}

rt::Backend* shared_backend(const std::string& name) { return slot(name).backend.get(); }

bool backend_or_skip(const std::string& name) {
  std::string why;
  if (backend_available(name, &why)) return true;
  MESSAGE("skipped, no " << name << " device: " << why);
  return false;
}

}  // namespace kplay::test
