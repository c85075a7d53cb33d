// kplay::Launcher (kplay/launcher.hpp): the activation resolved and the device's engine found once;
// a launch is a size-bucket lookup in a small cache, then the backend's launch.
#include "kplay/launcher.hpp"

#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "device_registry.hpp"
#include "gated_call.hpp"
#include "row_call.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"

namespace kplay {

struct Launcher::State {
  KernelSpec spec;
  bool gated = false;  // a gated activation: launched by launch_gated_forward/backward
  bool row = false;    // a row activation: launched by launch_rows
  Backend backend = Backend::cuda;
  int device = -1;
  void* queue = nullptr;  // OpenCL only
  api::DeviceEngine* engine = nullptr;
  mutable std::mutex mutex;
  // (size bucket, kernel): a launcher sees few sizes, so a short vector beats a hash map.
  mutable std::vector<std::pair<int, std::shared_ptr<const PreparedKernel>>> kernels;
};

namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

// The checks kplay::forward() makes on CUDA pointers, for flat buffers: device memory of the
// launcher's device, the primary context, and no partial overlap of the output with an input.
void check_cuda_pointers(const Launcher::State& s, const void* in, const void* in1, const void* out, std::int64_t n) {
  const bool backward = s.spec.direction == Direction::backward;
  const std::pair<const char*, const void*> ops[] = {
      {backward ? "grad_in" : "out", out}, {backward ? "grad_out" : "in", in}, {"saved", backward ? in1 : nullptr}};
  for (const auto& [name, p] : ops)
    if (p && rt::interop::cuda_pointer_device(reinterpret_cast<std::uint64_t>(p), name) != s.device)
      invalid(std::string(name) + " is not memory of cuda:" + std::to_string(s.device) + ", the launcher's device");
  rt::interop::cuda_require_primary_context(s.device);
  const auto bytes = static_cast<std::uintptr_t>(n) * dtype_size(s.spec.dtype);
  const auto o = reinterpret_cast<std::uintptr_t>(out);
  for (std::size_t i = 1; i < 3; ++i) {
    const auto p = reinterpret_cast<std::uintptr_t>(ops[i].second);
    if (p && p != o && p < o + bytes && o < p + bytes)
      invalid(std::string(ops[0].first) + " partially overlaps " + ops[i].first +
              "; only exact in place (the same pointer) is allowed");
  }
}

// The spec of a launcher: a row activation's (backward from the saved output only), else the
// element-wise or gated one of kplay::forward.
KernelSpec launcher_spec(const std::string& activation, Dtype dtype, Direction direction, Saved saved, bool* row) {
  *row = resolve_activation(activation).is_row();
  if (!*row) return api::checked_spec(activation, dtype, direction, saved);
  KernelSpec s = api::row_spec(activation, dtype, direction);
  if (direction == Direction::backward && saved != Saved::output)
    throw Error(ErrorCode::unsupported,
                "'" + s.activation + "' computes its backward from the saved output, as torch does (Saved::output)");
  return s;
}

}  // namespace

Launcher Launcher::cuda(const std::string& activation, Dtype dtype, Direction direction, Saved saved, int device,
                        OutDtype out) {
  auto s = std::make_shared<State>();
  s->spec = launcher_spec(activation, dtype, direction, saved, &s->row);
  if (out != OutDtype::same) s->spec = api::gated_spec(activation, dtype, direction, out);
  if (device < 0) invalid("CUDA device ordinal must be >= 0 (got " + std::to_string(device) + ")");
  s->gated = resolve_activation(s->spec.activation).gated;
  s->backend = Backend::cuda;
  s->device = device;
  s->engine = &api::cuda_engine(device);
  return Launcher(std::move(s));
}

Launcher Launcher::opencl(const std::string& activation, Dtype dtype, Direction direction, Saved saved, void* queue) {
  auto s = std::make_shared<State>();
  s->spec = launcher_spec(activation, dtype, direction, saved, &s->row);
  s->gated = resolve_activation(s->spec.activation).gated;
  s->backend = Backend::opencl;
  s->queue = queue;
  s->engine = &api::opencl_engine(queue);
  return Launcher(std::move(s));
}

namespace {
// The kernel of the launcher's size bucket for n elements: its own short cache, else the device's.
std::shared_ptr<const PreparedKernel> bucket_kernel(const Launcher::State& s, std::uint64_t n, void* queue) {
  const int bucket = size_bucket(n);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const auto& [b, k] : s.kernels)
      if (b == bucket) return k;
  }
  auto kernel = s.engine->kernel_for_launch(s.spec, n, s.backend, queue);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.kernels.emplace_back(bucket, kernel);
  return kernel;
}

void launch_gated_call(const Launcher::State& s, api::GatedCall c, void* stream, PointerChecks checks) {
  if (!s.gated)
    invalid("this launcher is for '" + s.spec.activation + "'; gated launches need a launcher made for gated(ACT)");
  if (c.spec.direction != s.spec.direction)
    invalid(std::string("this launcher is for the ") + to_string(s.spec.direction) + " of '" + s.spec.activation + "'");
  c.spec = s.spec;
  const bool cuda = s.backend == Backend::cuda;
  api::check_gated(c, cuda);
  void* queue = cuda ? stream : s.queue;
  if (cuda) {
    if (checks == PointerChecks::full) {
      if (api::gated_cuda_device(c) != s.device)
        invalid("the operands are not memory of cuda:" + std::to_string(s.device) + ", the launcher's device");
      rt::interop::cuda_require_primary_context(s.device);
    }
    if (!queue) queue = rt::interop::cuda_legacy_default_stream();
  }
  if (c.rows == 0 || c.d == 0) return;
  const auto kernel = bucket_kernel(s, c.elements(), queue);
  s.engine->launch(*kernel, api::gated_kernel_args(c), s.backend, queue);
}
}  // namespace

void Launcher::launch_gated_forward(GatedIn a, GatedIn b, GatedOut out, std::int64_t rows, std::int64_t d, void* stream,
                                    PointerChecks checks, const Fp8Output& scale) const {
  KernelSpec spec;  // the direction asked for; launch_gated_call checks it and takes the launcher's spec
  spec.direction = Direction::forward;
  Fp8Output fp8 = scale;
  fp8.type = state_->spec.out;
  launch_gated_call(*state_, api::gated_forward_call(spec, a, b, out, rows, d, fp8), stream, checks);
}

void Launcher::launch_gated_backward(GatedIn grad_out, GatedIn a, GatedIn b, GatedOut grad_a, GatedOut grad_b,
                                     std::int64_t rows, std::int64_t d, void* stream, PointerChecks checks) const {
  KernelSpec spec;
  spec.direction = Direction::backward;
  launch_gated_call(*state_, api::gated_backward_call(spec, grad_out, a, b, grad_a, grad_b, rows, d), stream, checks);
}

void Launcher::launch_rows(const void* in, std::int64_t ld_in, const void* in1, std::int64_t ld_in1, void* out,
                           std::int64_t ld_out, std::int64_t rows, std::int64_t cols, void* stream,
                           PointerChecks checks) const {
  launch_strided_rows(in, ld_in, in1, ld_in1, out, ld_out, rows, cols, 1, stream, checks);
}

void Launcher::launch_strided_rows(const void* in, std::int64_t ld_in, const void* in1, std::int64_t ld_in1, void* out,
                                   std::int64_t ld_out, std::int64_t outer, std::int64_t cols, std::int64_t inner,
                                   void* stream, PointerChecks checks) const {
  const State& s = *state_;
  if (!s.row)
    invalid("this launcher is for '" + s.spec.activation + "'; launch_rows is for a launcher of a row activation (" +
            row_activation_names() + ")");
  if (outer < 0 || inner < 1)
    invalid("outer must be >= 0 and inner >= 1 (got " + std::to_string(outer) + " and " + std::to_string(inner) + ")");
  if (outer > 0 && inner > std::numeric_limits<std::int64_t>::max() / outer) invalid("outer x inner overflows");
  api::RowCall c;
  c.spec = s.spec;
  c.in[0] = {in, ld_in};
  c.in[1] = {in1, ld_in1};
  c.out = {out, ld_out};
  c.rows = outer * inner;
  c.cols = cols;
  c.inner = inner;
  const std::int64_t rows = c.rows;
  const bool cuda = s.backend == Backend::cuda;
  api::check_rows(c, cuda);
  void* queue = cuda ? stream : s.queue;
  if (cuda) {
    if (checks == PointerChecks::full) {
      if (api::row_cuda_device(c) != s.device)
        invalid("the operands are not memory of cuda:" + std::to_string(s.device) + ", the launcher's device");
      rt::interop::cuda_require_primary_context(s.device);
    }
    if (!queue) queue = rt::interop::cuda_legacy_default_stream();
  }
  if (rows == 0 || cols == 0) return;
  const auto kernel =
      s.engine->row_kernel_for_launch(s.spec, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols),
                                      s.backend, queue, static_cast<std::uint64_t>(inner));
  s.engine->launch(*kernel, api::row_kernel_args(c), s.backend, queue);
}

void Launcher::launch(const void* in, const void* in1, void* out, std::int64_t n, void* stream,
                      PointerChecks checks) const {
  const State& s = *state_;
  if (s.row) invalid("this launcher is for the row activation '" + s.spec.activation + "': launch it with launch_rows");
  if (s.gated)
    invalid("this launcher is for the gated activation '" + s.spec.activation +
            "': launch it with launch_gated_forward or launch_gated_backward");
  const bool backward = s.spec.direction == Direction::backward;
  if (n < 0) invalid("n must be >= 0 (got " + std::to_string(n) + ")");
  if (!out) invalid(std::string(backward ? "grad_in" : "out") + " is a null pointer");
  if (!in) invalid(std::string(backward ? "grad_out" : "in") + " is a null pointer");
  if (backward && !in1) invalid("saved is a null pointer");
  if (!backward) in1 = in;
  void* queue = s.backend == Backend::opencl ? s.queue : stream;
  if (s.backend == Backend::cuda) {
    if (checks == PointerChecks::full) check_cuda_pointers(s, in, backward ? in1 : nullptr, out, n);
    if (!queue) queue = rt::interop::cuda_legacy_default_stream();
  }
  if (n == 0) return;

  const auto un = static_cast<std::uint64_t>(n);
  const auto kernel = bucket_kernel(s, un, queue);
  auto ptr = [](const void* p) { return rt::DevicePtr{reinterpret_cast<std::uint64_t>(p), 0}; };
  rt::KernelArgs a;
  a.out = ptr(out);
  a.in0 = ptr(in);
  a.in1 = ptr(in1);
  a.rows = 1;
  a.cols = un;
  a.ld_out = a.ld_in0 = a.ld_in1 = un;
  s.engine->launch(*kernel, a, s.backend, queue);
}

const KernelSpec& Launcher::spec() const { return state_->spec; }
Backend Launcher::backend() const { return state_->backend; }
int Launcher::device() const { return state_->device; }

}  // namespace kplay
