// One row launch of the public API (kplay::softmax_forward/backward, kplay::Launcher's row
// launches): the softmax family over each row of a rows x cols view, its operands checked before
// any device work and turned into kernel arguments. The kernel and its launch (one block or one
// cluster per row) are the engine's, as for the CLI's runs.
#pragma once
#include <cstdint>
#include <string>

#include "kplay/kplay.hpp"
#include "runtime/backend.hpp"

namespace kplay::api {

struct RowOperand {
  const void* ptr = nullptr;
  std::int64_t ld = 0;  // row pitch, elements (strided rows: the pitch between outer blocks)
};

// rows x cols; with inner > 1, strided rows: each operand is [rows / inner, cols, inner] with its
// pitch between the outer blocks, row r at (r / inner) ld + r % inner and its elements inner apart
// (softmax over a dimension that is not the last of a contiguous tensor).
struct RowCall {
  KernelSpec spec;   // a row activation, its direction (backward: Saved::output)
  RowOperand in[2];  // forward: x; backward: grad_out, y (the saved output)
  RowOperand out;    // forward: y; backward: grad_in
  std::int64_t rows = 0, cols = 0, inner = 1;
  std::int64_t outer() const { return inner > 0 ? rows / inner : 0; }
  int inputs() const { return spec.direction == Direction::backward ? 2 : 1; }
};

// The spec of a row call: `activation` must name a row activation (softmax, log_softmax, softmin;
// Error(invalid_argument) otherwise, naming kplay::forward for an element-wise one); backward is
// from the saved output, as torch saves it.
KernelSpec row_spec(const std::string& activation, Dtype dtype, Direction direction);

// Refuses (Error(invalid_argument)) negative sizes, an inner below 1 or not dividing rows, null
// pointers, pitches below cols (strided: cols x inner) where there is more than one row (outer
// block), and any overlap of the output with an input: a row is reduced before it is written,
// so in place is not offered (torch has no in-place softmax either). `addresses`: the pointers
// are CUDA addresses (else OpenCL cl_mem handles, separate objects unless equal).
void check_rows(const RowCall& call, bool addresses);

// The CUDA device of every pointer of the call, checked to be one; Error(invalid_argument)
// otherwise.
int row_cuda_device(const RowCall& call);

rt::KernelArgs row_kernel_args(const RowCall& call);

}  // namespace kplay::api
