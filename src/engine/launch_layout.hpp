// Which of the template's two kernels a launch takes (codegen.hpp, Layout). The flat kernel needs
// one contiguous run of fewer than 2^31 elements whose pointers are all vector-aligned; anything
// else (row pitches, an offset off the vector, 2^31 elements and more) takes the general kernel.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/backend.hpp"

namespace kplay {

// The flat kernel indexes in 32 bits (templates/common/elementwise.h).
constexpr std::uint64_t kFlatMaxElements = (1ull << 31) - 1;

// The element count of `args` as one run when the flat kernel can take it, else 0. Rows whose
// pitches all equal the row length are one run. `handles_are_addresses`: a DevicePtr's handle is
// a device address (CUDA), so it counts toward alignment; otherwise (an OpenCL cl_mem, whose
// start is aligned to at least 128 bytes) only the offset does. `in1` counts only where the kernel reads it (backward,
// gated). A gated backward (args.gated_backward) counts out1 and in2 too. `out_vec_bytes`: the output's vector where
// its elements are not the inputs' (FP8), 0 where they are.
std::uint64_t flat_elements(const rt::KernelArgs& args, bool reads_in1, std::size_t vec_bytes,
                            bool handles_are_addresses, std::size_t out_vec_bytes = 0);

// Whether a row kernel's whole-vector form (RowLayout::whole) takes `args`: every row of every
// buffer it touches starts on a vector (the buffer's start and each pitch) and the row holds whole
// vectors (cols a multiple of the vector's lanes). Same arguments as flat_elements'.
bool row_whole(const rt::KernelArgs& args, bool reads_in1, std::size_t vec_bytes, std::size_t elem_bytes,
               bool handles_are_addresses);

}  // namespace kplay
