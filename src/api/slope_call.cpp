// The public API of the per-element slope forms (kplay/kplay.hpp): prelu_forward/backward and
// rrelu_forward/backward. Operands are checked before any device work, then launched through the
// device's engine like every other kernel; prelu's weight gradient adds its two kernels
// (Layout::wgrad_parts, wgrad_sum) with the grad_input kernel's block size.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "device_registry.hpp"
#include "engine/engine.hpp"
#include "kplay/kplay.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"

namespace kplay {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

struct Buffer {
  const char* name;
  const void* ptr;
  std::uint64_t elements;
  std::uint64_t esize;
  bool written;
};

rt::DevicePtr ptr(const void* p) { return rt::DevicePtr{reinterpret_cast<std::uint64_t>(p), 0}; }

// Null pointers, the device of every CUDA pointer, and overlap: an output may be exactly an input
// (in place, same start) and nothing else of it may overlap. OpenCL cl_mem handles are separate
// objects unless equal.
api::DeviceEngine& engine_for(const std::vector<Buffer>& buffers, Stream& stream) {
  for (const Buffer& b : buffers)
    if (!b.ptr) invalid(std::string(b.name) + " is a null pointer");
  if (stream.backend == Backend::cuda) {
    for (const Buffer& o : buffers) {
      if (!o.written) continue;
      for (const Buffer& i : buffers) {
        if (&i == &o) continue;
        const auto a = reinterpret_cast<std::uintptr_t>(o.ptr), b = reinterpret_cast<std::uintptr_t>(i.ptr);
        const std::uintptr_t a_end = a + o.elements * o.esize, b_end = b + i.elements * i.esize;
        const bool exact = a == b && o.elements == i.elements && !i.written;
        if (!exact && a < b_end && b < a_end && o.elements && i.elements)
          invalid(std::string(o.name) + " overlaps " + i.name + "; only an output exactly over an input is allowed");
      }
    }
    namespace io = rt::interop;
    const int device = io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(buffers[0].ptr), buffers[0].name);
    for (const Buffer& b : buffers)
      if (io::cuda_pointer_device(reinterpret_cast<std::uint64_t>(b.ptr), b.name) != device)
        invalid(std::string(b.name) + " and " + buffers[0].name + " are on different devices");
    io::cuda_require_primary_context(device);
    if (!stream.handle) stream.handle = io::cuda_legacy_default_stream();
    return api::cuda_engine(device);
  }
  return api::opencl_engine(stream.handle);
}

void check_prelu(const PreluShape& s) {
  if (s.n < 0) invalid("n must be >= 0 (got " + std::to_string(s.n) + ")");
  if (s.channels < 1)
    invalid("prelu's weight needs at least one element (channels " + std::to_string(s.channels) + ")");
  if (s.inner < 1) invalid("inner must be >= 1 (got " + std::to_string(s.inner) + ")");
  if (s.channels > 1 && s.n % (s.channels * s.inner) != 0)
    invalid("prelu: n = " + std::to_string(s.n) + " is not a whole number of " + std::to_string(s.channels) +
            " channels of " + std::to_string(s.inner) +
            " elements (a weight has one element, or one per channel of the input's dim 1)");
}

KernelSpec slope_spec(const std::string& text, Dtype dtype, Direction direction) {
  KernelSpec spec;
  spec.activation = resolve_activation(text).canonical;
  spec.dtype = dtype;
  spec.direction = direction;
  return spec;
}

rt::KernelArgs flat(const void* out, const void* in0, const void* in1, std::uint64_t n) {
  rt::KernelArgs a = flat_args(ptr(out), ptr(in0), ptr(in1), n);
  a.slope = true;
  a.weight = a.in0;
  return a;
}

std::string rrelu_text(double lower, double upper) {
  if (!std::isfinite(lower) || !std::isfinite(upper)) invalid("rrelu's lower and upper must be finite numbers");
  char buf[96];
  std::snprintf(buf, sizeof buf, "rrelu(lower=%.17g, upper=%.17g)", lower, upper);
  return buf;
}

}  // namespace

void prelu_forward(Dtype dtype, const void* in, const void* weight, void* out, const PreluShape& shape, Stream stream) {
  check_prelu(shape);
  const std::uint64_t es = dtype_size(dtype), n = static_cast<std::uint64_t>(shape.n);
  const auto c = static_cast<std::uint64_t>(shape.channels);
  api::DeviceEngine& de =
      engine_for({{"out", out, n, es, true}, {"in", in, n, es, false}, {"weight", weight, c, es, false}}, stream);
  if (n == 0) return;
  const KernelSpec spec = slope_spec("prelu", dtype, Direction::forward);
  auto kernel = de.kernel_for_launch(spec, n, stream.backend, stream.handle);
  rt::KernelArgs a = flat(out, in, in, n);
  a.weight = ptr(weight);
  a.channels = c;
  a.inner = static_cast<std::uint64_t>(shape.inner);
  de.launch(*kernel, a, stream.backend, stream.handle);
}

std::int64_t prelu_workspace_bytes(Dtype dtype, const PreluShape& shape) {
  check_prelu(shape);
  return static_cast<std::int64_t>(
      prelu_workspace_bytes(dtype, static_cast<std::uint64_t>(shape.n), static_cast<std::uint64_t>(shape.channels)));
}

void prelu_backward(Dtype dtype, const void* grad_out, const void* in, const void* weight, void* grad_in,
                    void* grad_weight, void* workspace, const PreluShape& shape, Stream stream) {
  check_prelu(shape);
  const std::uint64_t es = dtype_size(dtype), n = static_cast<std::uint64_t>(shape.n);
  const auto c = static_cast<std::uint64_t>(shape.channels);
  std::vector<Buffer> buffers = {
      {"grad_out", grad_out, n, es, false}, {"in", in, n, es, false}, {"weight", weight, c, es, false}};
  if (grad_in) buffers.push_back({"grad_in", grad_in, n, es, true});
  if (grad_weight) {
    buffers.push_back({"grad_weight", grad_weight, c, es, true});
    buffers.push_back({"workspace", workspace, prelu_workspace_bytes(dtype, n, c), 1, true});
  }
  api::DeviceEngine& de = engine_for(buffers, stream);
  const KernelSpec spec = slope_spec("prelu", dtype, Direction::backward);
  auto kernel = de.kernel_for_launch(spec, std::max<std::uint64_t>(n, 1), stream.backend, stream.handle);
  rt::KernelArgs a = flat(grad_in, grad_out, in, n);
  a.weight = ptr(weight);
  a.channels = c;
  a.inner = static_cast<std::uint64_t>(shape.inner);
  if (grad_weight) {
    // First, so that grad_in may be written over grad_out (in place) after the sums read it.
    rt::KernelArgs w = a;
    w.parts = n ? prelu_weight_grad_parts(n, c) : 0;
    w.out = ptr(workspace);
    if (n) de.engine().launch(*de.engine().prepare(spec, kernel->config, Layout::wgrad_parts), w, stream.handle);
    // No elements: zero parts, and the sums write zeros (the launch itself needs a non-empty size).
    w.out = ptr(grad_weight);
    w.in0 = ptr(workspace);
    w.cols = std::max<std::uint64_t>(n, 1);
    de.engine().launch(*de.engine().prepare(spec, kernel->config, Layout::wgrad_sum), w, stream.handle);
  }
  if (grad_in && n) de.launch(*kernel, a, stream.backend, stream.handle);
}

void rrelu_forward(Dtype dtype, const void* in, void* out, std::int64_t n, double lower, double upper, bool training,
                   std::uint64_t seed, std::uint64_t offset, Stream stream) {
  const std::string text = rrelu_text(lower, upper);
  if (!training) return forward(text, dtype, in, out, n, stream);
  if (n < 0) invalid("n must be >= 0 (got " + std::to_string(n) + ")");
  const std::uint64_t es = dtype_size(dtype), count = static_cast<std::uint64_t>(n);
  api::DeviceEngine& de = engine_for({{"out", out, count, es, true}, {"in", in, count, es, false}}, stream);
  const KernelSpec spec = slope_spec("training(" + text + ")", dtype, Direction::forward);
  if (count == 0) return;
  auto kernel = de.kernel_for_launch(spec, count, stream.backend, stream.handle);
  rt::KernelArgs a = flat(out, in, in, count);
  a.seed = seed;
  a.counter = offset;
  de.launch(*kernel, a, stream.backend, stream.handle);
}

void rrelu_backward(Dtype dtype, const void* grad_out, const void* in, void* grad_in, std::int64_t n, double lower,
                    double upper, bool training, std::uint64_t seed, std::uint64_t offset, Stream stream) {
  const std::string text = rrelu_text(lower, upper);
  if (!training) return backward(text, dtype, grad_out, in, Saved::input, grad_in, n, stream);
  if (n < 0) invalid("n must be >= 0 (got " + std::to_string(n) + ")");
  const std::uint64_t es = dtype_size(dtype), count = static_cast<std::uint64_t>(n);
  api::DeviceEngine& de = engine_for(
      {{"grad_in", grad_in, count, es, true}, {"grad_out", grad_out, count, es, false}, {"in", in, count, es, false}},
      stream);
  const KernelSpec spec = slope_spec("training(" + text + ")", dtype, Direction::backward);
  if (count == 0) return;
  auto kernel = de.kernel_for_launch(spec, count, stream.backend, stream.handle);
  rt::KernelArgs a = flat(grad_in, grad_out, in, count);
  a.seed = seed;
  a.counter = offset;
  de.launch(*kernel, a, stream.backend, stream.handle);
}

}  // namespace kplay
