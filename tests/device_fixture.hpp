// Shared devices for the tests: one backend per name for the whole run (context creation is
// slow), or the reason none is available.
#pragma once
#include <string>

#include "runtime/backend.hpp"

namespace kplay::test {

// "nvrtc" (the compiler only), "cuda", "opencl".
bool backend_available(const std::string& name, std::string* why = nullptr);
// backend_available, saying why not in the test's output (doctest MESSAGE), so that a case that
// returns early for want of the backend shows as skipped, not as passed.
bool backend_or_skip(const std::string& name);

// The backend, created on first use; nullptr when unavailable.
rt::Backend* shared_backend(const std::string& name);

}  // namespace kplay::test
