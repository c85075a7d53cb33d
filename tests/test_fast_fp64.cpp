// The "fast FP64" device trait (runtime/fast_fp64.hpp): which devices evaluate float32
// transcendental activations in double, and the KPLAY_FP64_MATH=0 override the tests use.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "runtime/fast_fp64.hpp"

using namespace kplay;

namespace {
// Sets KPLAY_FP64_MATH for one scope, restoring the previous value.
class ScopedFp64Math {
 public:
  explicit ScopedFp64Math(const char* value) {
    const char* old = std::getenv("KPLAY_FP64_MATH");
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value)
      setenv("KPLAY_FP64_MATH", value, 1);
    else
      unsetenv("KPLAY_FP64_MATH");
  }
  ~ScopedFp64Math() {
    if (had_)
      setenv("KPLAY_FP64_MATH", old_.c_str(), 1);
    else
      unsetenv("KPLAY_FP64_MATH");
  }
  ScopedFp64Math(const ScopedFp64Math&) = delete;
  ScopedFp64Math& operator=(const ScopedFp64Math&) = delete;

 private:
  bool had_ = false;
  std::string old_;
};
}  // namespace

TEST_CASE("fast FP64: the data-centre CUDA parts and OpenCL CPUs with cl_khr_fp64") {
  ScopedFp64Math unset(nullptr);
  for (int cc : {60, 70, 80, 90, 100}) {
    CAPTURE(cc);
    CHECK(rt::cuda_fast_fp64(cc));
  }
  for (int cc : {50, 61, 75, 86, 89, 120}) {  // consumer and workstation parts: 1/32 or 1/64 rate
    CAPTURE(cc);
    CHECK_FALSE(rt::cuda_fast_fp64(cc));
  }
  CHECK(rt::opencl_fast_fp64(true, true));
  CHECK_FALSE(rt::opencl_fast_fp64(true, false));
  CHECK_FALSE(rt::opencl_fast_fp64(false, true));  // OpenCL GPUs do not report their FP64 rate
}

TEST_CASE("KPLAY_FP64_MATH=0 turns the trait off everywhere; other values leave it") {
  {
    ScopedFp64Math off("0");
    CHECK_FALSE(rt::cuda_fast_fp64(90));
    CHECK_FALSE(rt::opencl_fast_fp64(true, true));
  }
  ScopedFp64Math on("1");
  CHECK(rt::cuda_fast_fp64(90));
  CHECK(rt::opencl_fast_fp64(true, true));
}
