// See cuda_dialect.hpp.
#include "cuda_dialect.hpp"

namespace kplay::rt::cuda {

Dialect dialect() {
  return {"cuda",
          "cuda/prelude.cuh",
          "common/elementwise.h",
          {"-default-device"},
          {"--use_fast_math"},
          {"-prec-div=false"},
          {"-fmad=false"}};
}

}  // namespace kplay::rt::cuda
