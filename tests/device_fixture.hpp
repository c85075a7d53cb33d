// Shared devices for the tests: one backend per name for the whole run (context creation is
// slow), or the reason none is available.
#pragma once
#include <string>

#include "runtime/backend.hpp"

namespace kplay::test {

// "nvrtc" (the compiler only), "cuda", "opencl".
bool backend_available(const std::string& name, std::string* why = nullptr);

// The backend, created on first use; nullptr when unavailable.
rt::Backend* shared_backend(const std::string& name);

}  // namespace kplay::test
