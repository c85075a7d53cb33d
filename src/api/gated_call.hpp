// One gated launch of the public API (kplay::gated_forward/backward, kplay::Launcher's gated
// launches): its operands checked before any device work, and turned into kernel arguments.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

#include "kplay/kplay.hpp"
#include "runtime/backend.hpp"

namespace kplay::api {

struct GatedCall {
  KernelSpec spec;  // a gated activation, its direction and output type
  GatedIn in[3];    // forward: a, b; backward: grad_out, a, b
  GatedOut out[2];  // forward: out; backward: grad_a, grad_b
  std::int64_t rows = 0, d = 0;
  Fp8Output fp8;
  int inputs() const { return spec.direction == Direction::backward ? 3 : 2; }
  int outputs() const { return spec.direction == Direction::backward ? 2 : 1; }
  // The problem size the kernel's config is chosen for: the elements of a and b, rows x 2d.
  std::uint64_t elements() const { return static_cast<std::uint64_t>(rows) * 2 * static_cast<std::uint64_t>(d); }
};

// The two calls, operands in the order the public functions take them.
inline GatedCall gated_forward_call(KernelSpec spec, GatedIn a, GatedIn b, GatedOut out, std::int64_t rows,
                                    std::int64_t d, const Fp8Output& fp8) {
  GatedCall c;
  c.spec = std::move(spec);
  c.in[0] = a;
  c.in[1] = b;
  c.out[0] = out;
  c.rows = rows;
  c.d = d;
  c.fp8 = fp8;
  return c;
}
inline GatedCall gated_backward_call(KernelSpec spec, GatedIn grad_out, GatedIn a, GatedIn b, GatedOut grad_a,
                                     GatedOut grad_b, std::int64_t rows, std::int64_t d) {
  GatedCall c;
  c.spec = std::move(spec);
  c.in[0] = grad_out;
  c.in[1] = a;
  c.in[2] = b;
  c.out[0] = grad_a;
  c.out[1] = grad_b;
  c.rows = rows;
  c.d = d;
  return c;
}

// The spec of a gated call: `activation` in gated(...) unless it names a gated one already.
// Throws Error(invalid_argument) for FP8 output on a backward.
KernelSpec gated_spec(const std::string& activation, Dtype dtype, Direction direction, OutDtype out = OutDtype::same);

// Refuses (Error(invalid_argument)) negative sizes, null pointers, negative offsets, pitches
// below d where rows > 1, and overlap between an output and an input or the other output other
// than the exact in place a gated kernel allows (out over a; grad_a over a, grad_b over b: the
// same buffer, offset and pitch). `addresses`: the pointers are CUDA addresses (else OpenCL
// cl_mem handles, separate objects unless equal).
void check_gated(const GatedCall& call, bool addresses);

// The CUDA device of every pointer of the call (the scale's too), checked to be one; Error
// (invalid_argument) otherwise.
int gated_cuda_device(const GatedCall& call);

rt::KernelArgs gated_kernel_args(const GatedCall& call);

// Whether two row-pitched regions of `rows` rows share a byte: row r of the first is [p + r pa,
// p + r pa + wa), of the second [q + r pb, q + r pb + wb) (bytes). Exact for equal pitches
// (side-by-side column slices of one matrix, as a and b of a [rows, 2d] tensor, do not overlap);
// otherwise the spans are compared, which may refuse a case that would have been safe.
bool regions_overlap(std::int64_t p, std::int64_t pa, std::int64_t wa, std::int64_t q, std::int64_t pb, std::int64_t wb,
                     std::int64_t rows);

}  // namespace kplay::api
