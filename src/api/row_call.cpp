// Row launches of the public API; see row_call.hpp.
#include "row_call.hpp"

#include <limits>

#include "gated_call.hpp"  // regions_overlap
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"

namespace kplay::api {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

const char* in_name(const RowCall& c, int i) {
  if (c.spec.direction != Direction::backward) return "x";
  return i == 0 ? "grad_out" : "y";
}
const char* out_name(const RowCall& c) { return c.spec.direction == Direction::backward ? "grad_in" : "y"; }

}  // namespace

KernelSpec row_spec(const std::string& activation, Dtype dtype, Direction direction) {
  const ResolvedActivation act = resolve_activation(activation);
  if (!act.is_row())
    invalid("'" + act.canonical + "' is not a row activation (" + row_activation_names() +
            "); element-wise activations run through kplay::forward / backward");
  KernelSpec s;
  s.activation = act.canonical;
  s.dtype = dtype;
  s.direction = direction;
  s.saved = direction == Direction::backward ? Saved::output : Saved::input;
  return s;
}

void check_rows(const RowCall& c, bool addresses) {
  if (c.rows < 0 || c.cols < 0)
    invalid("rows and cols must be >= 0 (got " + std::to_string(c.rows) + " x " + std::to_string(c.cols) + ")");
  if (c.inner < 1) invalid("inner must be >= 1 (got " + std::to_string(c.inner) + ")");
  if (c.rows % c.inner)
    invalid("strided rows: rows = " + std::to_string(c.rows) +
            " is not a multiple of inner = " + std::to_string(c.inner));
  // Where rows are strided, an outer block (cols x inner elements) plays the part of a row below.
  if (c.cols > 0 && c.inner > std::numeric_limits<std::int64_t>::max() / c.cols)
    invalid("strided rows: cols x inner overflows (" + std::to_string(c.cols) + " x " + std::to_string(c.inner) + ")");
  const std::int64_t blocks = c.outer(), span = c.cols * c.inner;
  auto check_operand = [&](const void* ptr, std::int64_t ld, const char* name) {
    if (!ptr) invalid(std::string(name) + " is a null pointer");
    if (blocks > 1 && ld < span)
      invalid(std::string(name) + "'s " + (c.inner > 1 ? "pitch between outer blocks " : "row pitch ") +
              std::to_string(ld) + " is below " + (c.inner > 1 ? "cols x inner = " : "cols = ") + std::to_string(span));
  };
  for (int i = 0; i < c.inputs(); ++i) check_operand(c.in[i].ptr, c.in[i].ld, in_name(c, i));
  check_operand(c.out.ptr, c.out.ld, out_name(c));
  if (c.rows == 0 || c.cols == 0) return;

  const std::int64_t es = static_cast<std::int64_t>(dtype_size(c.spec.dtype));
  auto start = [&](const void* p) {
    return addresses ? static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p)) : 0;
  };
  auto pitch = [&](std::int64_t ld) { return (blocks > 1 ? ld : span) * es; };
  for (int i = 0; i < c.inputs(); ++i) {
    // OpenCL: two regions meet only in the same cl_mem.
    if (!addresses && c.in[i].ptr != c.out.ptr) continue;
    if (regions_overlap(start(c.out.ptr), pitch(c.out.ld), span * es, start(c.in[i].ptr), pitch(c.in[i].ld), span * es,
                        blocks))
      invalid(std::string(out_name(c)) + " overlaps " + in_name(c, i) +
              ": a row activation writes a row only after reading all of it, and its outputs take buffers of their "
              "own (no in place)");
  }
}

int row_cuda_device(const RowCall& c) {
  namespace io = rt::interop;
  const int device = io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(c.out.ptr), out_name(c));
  for (int i = 0; i < c.inputs(); ++i)
    if (io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(c.in[i].ptr), in_name(c, i)) != device)
      invalid(std::string(in_name(c, i)) + " and " + out_name(c) + " are on different devices");
  return device;
}

rt::KernelArgs row_kernel_args(const RowCall& c) {
  auto ptr = [](const void* p) { return rt::DevicePtr{reinterpret_cast<std::uint64_t>(p), 0}; };
  const auto pitch = [&](std::int64_t ld) { return static_cast<std::uint64_t>(c.outer() > 1 ? ld : c.cols * c.inner); };
  rt::KernelArgs k;
  k.rows = static_cast<std::uint64_t>(c.rows);
  k.cols = static_cast<std::uint64_t>(c.cols);
  k.strided = c.inner > 1;
  k.inner = static_cast<std::uint64_t>(c.inner);
  k.out = ptr(c.out.ptr);
  k.ld_out = pitch(c.out.ld);
  k.in0 = ptr(c.in[0].ptr);
  k.ld_in0 = pitch(c.in[0].ld);
  const int second = c.inputs() == 2 ? 1 : 0;  // forward: the kernel ignores in1
  k.in1 = ptr(c.in[second].ptr);
  k.ld_in1 = pitch(c.in[second].ld);
  return k;
}

}  // namespace kplay::api
