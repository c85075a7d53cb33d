// Gated launches of the public API; see gated_call.hpp.
#include "gated_call.hpp"

#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"

namespace kplay::api {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

const char* in_name(const GatedCall& c, int i) {
  static const char* fwd[] = {"a", "b"};
  static const char* bwd[] = {"grad_out", "a", "b"};
  return c.spec.direction == Direction::backward ? bwd[i] : fwd[i];
}
const char* out_name(const GatedCall& c, int o) {
  return c.spec.direction == Direction::backward ? (o == 0 ? "grad_a" : "grad_b") : "out";
}

}  // namespace

bool regions_overlap(std::int64_t p, std::int64_t pa, std::int64_t wa, std::int64_t q, std::int64_t pb, std::int64_t wb,
                     std::int64_t rows) {
  if (wa <= 0 || wb <= 0 || rows <= 0) return false;
  if (rows == 1 || pa == pb) {
    const std::int64_t pitch = rows == 1 ? 0 : pa;
    const std::int64_t delta = q - p;  // overlap iff delta - k pitch is in (-wb, wa) for some |k| < rows
    if (pitch == 0) return delta > -wb && delta < wa;
    const std::int64_t k0 = delta >= 0 ? delta / pitch : -((-delta + pitch - 1) / pitch);
    for (std::int64_t k = k0 - 1; k <= k0 + 1; ++k)
      if ((k < 0 ? -k : k) < rows && delta - k * pitch > -wb && delta - k * pitch < wa) return true;
    return false;
  }
  const std::int64_t end_a = p + (rows - 1) * pa + wa, end_b = q + (rows - 1) * pb + wb;
  return p < end_b && q < end_a;
}

KernelSpec gated_spec(const std::string& activation, Dtype dtype, Direction direction, OutDtype out) {
  ResolvedActivation act = resolve_activation(activation);
  if (!act.gated) act = resolve_activation("gated(" + act.canonical + ")");
  if (direction == Direction::backward && !act.has_backward())
    throw Error(ErrorCode::unsupported, "activation '" + act.inner + "' has no backward pass");
  if (out != OutDtype::same && direction != Direction::forward)
    invalid("FP8 output is for the forward of a gated activation; its backward takes and writes the inputs' dtype");
  KernelSpec s;
  s.activation = act.canonical;
  s.dtype = dtype;
  s.direction = direction;
  s.saved = Saved::input;
  s.out = out;
  return s;
}

void check_gated(const GatedCall& c, bool addresses) {
  if (c.rows < 0 || c.d < 0)
    invalid("rows and d must be >= 0 (got " + std::to_string(c.rows) + " x " + std::to_string(c.d) + ")");
  if (c.fp8.type != OutDtype::same && !(c.fp8.scale > 0 && c.fp8.scale <= 3.4e38f) && !c.fp8.scale_device)
    invalid("the FP8 scale must be a finite number above 0 (got " + std::to_string(c.fp8.scale) + ")");
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(c.spec.dtype));
  const std::int64_t oes = static_cast<std::int64_t>(out_size(c.spec));
  auto check_operand = [&](const void* ptr, std::int64_t ld, std::int64_t offset, const char* name) {
    if (!ptr) invalid(std::string(name) + " is a null pointer");
    if (offset < 0) invalid(std::string(name) + "'s offset must be >= 0 (got " + std::to_string(offset) + ")");
    if (c.rows > 1 && ld < c.d)
      invalid(std::string(name) + "'s row pitch " + std::to_string(ld) + " is below d = " + std::to_string(c.d));
  };
  for (int i = 0; i < c.inputs(); ++i) check_operand(c.in[i].ptr, c.in[i].ld, c.in[i].offset, in_name(c, i));
  for (int o = 0; o < c.outputs(); ++o) check_operand(c.out[o].ptr, c.out[o].ld, c.out[o].offset, out_name(c, o));
  if (c.rows == 0 || c.d == 0) return;

  // Byte regions: CUDA pointers are addresses; an OpenCL buffer is its own object, so two regions
  // can meet only in the same cl_mem.
  struct Region {
    const void* buffer;
    std::int64_t start, pitch, width;
  };
  auto region = [&](const void* ptr, std::int64_t offset, std::int64_t ld, std::int64_t esize) {
    const std::int64_t base = addresses ? static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(ptr)) : 0;
    return Region{addresses ? nullptr : ptr, base + offset * esize, (c.rows > 1 ? ld : c.d) * esize, c.d * esize};
  };
  auto meet = [&](const Region& x, const Region& y) {
    return x.buffer == y.buffer && regions_overlap(x.start, x.pitch, x.width, y.start, y.pitch, y.width, c.rows);
  };
  for (int o = 0; o < c.outputs(); ++o) {
    const Region ro = region(c.out[o].ptr, c.out[o].offset, c.out[o].ld, o == 0 ? oes : es);
    for (int i = 0; i < c.inputs(); ++i) {
      const Region ri = region(c.in[i].ptr, c.in[i].offset, c.in[i].ld, es);
      // Exact in place: out over a (forward: input 0); grad_a over a, grad_b over b (inputs 1, 2).
      const int own = c.spec.direction == Direction::backward ? o + 1 : 0;
      const bool same = ro.buffer == ri.buffer && ro.start == ri.start && ro.pitch == ri.pitch && ro.width == ri.width;
      if (i == own && same) continue;
      if (meet(ro, ri))
        invalid(std::string(out_name(c, o)) + " overlaps " + in_name(c, i) + "; only exact in place is allowed (" +
                (c.spec.direction == Direction::backward ? "grad_a over a and grad_b over b" : "out over a") +
                ", the same buffer, offset and pitch)");
    }
  }
  if (c.outputs() == 2 && meet(region(c.out[0].ptr, c.out[0].offset, c.out[0].ld, es),
                               region(c.out[1].ptr, c.out[1].offset, c.out[1].ld, es)))
    invalid("grad_a and grad_b overlap");
}

int gated_cuda_device(const GatedCall& c) {
  namespace io = rt::interop;
  const int device = io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(c.out[0].ptr), out_name(c, 0));
  auto same = [&](const void* p, const std::string& name) {
    if (io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(p), name.c_str()) != device)
      invalid(name + " and " + out_name(c, 0) + " are on different devices");
  };
  for (int i = 0; i < c.inputs(); ++i) same(c.in[i].ptr, in_name(c, i));
  if (c.outputs() == 2) same(c.out[1].ptr, out_name(c, 1));
  if (c.fp8.type != OutDtype::same && c.fp8.scale_device) same(c.fp8.scale_device, "the FP8 scale");
  return device;
}

rt::KernelArgs gated_kernel_args(const GatedCall& c) {
  const std::uint64_t es = dtype_size(c.spec.dtype), oes = out_size(c.spec);
  auto in = [&](int i) {
    return rt::DevicePtr{reinterpret_cast<std::uint64_t>(c.in[i].ptr), static_cast<std::uint64_t>(c.in[i].offset) * es};
  };
  auto out = [&](int o) {
    return rt::DevicePtr{reinterpret_cast<std::uint64_t>(c.out[o].ptr),
                         static_cast<std::uint64_t>(c.out[o].offset) * (o == 0 ? oes : es)};
  };
  const auto pitch = [&](std::int64_t ld) { return static_cast<std::uint64_t>(c.rows > 1 ? ld : c.d); };
  rt::KernelArgs k;
  k.rows = static_cast<std::uint64_t>(c.rows);
  k.cols = static_cast<std::uint64_t>(c.d);
  k.out = out(0);
  k.ld_out = pitch(c.out[0].ld);
  k.in0 = in(0);
  k.ld_in0 = pitch(c.in[0].ld);
  k.in1 = in(1);
  k.ld_in1 = pitch(c.in[1].ld);
  if (c.spec.direction == Direction::backward) {
    k.gated_backward = true;
    k.out1 = out(1);
    k.ld_out1 = pitch(c.out[1].ld);
    k.in2 = in(2);
    k.ld_in2 = pitch(c.in[2].ld);
  }
  if (c.spec.out != OutDtype::same) {
    k.scaled = true;
    k.scale = c.fp8.scale;
    k.scale_ptr = rt::DevicePtr{reinterpret_cast<std::uint64_t>(c.fp8.scale_device), 0};
  }
  return k;
}

}  // namespace kplay::api
