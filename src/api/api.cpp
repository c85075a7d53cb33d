// The C++ API (kplay/kplay.hpp): argument checks, then a launch through the device's engine.
#include "kplay/kplay.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "device_registry.hpp"
#include "gated_call.hpp"
#include "row_call.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "spec/user_activations.hpp"

namespace kplay {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

struct Operand {
  const char* name;
  const void* ptr;
  bool written;
};

// Elements a view spans in one buffer: from its first element to the last row's last one.
std::uint64_t span(const View2D& v, std::int64_t ld) { return static_cast<std::uint64_t>((v.rows - 1) * ld + v.cols); }

void check_view(const View2D& v) {
  if (v.rows < 0 || v.cols < 0)
    invalid("rows and cols must be >= 0 (got " + std::to_string(v.rows) + " x " + std::to_string(v.cols) + ")");
  if (v.rows > 1 && (v.ld_in < v.cols || v.ld_out < v.cols))
    invalid("row pitches must be >= cols (ld_in " + std::to_string(v.ld_in) + ", ld_out " + std::to_string(v.ld_out) +
            ", cols " + std::to_string(v.cols) + ")");
}

// Whether two row-pitched views of `rows` x `cols` elements share any byte. With equal pitches it
// is exact (column slices of one matrix side by side do not overlap); otherwise it compares the
// spans, which may refuse a case that would have been safe.
bool views_overlap(std::uintptr_t a, std::uintptr_t b, const View2D& v, std::int64_t ld_a, std::int64_t ld_b,
                   std::int64_t esize) {
  const std::int64_t row_bytes = v.cols * esize;
  if (v.rows <= 1 || ld_a == ld_b) {
    const std::int64_t pitch = (v.rows <= 1 ? v.cols : ld_a) * esize;
    const std::int64_t d = static_cast<std::int64_t>(b) - static_cast<std::int64_t>(a);
    // Overlap iff d = k * pitch + delta with |k| < rows and |delta| < row_bytes.
    const std::int64_t k0 = pitch ? (d >= 0 ? d / pitch : -((-d + pitch - 1) / pitch)) : 0;
    for (std::int64_t k = k0 - 1; k <= k0 + 1; ++k)
      if ((k < 0 ? -k : k) < std::max<std::int64_t>(v.rows, 1) && std::llabs(d - k * pitch) < row_bytes) return true;
    return false;
  }
  const std::uintptr_t end_a = a + static_cast<std::uintptr_t>(span(v, ld_a) * esize);
  const std::uintptr_t end_b = b + static_cast<std::uintptr_t>(span(v, ld_b) * esize);
  return a < end_b && b < end_a;
}

// Refuses partial overlap between the output and an input; exact in place (same pointer, same
// pitch) is fine. CUDA pointers are addresses; OpenCL cl_mem handles are separate objects.
void check_overlap(const Operand& out, const Operand& in, const View2D& v, std::int64_t esize) {
  const auto o = reinterpret_cast<std::uintptr_t>(out.ptr), i = reinterpret_cast<std::uintptr_t>(in.ptr);
  if (o == i && (v.rows <= 1 || v.ld_in == v.ld_out)) return;
  if (views_overlap(o, i, v, v.ld_out, v.ld_in, esize))
    invalid(std::string(out.name) + " partially overlaps " + in.name +
            "; only exact in place (the same pointer and pitch) is allowed");
}

void run(const KernelSpec& spec, const Operand& out, const Operand& in0, const Operand* in1, const View2D& view,
         Stream stream) {
  check_view(view);
  for (const Operand* op : {&out, &in0, in1})
    if (op && !op->ptr) invalid(std::string(op->name) + " is a null pointer");
  const std::uint64_t esize = dtype_size(spec.dtype);
  const bool flat = view.rows <= 1 || (view.ld_in == view.cols && view.ld_out == view.cols);
  if (stream.backend == Backend::cuda && view.rows > 0 && view.cols > 0) {
    check_overlap(out, in0, view, static_cast<std::int64_t>(esize));
    if (in1) check_overlap(out, *in1, view, static_cast<std::int64_t>(esize));
  }

  api::DeviceEngine* de = nullptr;
  void* queue = stream.handle;
  if (stream.backend == Backend::cuda) {
    namespace io = rt::interop;
    const int device = io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(out.ptr), out.name);
    for (const Operand* op : {&in0, in1})
      if (op && io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(op->ptr), op->name) != device)
        invalid(std::string(op->name) + " and " + out.name + " are on different devices");
    io::cuda_require_primary_context(device);
    de = &api::cuda_engine(device);
    if (!queue) queue = io::cuda_legacy_default_stream();
  } else {
    de = &api::opencl_engine(stream.handle);
  }
  if (view.rows == 0 || view.cols == 0) return;  // checked, nothing to do

  const std::uint64_t n = static_cast<std::uint64_t>(view.rows) * static_cast<std::uint64_t>(view.cols);
  auto kernel = de->kernel_for_launch(spec, n, stream.backend, queue);
  auto ptr = [](const void* p) { return rt::DevicePtr{reinterpret_cast<std::uint64_t>(p), 0}; };
  rt::KernelArgs a;
  a.out = ptr(out.ptr);
  a.in0 = ptr(in0.ptr);
  a.in1 = in1 ? ptr(in1->ptr) : a.in0;
  if (flat) {
    a.rows = 1;
    a.cols = n;
    a.ld_out = a.ld_in0 = a.ld_in1 = n;
  } else {
    a.rows = static_cast<std::uint64_t>(view.rows);
    a.cols = static_cast<std::uint64_t>(view.cols);
    a.ld_out = static_cast<std::uint64_t>(view.ld_out);
    a.ld_in0 = a.ld_in1 = static_cast<std::uint64_t>(view.ld_in);
  }
  de->launch(*kernel, a, stream.backend, queue);
}

View2D flat_view(std::int64_t n) {
  if (n < 0) invalid("n must be >= 0 (got " + std::to_string(n) + ")");
  View2D v;
  v.rows = 1;
  v.cols = n;
  v.ld_in = v.ld_out = n;
  return v;
}

}  // namespace

void forward(const std::string& activation, Dtype dtype, const void* in, void* out, std::int64_t n, Stream stream) {
  forward_2d(activation, dtype, in, out, flat_view(n), stream);
}

void backward(const std::string& activation, Dtype dtype, const void* grad_out, const void* saved, Saved saved_kind,
              void* grad_in, std::int64_t n, Stream stream) {
  backward_2d(activation, dtype, grad_out, saved, saved_kind, grad_in, flat_view(n), stream);
}

void forward_2d(const std::string& activation, Dtype dtype, const void* in, void* out, const View2D& view,
                Stream stream) {
  run(api::checked_spec(activation, dtype, Direction::forward, Saved::input), {"out", out, true}, {"in", in, false},
      nullptr, view, stream);
}

void backward_2d(const std::string& activation, Dtype dtype, const void* grad_out, const void* saved, Saved saved_kind,
                 void* grad_in, const View2D& view, Stream stream) {
  const Operand s{"saved", saved, false};
  run(api::checked_spec(activation, dtype, Direction::backward, saved_kind), {"grad_in", grad_in, true},
      {"grad_out", grad_out, false}, &s, view, stream);
}

namespace {
void run_gated(const api::GatedCall& call, Stream stream) {
  api::check_gated(call, stream.backend == Backend::cuda);
  api::DeviceEngine* de = nullptr;
  void* queue = stream.handle;
  if (stream.backend == Backend::cuda) {
    const int device = api::gated_cuda_device(call);
    rt::interop::cuda_require_primary_context(device);
    de = &api::cuda_engine(device);
    if (!queue) queue = rt::interop::cuda_legacy_default_stream();
  } else {
    de = &api::opencl_engine(stream.handle);
  }
  if (call.rows == 0 || call.d == 0) return;  // checked, nothing to do
  auto kernel = de->kernel_for_launch(call.spec, call.elements(), stream.backend, queue);
  de->launch(*kernel, api::gated_kernel_args(call), stream.backend, queue);
}

void check_packed(std::int64_t ld, std::int64_t rows, std::int64_t d, const char* name) {
  if (rows > 1 && d >= 0 && ld < 2 * d)
    invalid(std::string(name) + "'s row pitch " + std::to_string(ld) + " is below 2d = " + std::to_string(2 * d) +
            " (a [rows, 2d] tensor: a is its first d columns, b the next d)");
}
}  // namespace

void gated_forward(const std::string& activation, Dtype dtype, GatedIn a, GatedIn b, GatedOut out, std::int64_t rows,
                   std::int64_t d, Stream stream, const Fp8Output& fp8) {
  run_gated(api::gated_forward_call(api::gated_spec(activation, dtype, Direction::forward, fp8.type), a, b, out, rows,
                                    d, fp8),
            stream);
}

void gated_backward(const std::string& activation, Dtype dtype, GatedIn grad_out, GatedIn a, GatedIn b, GatedOut grad_a,
                    GatedOut grad_b, std::int64_t rows, std::int64_t d, Stream stream) {
  run_gated(api::gated_backward_call(api::gated_spec(activation, dtype, Direction::backward), grad_out, a, b, grad_a,
                                     grad_b, rows, d),
            stream);
}

void gated_forward_packed(const std::string& activation, Dtype dtype, const void* x, std::int64_t ld_x, void* out,
                          std::int64_t ld_out, std::int64_t rows, std::int64_t d, Stream stream, const Fp8Output& fp8) {
  check_packed(ld_x, rows, d, "x");
  gated_forward(activation, dtype, {x, ld_x, 0}, {x, ld_x, d}, {out, ld_out, 0}, rows, d, stream, fp8);
}

void gated_backward_packed(const std::string& activation, Dtype dtype, const void* grad_out, std::int64_t ld_grad_out,
                           const void* x, std::int64_t ld_x, void* grad_x, std::int64_t ld_grad_x, std::int64_t rows,
                           std::int64_t d, Stream stream) {
  check_packed(ld_x, rows, d, "x");
  check_packed(ld_grad_x, rows, d, "grad_x");
  gated_backward(activation, dtype, {grad_out, ld_grad_out, 0}, {x, ld_x, 0}, {x, ld_x, d}, {grad_x, ld_grad_x, 0},
                 {grad_x, ld_grad_x, d}, rows, d, stream);
}

namespace {
void run_rows(const api::RowCall& call, Stream stream) {
  api::check_rows(call, stream.backend == Backend::cuda);
  api::DeviceEngine* de = nullptr;
  void* queue = stream.handle;
  if (stream.backend == Backend::cuda) {
    const int device = api::row_cuda_device(call);
    rt::interop::cuda_require_primary_context(device);
    de = &api::cuda_engine(device);
    if (!queue) queue = rt::interop::cuda_legacy_default_stream();
  } else {
    de = &api::opencl_engine(stream.handle);
  }
  if (call.rows == 0 || call.cols == 0) return;  // checked, nothing to do
  const auto rows = static_cast<std::uint64_t>(call.rows), cols = static_cast<std::uint64_t>(call.cols);
  auto kernel =
      de->row_kernel_for_launch(call.spec, rows, cols, stream.backend, queue, static_cast<std::uint64_t>(call.inner));
  de->launch(*kernel, api::row_kernel_args(call), stream.backend, queue);
}
}  // namespace

void softmax_forward(const std::string& activation, Dtype dtype, const void* x, std::int64_t ld_x, void* y,
                     std::int64_t ld_y, std::int64_t rows, std::int64_t cols, Stream stream) {
  api::RowCall c;
  c.spec = api::row_spec(activation, dtype, Direction::forward);
  c.in[0] = {x, ld_x};
  c.out = {y, ld_y};
  c.rows = rows;
  c.cols = cols;
  run_rows(c, stream);
}

void softmax_backward(const std::string& activation, Dtype dtype, const void* y, std::int64_t ld_y,
                      const void* grad_out, std::int64_t ld_grad_out, void* grad_in, std::int64_t ld_grad_in,
                      std::int64_t rows, std::int64_t cols, Stream stream) {
  api::RowCall c;
  c.spec = api::row_spec(activation, dtype, Direction::backward);
  c.in[0] = {grad_out, ld_grad_out};
  c.in[1] = {y, ld_y};
  c.out = {grad_in, ld_grad_in};
  c.rows = rows;
  c.cols = cols;
  run_rows(c, stream);
}

namespace {
std::int64_t strided_rows(std::int64_t outer, std::int64_t inner) {
  if (outer < 0 || inner < 1)
    throw Error(ErrorCode::invalid_argument, "strided rows: outer must be >= 0 and inner >= 1 (got " +
                                                 std::to_string(outer) + " and " + std::to_string(inner) + ")");
  if (outer > 0 && inner > std::numeric_limits<std::int64_t>::max() / outer)
    throw Error(ErrorCode::invalid_argument, "strided rows: outer x inner overflows");
  return outer * inner;
}
}  // namespace

void softmax_forward_strided(const std::string& activation, Dtype dtype, const void* x, std::int64_t ld_x, void* y,
                             std::int64_t ld_y, std::int64_t outer, std::int64_t cols, std::int64_t inner,
                             Stream stream) {
  api::RowCall c;
  c.spec = api::row_spec(activation, dtype, Direction::forward);
  c.in[0] = {x, ld_x};
  c.out = {y, ld_y};
  c.rows = strided_rows(outer, inner);
  c.cols = cols;
  c.inner = inner;
  run_rows(c, stream);
}

void softmax_backward_strided(const std::string& activation, Dtype dtype, const void* y, std::int64_t ld_y,
                              const void* grad_out, std::int64_t ld_grad_out, void* grad_in, std::int64_t ld_grad_in,
                              std::int64_t outer, std::int64_t cols, std::int64_t inner, Stream stream) {
  api::RowCall c;
  c.spec = api::row_spec(activation, dtype, Direction::backward);
  c.in[0] = {grad_out, ld_grad_out};
  c.in[1] = {y, ld_y};
  c.out = {grad_in, ld_grad_in};
  c.rows = strided_rows(outer, inner);
  c.cols = cols;
  c.inner = inner;
  run_rows(c, stream);
}

bool supports_saved_output(const std::string& activation) {
  return resolve_activation(activation).has_grad_from_output();
}

std::string register_activation(const std::string& name, const std::string& source) {
  return user_canonical_name(register_user_activation(name, source));
}

}  // namespace kplay
