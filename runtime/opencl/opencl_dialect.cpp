// See opencl_dialect.hpp.
#include "opencl_dialect.hpp"

namespace kplay::rt::opencl {

Dialect dialect() {
  return {"opencl", "opencl/prelude.cl", "common/elementwise.h", {"-cl-std=CL1.2"}, {"-cl-fast-relaxed-math"}, {}, {}};
}

}  // namespace kplay::rt::opencl
