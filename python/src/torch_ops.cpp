// kplay._torch_ops: kplay's activations as PyTorch operators registered in C++ (TORCH_LIBRARY), so
// that eager calls and torch.ops.kplay.* cost a dispatcher call and a launch, with no Python on the
// way: the kernels for CUDA and Meta (shapes for fake tensors and torch.compile), and the autograd
// formula for the Autograd key. The CPU kernels, torch's own computation of each activation, are
// registered in Python (kplay/_torch_cpu.py). Compiled graphs call forward_out and
// backward_out, the launch alone (kplay/_torch_inductor.py).
//
//   kplay::forward(Tensor x, str activation) -> Tensor
//   kplay::forward_(Tensor(a!) x, str activation) -> ()
//   kplay::backward(Tensor grad, Tensor saved, str activation, bool saved_output) -> Tensor
//   kplay::gated_forward / gated_backward: the gated form, out = act(a) * b (its block below)
//   kplay::prelu, prelu_backward, rrelu_train, rrelu_train_backward (their block below)
//   kplay::softmax, softmax_backward: the softmax family (their block below)
//
// Built against the torch it runs with (C++ ABI): pip install --no-build-isolation . in an
// environment with torch; python/CMakeLists.txt records the version and kplay.torch refuses the
// module on a mismatch. It needs libc10 and libtorch_cpu but no CUDA headers or libc10_cuda, so it
// builds against a CPU or a CUDA torch alike: the current CUDA stream comes through c10's
// DeviceGuardImplInterface (getStream + getStreamNativeHandle, implemented by libc10_cuda at run
// time), and kernels launch through kplay._core's prepared launchers (torch_bridge.h), the one
// kplay runtime of the process. kplay errors reach Python as kplay's exceptions (python_error).
//
// The layout and saved-tensor policies are kplay.torch's (python/kplay/torch.py, module notes).
#include <ATen/ATen.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/headeronly/version.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kplay/kplay.h"
#include "torch_bridge.h"

namespace {

const KplayTorchBridge* bridge = nullptr;  // set by PyInit__torch_ops before any call
// kplay's exception classes, by kplay::ErrorCode (kplay._core), owned references.
PyObject* error_base = nullptr;
PyObject* error_argument = nullptr;
PyObject* error_no_device = nullptr;
PyObject* error_unsupported = nullptr;
PyObject* error_compile = nullptr;

PyObject* exception_for(int code) {
  switch (code) {
    case 1:  // invalid_argument
    case 2: return error_argument;
    case 3: return error_no_device;
    case 4: return error_compile;
    case 6: return error_unsupported;
    default: return error_base;
  }
}

// Raises kplay's exception: the Python error is set and carried by torch's python_error, which
// the Python bindings of the dispatcher and the autograd engine restore as it is.
[[noreturn]] void fail(int code, const char* message) {
  python_error error;
  {
    pybind11::gil_scoped_acquire gil;
    PyErr_SetString(exception_for(code), message);
    error.persist();
  }
  throw error;
}

[[noreturn]] void invalid(const std::string& message) { fail(1, message.c_str()); }

// `message` by reference: in check(bridge->f(..., &message), message) the call may be evaluated
// after the second argument, so a copy could still be the nullptr the call overwrites.
void check(int code, const char* const& message) {
  if (code != 0) fail(code, message != nullptr ? message : "kplay failed without a message");
}

// kplay's dtype code and its slot in the launcher tables, or -1 where kplay has no such dtype.
int dtype_slot(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 0;
    case at::kHalf: return 1;
    case at::kBFloat16: return 2;
    case at::kDouble: return 3;
    default: return -1;
  }
}
constexpr std::array<int, 4> dtype_codes = {KPLAY_F32, KPLAY_F16, KPLAY_BF16, KPLAY_F64};

int checked_slot(const at::Tensor& t, const char* what) {
  const int slot = dtype_slot(t.scalar_type());
  if (slot < 0)
    invalid(std::string("kplay.torch takes float32, float16, bfloat16 or float64 tensors; ") + what + " is " +
            std::string(c10::toString(t.scalar_type())));
  return slot;
}

void check_cuda(const at::Tensor& t, const char* what) {
  if (!t.is_cuda())
    invalid(std::string("kplay.torch needs CUDA tensors; ") + what + " is on '" + t.device().str() + "'");
}

// ---- launchers, cached per activation string, dtype, direction and device -----------------

enum Kind { forward_kind = 0, backward_from_input = 1, backward_from_output = 2 };
constexpr std::size_t max_devices = 64;

struct Activation {
  explicit Activation(std::string n) : name(std::move(n)) {}
  std::string name;
  std::atomic<int> saves_output{-1};  // -1 until asked
  std::array<std::atomic<void*>, std::size_t{4} * 3 * max_devices> launchers{};
};

std::mutex cache_mutex;
// Keyed by views of the entries' own names; entries live as long as the process (as the
// launchers, which _core owns and nothing frees at exit).
std::unordered_map<std::string_view, Activation*>& cache() {
  static auto* map = new std::unordered_map<std::string_view, Activation*>();
  return *map;
}

Activation& activation_entry(c10::string_view name) {
  const std::string_view key(name.data(), name.size());
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto& map = cache();
  auto it = map.find(key);
  if (it != map.end()) return *it->second;
  auto* a = new Activation(std::string(key));
  map.emplace(std::string_view(a->name), a);
  return *a;
}

bool saves_output(Activation& a) {
  int r = a.saves_output.load(std::memory_order_acquire);
  if (r < 0) {
    const char* message = nullptr;
    check(bridge->saves_output(a.name.c_str(), &r, &message), message);
    a.saves_output.store(r, std::memory_order_release);
  }
  return r != 0;
}

const void* launcher(Activation& a, int slot, Kind kind, c10::DeviceIndex device) {
  if (device < 0 || static_cast<std::size_t>(device) >= max_devices)
    invalid("kplay.torch supports CUDA devices 0 to 63");
  auto& cell = a.launchers[(static_cast<std::size_t>(device) * 3 + kind) * 4 + static_cast<std::size_t>(slot)];
  void* l = cell.load(std::memory_order_acquire);
  if (l == nullptr) {
    const char* message = nullptr;
    check(bridge->launcher_cuda(a.name.c_str(), dtype_codes[static_cast<std::size_t>(slot)], kind != forward_kind,
                                kind == backward_from_output, device, &l, &message),
          message);
    void* expected = nullptr;
    if (!cell.compare_exchange_strong(expected, l)) l = expected;  // another thread made one first
  }
  return l;
}

void* current_stream(c10::DeviceIndex device) {
  static const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return cuda->getStreamNativeHandle(cuda->getStream(c10::Device(c10::DeviceType::CUDA, device)));
}

void launch(const void* l, const void* in, const void* in1, void* out, std::int64_t n, void* stream) {
  const char* message = nullptr;
  check(bridge->launch(l, in, in1, out, n, stream, &message), message);
}

// ---- layouts (kplay/_layout.py) -----------------------------------------------------------

// The row pitch when t is rows x cols with unit column stride and its leading dimensions fold
// into rows with one pitch; nullopt otherwise.
std::optional<std::int64_t> row_pitch(const at::Tensor& t) {
  c10::SmallVector<std::pair<std::int64_t, std::int64_t>, 6> dims;  // (size, stride), size != 1
  for (std::int64_t i = 0; i < t.dim(); ++i)
    if (t.size(i) != 1) dims.emplace_back(t.size(i), t.stride(i));
  if (dims.empty()) return 1;
  const auto [cols, inner] = dims.back();
  if (inner != 1) return std::nullopt;
  if (dims.size() == 1) return cols;
  const std::int64_t pitch = dims[dims.size() - 2].second;
  if (pitch < cols) return std::nullopt;
  for (std::size_t i = 0; i + 2 < dims.size(); ++i)
    if (dims[i].second != dims[i + 1].second * dims[i + 1].first) return std::nullopt;
  return pitch;
}

std::int64_t innermost_size(const at::Tensor& t) {
  for (std::int64_t i = t.dim() - 1; i >= 0; --i)
    if (t.size(i) != 1) return t.size(i);
  return 1;
}

// f(x) into out (dense, from empty_like), or in place when out is x.
void forward_into(Activation& a, int slot, const at::Tensor& x, const at::Tensor& out) {
  const std::int64_t n = x.numel();
  if (n == 0) return;
  const c10::DeviceIndex device = x.device().index();
  void* stream = current_stream(device);
  if (x.is_non_overlapping_and_dense() && (out.is_same(x) || out.strides() == x.strides())) {
    launch(launcher(a, slot, forward_kind, device), x.const_data_ptr(), nullptr, out.data_ptr(), n, stream);
    return;
  }
  const auto ld_in = row_pitch(x);
  const auto ld_out = out.is_same(x) ? ld_in : row_pitch(out);
  if (ld_in && ld_out) {
    const std::int64_t cols = innermost_size(x);
    const char* message = nullptr;
    check(bridge->forward_2d(a.name.c_str(), dtype_codes[static_cast<std::size_t>(slot)], x.const_data_ptr(), *ld_in,
                             out.data_ptr(), *ld_out, n / cols, cols, stream, &message),
          message);
    return;
  }
  // Broadcast or gapped: a dense copy, run in place, written back where out is x.
  at::Tensor dense = out.is_same(x) ? x.contiguous() : out.copy_(x);
  launch(launcher(a, slot, forward_kind, device), dense.const_data_ptr(), nullptr, dense.data_ptr(), n, stream);
  if (out.is_same(x)) x.copy_(dense);
}

// ---- CUDA kernels ---------------------------------------------------------------------------

at::Tensor forward_cuda(const at::Tensor& x, c10::string_view activation) {
  const int slot = checked_slot(x, "x");
  Activation& a = activation_entry(activation);
  at::Tensor out = at::empty_like(x);  // x's strides where x is dense, else dense
  forward_into(a, slot, x, out);
  return out;
}

void forward_inplace_cuda(const at::Tensor& x, c10::string_view activation) {
  const int slot = checked_slot(x, "x");
  forward_into(activation_entry(activation), slot, x, x);
}

// `src` with `like`'s (dense) strides: itself where they match.
at::Tensor dense_like(const at::Tensor& src, const at::Tensor& like) {
  if (src.strides() == like.strides() && src.is_non_overlapping_and_dense()) return src;
  return at::empty_like(like).copy_(src);
}

void check_backward_operands(const at::Tensor& grad, const at::Tensor& saved) {
  check_cuda(saved, "saved");
  check_cuda(grad, "grad");
  checked_slot(grad, "grad");
  if (grad.scalar_type() != saved.scalar_type() || grad.sizes() != saved.sizes())
    invalid("grad (" + std::string(c10::toString(grad.scalar_type())) + ", " + c10::str(grad.sizes()) +
            ") and saved (" + std::string(c10::toString(saved.scalar_type())) + ", " + c10::str(saved.sizes()) +
            ") must match");
  if (grad.device() != saved.device())
    invalid("grad is on " + grad.device().str() + " but saved on " + saved.device().str());
}

// grad f'(saved) into out (dense, of saved's shape); grad and saved are read where they have out's
// strides, else from dense copies.
void backward_into(Activation& a, int slot, const at::Tensor& grad, const at::Tensor& saved, bool saved_output,
                   const at::Tensor& out) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const at::Tensor g = dense_like(grad, out);
  const at::Tensor s = dense_like(saved, out);
  const c10::DeviceIndex device = out.device().index();
  launch(launcher(a, slot, saved_output ? backward_from_output : backward_from_input, device), g.const_data_ptr(),
         s.const_data_ptr(), out.data_ptr(), n, current_stream(device));
}

at::Tensor backward_cuda(const at::Tensor& grad, const at::Tensor& saved, c10::string_view activation,
                         bool saved_output) {
  const int slot = checked_slot(saved, "saved");
  check_backward_operands(grad, saved);
  at::Tensor out = at::empty_like(saved);
  backward_into(activation_entry(activation), slot, grad, saved, saved_output, out);
  return out;
}

// The out= forms that Inductor's generated code calls (kplay/_torch_inductor.py): out is a dense
// tensor of the result's shape and dtype on the operands' device, which Inductor allocated.
void check_out(const at::Tensor& out, const at::Tensor& like) {
  if (out.scalar_type() != like.scalar_type() || out.sizes() != like.sizes() || out.device() != like.device() ||
      !out.is_non_overlapping_and_dense())
    invalid("out (" + std::string(c10::toString(out.scalar_type())) + ", " + c10::str(out.sizes()) + ", " +
            out.device().str() + ") must be a dense tensor of the result's dtype, shape and device (" +
            std::string(c10::toString(like.scalar_type())) + ", " + c10::str(like.sizes()) + ", " +
            like.device().str() + ")");
}

void forward_out_cuda(const at::Tensor& x, c10::string_view activation, const at::Tensor& out) {
  check_cuda(x, "x");
  const int slot = checked_slot(x, "x");
  check_out(out, x);
  forward_into(activation_entry(activation), slot, x, out);
}

void backward_out_cuda(const at::Tensor& grad, const at::Tensor& saved, c10::string_view activation, bool saved_output,
                       const at::Tensor& out) {
  const int slot = checked_slot(saved, "saved");
  check_backward_operands(grad, saved);
  check_out(out, saved);
  backward_into(activation_entry(activation), slot, grad, saved, saved_output, out);
}

// ---- Meta (fake tensors, torch.compile) ----------------------------------------------------

at::Tensor forward_meta(const at::Tensor& x, c10::string_view) {
  checked_slot(x, "x");
  return at::empty_like(x);
}

void forward_inplace_meta(const at::Tensor& x, c10::string_view) { checked_slot(x, "x"); }

at::Tensor backward_meta(const at::Tensor& grad, const at::Tensor& saved, c10::string_view, bool) {
  checked_slot(saved, "saved");
  checked_slot(grad, "grad");
  return at::empty_like(saved);
}

// ---- autograd ---------------------------------------------------------------------------------

using ForwardFn = at::Tensor(const at::Tensor&, c10::string_view);
using ForwardInplaceFn = void(const at::Tensor&, c10::string_view);
using BackwardFn = at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view, bool);

const c10::TypedOperatorHandle<ForwardFn>& forward_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("kplay::forward", "").typed<ForwardFn>();
  return op;
}
const c10::TypedOperatorHandle<ForwardInplaceFn>& forward_inplace_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("kplay::forward_", "").typed<ForwardInplaceFn>();
  return op;
}
const c10::TypedOperatorHandle<BackwardFn>& backward_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("kplay::backward", "").typed<BackwardFn>();
  return op;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The entry rides in saved_data as an integer: entries live as long as the process.
Activation& saved_entry(AutogradContext* ctx) {
  return *reinterpret_cast<Activation*>(ctx->saved_data["entry"].toInt());  // NOLINT(performance-no-int-to-ptr)
}

variable_list backward_of(AutogradContext* ctx, const variable_list& grads, bool saved_output) {
  Activation& a = saved_entry(ctx);
  const at::Tensor saved = ctx->get_saved_variables()[0];
  // kplay::backward has no derivative (autogradNotImplementedFallback): a double backward raises.
  return {backward_op().call(grads[0], saved, a.name, saved_output), at::Tensor()};
}

// y = f(x), saving y or x as saves_output says. Up to torch 2.11 (shared_ptr nodes) this is the
// node torch's generated code makes for its own activations (SeluBackward0 and the like): a
// torch::autograd::Function's context map, output wrapping and bookkeeping cost about 1 us more
// per call with grad (examples/overhead.py). torch 2.15 holds nodes in intrusive_ptrs, and there
// the Function serves, as it does for the in-place form below.
struct ActivationFunction : public torch::autograd::Function<ActivationFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, Activation* a) {
    at::Tensor y;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      y = forward_op().call(x, a->name);
    }
    const bool keep_output = saves_output(*a);
    ctx->saved_data["entry"] = reinterpret_cast<std::int64_t>(a);
    ctx->saved_data["output"] = keep_output;
    ctx->save_for_backward({keep_output ? y : x});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    return backward_of(ctx, grads, ctx->saved_data["output"].toBool());
  }
};

#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR <= 11
struct ActivationBackward : public torch::autograd::Node {
  Activation* entry = nullptr;
  bool saved_output = false;
  torch::autograd::SavedVariable saved;

  variable_list apply(variable_list&& grads) override {
    const at::Tensor s = saved.unpack(shared_from_this());
    at::Tensor grad;
    // kplay::backward has no derivative (autogradNotImplementedFallback): a double backward raises.
    if (should_compute_output(0) && grads[0].defined())
      grad = backward_op().call(grads[0], s, entry->name, saved_output);
    return {grad};
  }
  std::string name() const override { return "KplayActivationBackward"; }
  void release_variables() override { saved.reset_data(); }
};

at::Tensor activation_with_grad(const at::Tensor& x, Activation& a) {
  at::Tensor y;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    y = forward_op().call(x, a.name);
  }
  const std::shared_ptr<ActivationBackward> node(new ActivationBackward(), torch::autograd::deleteNode);
  node->entry = &a;
  node->saved_output = saves_output(a);
  node->set_next_edges(torch::autograd::collect_next_edges(x));
  if (!node->saved_output) node->saved = torch::autograd::SavedVariable(x, false);
  torch::autograd::set_history(y, node);
  if (node->saved_output) node->saved = torch::autograd::SavedVariable(y, true);  // after its history
  return y;
}
#else
at::Tensor activation_with_grad(const at::Tensor& x, Activation& a) { return ActivationFunction::apply(x, &a); }
#endif

// x = f(x) in place, as torch's in-place activations do under autograd: backward reads either x
// itself (now the output, where saves_output says so, as torch's relu_) or a copy of x taken
// first. The copy plus one in-place pass moves the tensor twice; computing out of place and
// copying the result back, three times.
struct InplaceFunction : public torch::autograd::Function<InplaceFunction> {
  static at::Tensor forward(AutogradContext* ctx, at::Tensor x, Activation* a, bool keep_output) {
    const at::Tensor original = keep_output ? at::Tensor() : x.clone();
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      forward_inplace_op().call(x, a->name);
    }
    x.unsafeGetTensorImpl()->bump_version();
    ctx->mark_dirty({x});
    ctx->saved_data["entry"] = reinterpret_cast<std::int64_t>(a);
    ctx->saved_data["output"] = keep_output;
    ctx->save_for_backward({keep_output ? x : original});
    return x;
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    variable_list g = backward_of(ctx, grads, ctx->saved_data["output"].toBool());
    g.emplace_back();  // keep_output
    return g;
  }
};

bool needs_grad(const at::Tensor& x) { return at::GradMode::is_enabled() && x.requires_grad(); }

at::Tensor forward_autograd(const at::Tensor& x, c10::string_view activation) {
  if (!needs_grad(x)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return forward_op().call(x, activation);
  }
  return activation_with_grad(x, activation_entry(activation));
}

void forward_inplace_autograd(const at::Tensor& x, c10::string_view activation) {
  if (!needs_grad(x)) {
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      forward_inplace_op().call(x, activation);
    }
    if (!x.is_inference()) x.unsafeGetTensorImpl()->bump_version();  // as torch's in-place ops do
    return;
  }
  Activation& a = activation_entry(activation);
  const bool keep_output = saves_output(a);
  // A leaf or a view goes out of place: copy_ refuses a leaf before anything is written, and
  // handles views. Where the input is saved, the copy back would overwrite it: clone it.
  if (!x.is_leaf() && !x.is_view()) {
    InplaceFunction::apply(x, &a, keep_output);
    return;
  }
  const at::Tensor y = activation_with_grad(keep_output ? x : x.clone(), a);
  x.copy_(y);
}

}  // namespace

TORCH_LIBRARY(kplay, m) {
  m.def("forward(Tensor x, str activation) -> Tensor");
  m.def("forward_(Tensor(a!) x, str activation) -> ()");
  m.def("backward(Tensor grad, Tensor saved, str activation, bool saved_output) -> Tensor");
}

TORCH_LIBRARY_IMPL(kplay, CUDA, m) {
  m.impl("forward", &forward_cuda);
  m.impl("forward_", &forward_inplace_cuda);
  m.impl("backward", &backward_cuda);
}

TORCH_LIBRARY_IMPL(kplay, Meta, m) {
  m.impl("forward", &forward_meta);
  m.impl("forward_", &forward_inplace_meta);
  m.impl("backward", &backward_meta);
}

TORCH_LIBRARY_IMPL(kplay, Autograd, m) {
  m.impl("forward", &forward_autograd);
  m.impl("forward_", &forward_inplace_autograd);
  m.impl("backward", torch::autograd::autogradNotImplementedFallback());
}

// ---- gated activations: out = act(a) * b -------------------------------------------------------
//
//   kplay::gated_forward(Tensor x, Tensor? b, str activation, ScalarType? out_dtype=None,
//                        float scale=1.) -> Tensor
//   kplay::gated_backward(Tensor grad, Tensor x, Tensor? b, str activation) -> Tensor[]
//
// b None: x is [..., 2d], a its first half along the last dimension and b its second (vLLM's
// layout); the output is [..., d] and backward's one gradient is x's shape, its halves written by
// one kernel. b given: x is a, both [..., d] of one shape (Hugging Face's gate_proj and up_proj
// outputs); backward returns grad_a and grad_b. Every operand is rows of its last dimension with
// its own row pitch, so a column slice of a wider tensor is read where it is; a layout whose
// leading dimensions do not fold into one pitch is copied first. FP8 output (out_dtype
// float8_e4m3fn or float8_e5m2, out = fp8(act(a) * b / scale)) is forward only: with grad it is
// refused, and kplay refuses it on GPUs before sm_89 (kplay.UnsupportedError). Autograd saves a
// and b (x, or x and b) and its backward is one fused kernel; gated_backward has no derivative.
namespace {

enum GatedKind { gated_same = 0, gated_e4m3 = 1, gated_e5m2 = 2, gated_backward_kind = 3 };

struct Gated {
  explicit Gated(std::string n) : name(std::move(n)) {}
  std::string name;
  std::array<std::atomic<void*>, std::size_t{4} * 4 * max_devices> launchers{};
};

std::mutex gated_mutex;
std::unordered_map<std::string_view, Gated*>& gated_cache() {
  static auto* map = new std::unordered_map<std::string_view, Gated*>();
  return *map;
}

Gated& gated_entry(c10::string_view name) {
  const std::string_view key(name.data(), name.size());
  std::lock_guard<std::mutex> lock(gated_mutex);
  auto& map = gated_cache();
  auto it = map.find(key);
  if (it != map.end()) return *it->second;
  auto* g = new Gated(std::string(key));
  map.emplace(std::string_view(g->name), g);
  return *g;
}

const void* gated_launcher(Gated& g, int slot, GatedKind kind, c10::DeviceIndex device) {
  if (device < 0 || static_cast<std::size_t>(device) >= max_devices)
    invalid("kplay.torch supports CUDA devices 0 to 63");
  auto& cell = g.launchers[(static_cast<std::size_t>(device) * 4 + kind) * 4 + static_cast<std::size_t>(slot)];
  void* l = cell.load(std::memory_order_acquire);
  if (l == nullptr) {
    static constexpr std::array<int, 4> out_codes = {0, KPLAY_FP8_E4M3, KPLAY_FP8_E5M2, 0};
    const char* message = nullptr;
    check(bridge->gated_launcher_cuda(g.name.c_str(), dtype_codes[static_cast<std::size_t>(slot)],
                                      kind == gated_backward_kind ? 1 : 0, out_codes[static_cast<std::size_t>(kind)],
                                      device, &l, &message),
          message);
    void* expected = nullptr;
    if (!cell.compare_exchange_strong(expected, l)) l = expected;
  }
  return l;
}

// Sizes as symbols where torch.compile traces with dynamic shapes: the Meta kernels then add guards
// (an even last dimension, equal shapes) instead of specializing on the sizes.
std::string shape_text(const at::Tensor& t) { return c10::str(t.sym_sizes()); }

// The row pitch of t taken as rows of its last dimension (unit stride along it, the leading
// dimensions folding into rows of one pitch, at least the last dimension); nullopt otherwise.
std::optional<std::int64_t> rows_pitch(const at::Tensor& t) {
  const std::int64_t d = t.size(-1);
  if (t.numel() == 0) return d;
  if (d != 1 && t.stride(-1) != 1) return std::nullopt;
  c10::SmallVector<std::pair<std::int64_t, std::int64_t>, 6> lead;  // (size, stride), size != 1
  for (std::int64_t i = 0; i + 1 < t.dim(); ++i)
    if (t.size(i) != 1) lead.emplace_back(t.size(i), t.stride(i));
  if (lead.empty()) return d;
  for (std::size_t i = 0; i + 1 < lead.size(); ++i)
    if (lead[i].second != lead[i + 1].second * lead[i + 1].first) return std::nullopt;
  const std::int64_t pitch = lead.back().second;
  if (pitch < d) return std::nullopt;
  return pitch;
}

// An operand as kplay reads it: t itself where its rows fold into one pitch, else a dense copy.
struct Rows {
  at::Tensor t;
  std::int64_t pitch;
};
Rows as_rows(const at::Tensor& t) {
  if (const auto p = rows_pitch(t)) return {t, *p};
  at::Tensor c = t.contiguous();
  return {c, c.size(-1)};
}

const void* advanced(const at::Tensor& t, std::int64_t elements) {
  return static_cast<const char*>(t.const_data_ptr()) + elements * static_cast<std::int64_t>(t.element_size());
}
void* advanced_mut(const at::Tensor& t, std::int64_t elements) {
  return static_cast<char*>(t.data_ptr()) + elements * static_cast<std::int64_t>(t.element_size());
}

// The checks every kernel of the gated ops makes (Meta too), and d: dtypes, shapes, an even last
// dimension for the [..., 2d] form.
c10::SymInt gated_d(const at::Tensor& x, const std::optional<at::Tensor>& b) {
  checked_slot(x, b ? "a" : "x");
  if (x.dim() == 0) invalid("a gated activation takes [..., 2d] or [..., d] tensors; x has no dimensions");
  if (!b) {
    const c10::SymInt last = x.sym_size(-1);
    if (last % 2 != 0)
      invalid("x's last dimension must be even ([..., 2d]: a is its first half, b its second), got " + c10::str(last));
    return last / 2;
  }
  if (b->scalar_type() != x.scalar_type())
    invalid(std::string("a is ") + c10::toString(x.scalar_type()) + " but b is " + c10::toString(b->scalar_type()) +
            "; kplay does not convert");
  if (b->sym_sizes() != x.sym_sizes()) invalid("a has shape " + shape_text(x) + " but b has shape " + shape_text(*b));
  if (b->device() != x.device()) invalid("a is on " + x.device().str() + " but b on " + b->device().str());
  return x.sym_size(-1);
}

c10::SymDimVector gated_out_sizes(const at::Tensor& x, const c10::SymInt& d) {
  c10::SymDimVector sizes(x.sym_sizes().begin(), x.sym_sizes().end());
  sizes.back() = d;
  return sizes;
}

// torch's Python name of a dtype, as users write out_dtype.
std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat8_e4m3fn: return "torch.float8_e4m3fn";
    case at::kFloat8_e5m2: return "torch.float8_e5m2";
    case at::kFloat: return "torch.float32";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kDouble: return "torch.float64";
    default: return c10::toString(t);
  }
}

// The output dtype and its launcher kind; FP8 needs a scale above 0, and a scale needs FP8.
std::pair<at::ScalarType, GatedKind> gated_output(const at::Tensor& x, std::optional<at::ScalarType> out_dtype,
                                                  double scale) {
  const at::ScalarType in = x.scalar_type();
  if (!out_dtype || *out_dtype == in) {
    if (scale != 1.0)
      invalid("scale is for FP8 output (out_dtype torch.float8_e4m3fn or torch.float8_e5m2); got scale " +
              std::to_string(scale) + " without it");
    return {in, gated_same};
  }
  if (*out_dtype != at::kFloat8_e4m3fn && *out_dtype != at::kFloat8_e5m2)
    invalid("out_dtype must be None, the input's dtype, torch.float8_e4m3fn or torch.float8_e5m2; got " +
            dtype_name(*out_dtype));
  if (!(scale > 0 && scale <= 3.4e38))
    invalid("the FP8 scale must be a finite number above 0 (got " + std::to_string(scale) + ")");
  return {*out_dtype, *out_dtype == at::kFloat8_e4m3fn ? gated_e4m3 : gated_e5m2};
}

at::Tensor gated_forward_cuda(const at::Tensor& x, const std::optional<at::Tensor>& b, c10::string_view activation,
                              std::optional<at::ScalarType> out_dtype, double scale) {
  check_cuda(x, b ? "a" : "x");
  if (b) check_cuda(*b, "b");
  const std::int64_t d = gated_d(x, b).expect_int();
  const auto [dtype, kind] = gated_output(x, out_dtype, scale);
  at::Tensor out = at::empty_symint(gated_out_sizes(x, d), x.options().dtype(dtype));
  if (out.numel() == 0) return out;
  const int slot = dtype_slot(x.scalar_type());
  const c10::DeviceIndex device = x.device().index();
  const Rows xa = as_rows(x);
  const Rows xb = b ? as_rows(*b) : Rows{xa.t, xa.pitch};
  const void* pb = b ? xb.t.const_data_ptr() : advanced(xa.t, d);
  const char* message = nullptr;
  check(bridge->launch_gated_forward(gated_launcher(gated_entry(activation), slot, kind, device), xa.t.const_data_ptr(),
                                     xa.pitch, pb, xb.pitch, out.data_ptr(), d, out.numel() / d, d,
                                     static_cast<float>(scale), current_stream(device), &message),
        message);
  return out;
}

void check_gated_grad(const at::Tensor& grad, const at::Tensor& x, const c10::SymInt& d) {
  check_cuda(grad, "grad");
  if (grad.scalar_type() != x.scalar_type())
    invalid(std::string("grad is ") + c10::toString(grad.scalar_type()) + " but the inputs are " +
            c10::toString(x.scalar_type()));
  const auto want = gated_out_sizes(x, d);
  if (grad.sym_sizes() != c10::SymIntArrayRef(want))
    invalid("grad has shape " + shape_text(grad) + "; expected " + c10::str(c10::SymIntArrayRef(want)));
  if (grad.device() != x.device())
    invalid("grad is on " + grad.device().str() + " but the inputs on " + x.device().str());
}

std::vector<at::Tensor> gated_backward_cuda(const at::Tensor& grad, const at::Tensor& x,
                                            const std::optional<at::Tensor>& b, c10::string_view activation) {
  check_cuda(x, b ? "a" : "x");
  if (b) check_cuda(*b, "b");
  const std::int64_t d = gated_d(x, b).expect_int();
  check_gated_grad(grad, x, d);
  // Packed: one gradient of x's shape, grad_a its first half and grad_b its second.
  std::vector<at::Tensor> out =
      b ? std::vector<at::Tensor>{at::empty(x.sizes(), x.options()), at::empty(x.sizes(), x.options())}
        : std::vector<at::Tensor>{at::empty(x.sizes(), x.options())};
  if (grad.numel() == 0) return out;
  const int slot = dtype_slot(x.scalar_type());
  const c10::DeviceIndex device = x.device().index();
  const Rows g = as_rows(grad);
  const Rows xa = as_rows(x);
  const Rows xb = b ? as_rows(*b) : Rows{xa.t, xa.pitch};
  const void* pb = b ? xb.t.const_data_ptr() : advanced(xa.t, d);
  const std::int64_t ld_out = b ? d : 2 * d;
  void* grad_b = b ? out[1].data_ptr() : advanced_mut(out[0], d);
  const char* message = nullptr;
  check(bridge->launch_gated_backward(gated_launcher(gated_entry(activation), slot, gated_backward_kind, device),
                                      g.t.const_data_ptr(), g.pitch, xa.t.const_data_ptr(), xa.pitch, pb, xb.pitch,
                                      out[0].data_ptr(), ld_out, grad_b, ld_out, grad.numel() / d, d,
                                      current_stream(device), &message),
        message);
  return out;
}

at::Tensor gated_forward_meta(const at::Tensor& x, const std::optional<at::Tensor>& b, c10::string_view,
                              std::optional<at::ScalarType> out_dtype, double scale) {
  return at::empty_symint(gated_out_sizes(x, gated_d(x, b)),
                          x.options().dtype(gated_output(x, out_dtype, scale).first));
}

std::vector<at::Tensor> gated_backward_meta(const at::Tensor& grad, const at::Tensor& x,
                                            const std::optional<at::Tensor>& b, c10::string_view) {
  checked_slot(grad, "grad");
  const auto want = gated_out_sizes(x, gated_d(x, b));
  if (grad.sym_sizes() != c10::SymIntArrayRef(want))
    invalid("grad has shape " + shape_text(grad) + "; expected " + c10::str(c10::SymIntArrayRef(want)));
  if (b) return {at::empty_symint(x.sym_sizes(), x.options()), at::empty_symint(x.sym_sizes(), x.options())};
  return {at::empty_symint(x.sym_sizes(), x.options())};
}

using GatedForwardFn = at::Tensor(const at::Tensor&, const std::optional<at::Tensor>&, c10::string_view,
                                  std::optional<at::ScalarType>, double);
using GatedBackwardFn = std::vector<at::Tensor>(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                                c10::string_view);

const c10::TypedOperatorHandle<GatedForwardFn>& gated_forward_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("kplay::gated_forward", "").typed<GatedForwardFn>();
  return op;
}
const c10::TypedOperatorHandle<GatedBackwardFn>& gated_backward_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("kplay::gated_backward", "").typed<GatedBackwardFn>();
  return op;
}

// out = act(a) * b, saving a and b (x, or x and b): the backward needs both.
struct GatedFunction : public torch::autograd::Function<GatedFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const std::optional<at::Tensor>& b, Gated* g) {
    at::Tensor y;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      y = gated_forward_op().call(x, b, g->name, std::nullopt, 1.0);
    }
    ctx->saved_data["entry"] = reinterpret_cast<std::int64_t>(g);
    ctx->save_for_backward({x, b ? *b : at::Tensor()});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const Gated& g = *reinterpret_cast<Gated*>(ctx->saved_data["entry"].toInt());  // NOLINT(performance-no-int-to-ptr)
    const variable_list saved = ctx->get_saved_variables();
    const bool two = saved[1].defined();
    const std::vector<at::Tensor> r =
        gated_backward_op().call(grads[0], saved[0], two ? std::optional<at::Tensor>(saved[1]) : std::nullopt, g.name);
    return {r[0], two ? r[1] : at::Tensor(), at::Tensor()};
  }
};

at::Tensor gated_forward_autograd(const at::Tensor& x, const std::optional<at::Tensor>& b, c10::string_view activation,
                                  std::optional<at::ScalarType> out_dtype, double scale) {
  const bool grad = at::GradMode::is_enabled() && (x.requires_grad() || (b && b->requires_grad()));
  if (!grad) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return gated_forward_op().call(x, b, activation, out_dtype, scale);
  }
  if (out_dtype && *out_dtype != x.scalar_type())
    invalid("FP8 output (out_dtype " + dtype_name(*out_dtype) +
            ") has no backward: call it under torch.no_grad() or torch.inference_mode(), or on inputs that do not "
            "require grad");
  if (scale != 1.0) gated_output(x, out_dtype, scale);  // raises: a scale without FP8 output
  return GatedFunction::apply(x, b, &gated_entry(activation));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kplay, m) {
  m.def("gated_forward(Tensor x, Tensor? b, str activation, ScalarType? out_dtype=None, float scale=1.) -> Tensor");
  m.def("gated_backward(Tensor grad, Tensor x, Tensor? b, str activation) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(kplay, CUDA, m) {
  m.impl("gated_forward", &gated_forward_cuda);
  m.impl("gated_backward", &gated_backward_cuda);
}

TORCH_LIBRARY_IMPL(kplay, Meta, m) {
  m.impl("gated_forward", &gated_forward_meta);
  m.impl("gated_backward", &gated_backward_meta);
}

TORCH_LIBRARY_IMPL(kplay, Autograd, m) {
  m.impl("gated_forward", &gated_forward_autograd);
  m.impl("gated_backward", torch::autograd::autogradNotImplementedFallback());
}

// ---- PReLU and RReLU in training (kplay/_torch_slope.py has the same ops in Python) -------------
//
//   kplay::prelu(Tensor x, Tensor weight) -> Tensor
//   kplay::prelu_backward(Tensor grad, Tensor x, Tensor weight) -> (Tensor, Tensor)
//   kplay::rrelu_train(Tensor x, float lower, float upper, int seed, int offset) -> Tensor
//   kplay::rrelu_train_backward(Tensor grad, Tensor x, float lower, float upper, int seed, int offset) -> Tensor
//
// Operands are made contiguous, outputs are contiguous; prelu's weight has x's dtype and one
// element or one per channel of dim 1 (the Meta kernel refuses any other, so a compiled graph
// fails at trace time); autograd saves x (and the weight, or RReLU's seed) and backward draws
// RReLU's slopes again.

namespace {

// (channels, inner) of prelu over x with `weight`, as kplay/_slope.py's prelu_channels.
std::pair<std::int64_t, std::int64_t> prelu_channels(const at::Tensor& x, const at::Tensor& weight) {
  checked_slot(x, "x");
  if (weight.scalar_type() != x.scalar_type())
    invalid("prelu's weight is " + std::string(c10::toString(weight.scalar_type())) + " but x is " +
            std::string(c10::toString(x.scalar_type())) + "; kplay does not convert");
  const std::int64_t channels = x.dim() >= 2 ? x.size(1) : 1, size = weight.numel();
  if (size == 1) return {1, 1};
  if (size != channels)
    invalid("prelu's weight has " + std::to_string(size) + " elements but the input of shape " + c10::str(x.sizes()) +
            (x.dim() >= 2 ? " has " + std::to_string(channels) + " channels (dim 1)"
                          : std::string(" has no channel dimension, so the weight needs one element")) +
            ": a weight has one element or one per channel");
  std::int64_t inner = 1;
  for (std::int64_t d = 2; d < x.dim(); ++d) inner *= x.size(d);
  return {channels, inner};
}

// The same check on sizes that may be symbolic (a compiled graph with dynamic shapes): SymInt's
// comparisons guard on the values they compare.
void check_prelu_sym(const at::Tensor& x, const at::Tensor& weight) {
  checked_slot(x, "x");
  if (weight.scalar_type() != x.scalar_type())
    invalid("prelu's weight is " + std::string(c10::toString(weight.scalar_type())) + " but x is " +
            std::string(c10::toString(x.scalar_type())) + "; kplay does not convert");
  const c10::SymInt size = weight.sym_numel();
  if (size == 1) return;
  const c10::SymInt channels = x.dim() >= 2 ? x.sym_size(1) : c10::SymInt(1);
  if (size != channels)
    invalid("prelu's weight has " + c10::str(size) + " elements but the input of shape " + c10::str(x.sym_sizes()) +
            (x.dim() >= 2 ? " has " + c10::str(channels) + " channels (dim 1)"
                          : std::string(" has no channel dimension, so the weight needs one element")) +
            ": a weight has one element or one per channel");
}

void check_bounds(double lower, double upper) {
  if (!(lower <= upper))
    invalid("rrelu's lower (" + std::to_string(lower) + ") must be <= upper (" + std::to_string(upper) +
            "), as torch's rrelu requires");
}

void check_grad(const at::Tensor& grad, const at::Tensor& x) {
  check_cuda(grad, "grad");
  if (grad.scalar_type() != x.scalar_type() || grad.sizes() != x.sizes())
    invalid("grad (" + std::string(c10::toString(grad.scalar_type())) + ", " + c10::str(grad.sizes()) + ") and x (" +
            std::string(c10::toString(x.scalar_type())) + ", " + c10::str(x.sizes()) + ") must match");
}

int code_of(const at::Tensor& t, const char* what) {
  return dtype_codes[static_cast<std::size_t>(checked_slot(t, what))];
}

at::Tensor prelu_cuda(const at::Tensor& x_in, const at::Tensor& weight_in) {
  const auto [channels, inner] = prelu_channels(x_in, weight_in);
  check_cuda(x_in, "x");
  check_cuda(weight_in, "weight");
  const at::Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() == 0) return out;
  const char* message = nullptr;
  check(bridge->prelu_forward(code_of(x, "x"), x.const_data_ptr(), weight.const_data_ptr(), out.data_ptr(), x.numel(),
                              channels, inner, current_stream(x.device().index()), &message),
        message);
  return out;
}

std::tuple<at::Tensor, at::Tensor> prelu_backward_cuda(const at::Tensor& grad_in, const at::Tensor& x_in,
                                                       const at::Tensor& weight_in) {
  const auto [channels, inner] = prelu_channels(x_in, weight_in);
  check_cuda(x_in, "x");
  check_cuda(weight_in, "weight");
  check_grad(grad_in, x_in);
  const at::Tensor g = grad_in.contiguous(), x = x_in.contiguous(), weight = weight_in.contiguous();
  at::Tensor grad_x = at::empty_like(x, at::MemoryFormat::Contiguous);
  at::Tensor grad_w = at::empty_like(weight, at::MemoryFormat::Contiguous);
  const int code = code_of(x, "x");
  if (x.numel() == 0) return {grad_x, grad_w.zero_()};  // a sum over no elements (torch's empty samples)
  const char* message = nullptr;
  std::int64_t bytes = 0;
  check(bridge->prelu_workspace_bytes(code, x.numel(), channels, inner, &bytes, &message), message);
  at::Tensor workspace = at::empty({std::max<std::int64_t>(bytes, 8)}, x.options().dtype(at::kByte));
  check(bridge->prelu_backward(code, g.const_data_ptr(), x.const_data_ptr(), weight.const_data_ptr(),
                               x.numel() ? grad_x.data_ptr() : nullptr, grad_w.data_ptr(), workspace.data_ptr(),
                               x.numel(), channels, inner, current_stream(x.device().index()), &message),
        message);
  return {grad_x, grad_w};
}

at::Tensor rrelu_train_cuda(const at::Tensor& x_in, double lower, double upper, std::int64_t seed,
                            std::int64_t offset) {
  check_bounds(lower, upper);
  check_cuda(x_in, "x");
  const int code = code_of(x_in, "x");
  const at::Tensor x = x_in.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() == 0) return out;
  const char* message = nullptr;
  check(bridge->rrelu_forward(code, x.const_data_ptr(), out.data_ptr(), x.numel(), lower, upper,
                              static_cast<std::uint64_t>(seed), static_cast<std::uint64_t>(offset),
                              current_stream(x.device().index()), &message),
        message);
  return out;
}

at::Tensor rrelu_train_backward_cuda(const at::Tensor& grad_in, const at::Tensor& x_in, double lower, double upper,
                                     std::int64_t seed, std::int64_t offset) {
  check_cuda(x_in, "x");
  const int code = code_of(x_in, "x");
  check_grad(grad_in, x_in);
  const at::Tensor g = grad_in.contiguous(), x = x_in.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() == 0) return out;
  const char* message = nullptr;
  check(bridge->rrelu_backward(code, g.const_data_ptr(), x.const_data_ptr(), out.data_ptr(), x.numel(), lower, upper,
                               static_cast<std::uint64_t>(seed), static_cast<std::uint64_t>(offset),
                               current_stream(x.device().index()), &message),
        message);
  return out;
}

at::Tensor prelu_meta(const at::Tensor& x, const at::Tensor& weight) {
  check_prelu_sym(x, weight);
  return at::empty_like(x, at::MemoryFormat::Contiguous);
}
std::tuple<at::Tensor, at::Tensor> prelu_backward_meta(const at::Tensor& grad, const at::Tensor& x,
                                                       const at::Tensor& weight) {
  check_prelu_sym(x, weight);
  checked_slot(grad, "grad");
  return {at::empty_like(x, at::MemoryFormat::Contiguous), at::empty_like(weight, at::MemoryFormat::Contiguous)};
}
at::Tensor rrelu_train_meta(const at::Tensor& x, double lower, double upper, std::int64_t, std::int64_t) {
  check_bounds(lower, upper);
  checked_slot(x, "x");
  return at::empty_like(x, at::MemoryFormat::Contiguous);
}
at::Tensor rrelu_train_backward_meta(const at::Tensor& grad, const at::Tensor& x, double, double, std::int64_t,
                                     std::int64_t) {
  checked_slot(grad, "grad");
  return at::empty_like(x, at::MemoryFormat::Contiguous);
}

using PreluFn = at::Tensor(const at::Tensor&, const at::Tensor&);
using PreluBackwardFn = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&);
using RreluFn = at::Tensor(const at::Tensor&, double, double, std::int64_t, std::int64_t);
using RreluBackwardFn = at::Tensor(const at::Tensor&, const at::Tensor&, double, double, std::int64_t, std::int64_t);

const c10::TypedOperatorHandle<PreluFn>& prelu_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("kplay::prelu", "").typed<PreluFn>();
  return op;
}
const c10::TypedOperatorHandle<PreluBackwardFn>& prelu_backward_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("kplay::prelu_backward", "").typed<PreluBackwardFn>();
  return op;
}
const c10::TypedOperatorHandle<RreluFn>& rrelu_train_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("kplay::rrelu_train", "").typed<RreluFn>();
  return op;
}
const c10::TypedOperatorHandle<RreluBackwardFn>& rrelu_train_backward_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("kplay::rrelu_train_backward", "").typed<RreluBackwardFn>();
  return op;
}

struct PreluFunction : public torch::autograd::Function<PreluFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x, weight});
    return prelu_op().call(x, weight);
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const auto saved = ctx->get_saved_variables();
    auto [grad_x, grad_w] = prelu_backward_op().call(grads[0], saved[0], saved[1]);
    return {grad_x, grad_w};
  }
};

struct RreluTrainFunction : public torch::autograd::Function<RreluTrainFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double lower, double upper, std::int64_t seed,
                            std::int64_t offset) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x});
    ctx->saved_data["lower"] = lower;
    ctx->saved_data["upper"] = upper;
    ctx->saved_data["seed"] = seed;
    ctx->saved_data["offset"] = offset;
    return rrelu_train_op().call(x, lower, upper, seed, offset);
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    return {rrelu_train_backward_op().call(grads[0], x, ctx->saved_data["lower"].toDouble(),
                                           ctx->saved_data["upper"].toDouble(), ctx->saved_data["seed"].toInt(),
                                           ctx->saved_data["offset"].toInt()),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor prelu_autograd(const at::Tensor& x, const at::Tensor& weight) {
  if (!(at::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad()))) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return prelu_op().call(x, weight);
  }
  return PreluFunction::apply(x, weight);
}

at::Tensor rrelu_train_autograd(const at::Tensor& x, double lower, double upper, std::int64_t seed,
                                std::int64_t offset) {
  if (!needs_grad(x)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return rrelu_train_op().call(x, lower, upper, seed, offset);
  }
  return RreluTrainFunction::apply(x, lower, upper, seed, offset);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kplay, m) {
  m.def("prelu(Tensor x, Tensor weight) -> Tensor");
  m.def("prelu_backward(Tensor grad, Tensor x, Tensor weight) -> (Tensor, Tensor)");
  m.def("rrelu_train(Tensor x, float lower, float upper, int seed, int offset) -> Tensor");
  m.def("rrelu_train_backward(Tensor grad, Tensor x, float lower, float upper, int seed, int offset) -> Tensor");
}

TORCH_LIBRARY_IMPL(kplay, CUDA, m) {
  m.impl("prelu", &prelu_cuda);
  m.impl("prelu_backward", &prelu_backward_cuda);
  m.impl("rrelu_train", &rrelu_train_cuda);
  m.impl("rrelu_train_backward", &rrelu_train_backward_cuda);
}

TORCH_LIBRARY_IMPL(kplay, Meta, m) {
  m.impl("prelu", &prelu_meta);
  m.impl("prelu_backward", &prelu_backward_meta);
  m.impl("rrelu_train", &rrelu_train_meta);
  m.impl("rrelu_train_backward", &rrelu_train_backward_meta);
}

TORCH_LIBRARY_IMPL(kplay, Autograd, m) {
  m.impl("prelu", &prelu_autograd);
  m.impl("prelu_backward", torch::autograd::autogradNotImplementedFallback());
  m.impl("rrelu_train", &rrelu_train_autograd);
  m.impl("rrelu_train_backward", torch::autograd::autogradNotImplementedFallback());
}

// ---- the softmax family (kplay/_torch_softmax.py has the same ops in Python) ---------------------
//
//   kplay::softmax(Tensor x, int dim, str activation) -> Tensor
//   kplay::softmax_backward(Tensor grad, Tensor y, int dim, str activation) -> Tensor
//
// activation: softmax, log_softmax or softmin, run by kplay's row kernel along `dim`. A contiguous
// input over a dim that is not the last ([N, C, H, W] over dim 1, as Softmax2d takes it) is read
// where it is as strided rows, [outer, cols, inner], and its output is contiguous like it (other
// operands of such a backward are made contiguous). Otherwise an operand is read where it is when
// `dim` has unit stride and the other dimensions fold, in order, into rows of one pitch, else it
// is copied with `dim` moved last first (an extra read and write), and the output is contiguous
// with `dim` moved last, viewed in the input's dimension order. The Meta kernels give the same
// strides. Autograd saves the output, as torch does.

namespace {

void check_family(c10::string_view activation) {
  if (activation != "softmax" && activation != "log_softmax" && activation != "softmin")
    invalid("'" + std::string(activation) + "' is not one of the softmax family (softmax, log_softmax, softmin)");
}

std::int64_t row_dim(std::int64_t ndim, std::int64_t dim) {
  const std::int64_t n = std::max<std::int64_t>(ndim, 1);
  if (dim < -n || dim >= n)
    invalid("dim " + std::to_string(dim) + " is out of range for an array of " + std::to_string(ndim) +
            " dimensions (expected " + std::to_string(-n) + ".." + std::to_string(n - 1) + ")");
  return dim < 0 ? dim + n : dim;
}

// Whether a softmax along dim of t takes strided rows: t contiguous and dim not its last.
bool strided_rows(const at::Tensor& t, std::int64_t dim) {
  return t.dim() > 1 && dim != t.dim() - 1 && t.is_contiguous();
}

// A tensor of like's shape, contiguous with dim moved last, viewed in like's dimension order: rows
// along dim of one pitch, whatever like's layout.
at::Tensor dim_last(const at::Tensor& like, std::int64_t dim) {
  if (like.dim() == 0) return at::empty_symint({}, like.options());
  c10::SymDimVector moved;
  for (std::int64_t k = 0; k < like.dim(); ++k)
    if (k != dim) moved.push_back(like.sym_size(k));
  moved.push_back(like.sym_size(dim));
  return at::empty_symint(moved, like.options()).movedim(-1, dim);
}

// The output for an input like: contiguous where like takes strided rows, else dim_last.
at::Tensor row_output(const at::Tensor& like, std::int64_t dim) {
  if (strided_rows(like, dim)) return at::empty_symint(like.sym_sizes(), like.options());
  return dim_last(like, dim);
}

// rows of cols elements, pitch apart; inner > 1: strided rows, each operand [rows, cols, inner].
struct RowLayout {
  std::int64_t rows = 1, cols = 1, pitch = 1, inner = 1;
};

// The strided rows of a contiguous tensor along dim: [outer, cols, inner].
RowLayout strided_layout(const at::Tensor& t, std::int64_t dim) {
  RowLayout l;
  l.cols = t.size(dim);
  l.rows = 1;
  for (std::int64_t k = 0; k < dim; ++k) l.rows *= t.size(k);
  for (std::int64_t k = dim + 1; k < t.dim(); ++k) l.inner *= t.size(k);
  l.pitch = std::max<std::int64_t>(l.cols * l.inner, 1);
  return l;
}

// rows x cols with a row pitch along dim, as kplay/_softmax.py's row_layout; nullopt where dim
// has no unit stride or the other dimensions do not fold, in order, into rows of one pitch.
std::optional<RowLayout> row_layout(const at::Tensor& t, std::int64_t dim) {
  if (t.dim() == 0) return RowLayout{};
  RowLayout l;
  l.cols = t.size(dim);
  l.rows = l.cols ? t.numel() / l.cols : 0;
  l.pitch = std::max<std::int64_t>(l.cols, 1);
  if (t.numel() == 0) return l;
  if (l.cols > 1 && t.stride(dim) != 1) return std::nullopt;
  c10::SmallVector<std::pair<std::int64_t, std::int64_t>, 6> lead;  // (size, stride), size != 1
  for (std::int64_t k = 0; k < t.dim(); ++k)
    if (k != dim && t.size(k) != 1) lead.emplace_back(t.size(k), t.stride(k));
  if (lead.empty()) return l;
  for (std::size_t i = 0; i + 1 < lead.size(); ++i)
    if (lead[i].second != lead[i + 1].second * lead[i + 1].first) return std::nullopt;
  l.pitch = lead.back().second;
  if (l.pitch < l.cols) return std::nullopt;
  return l;
}

// t where it reads as rows along dim, else a copy that does (dim moved last, contiguous). A
// contiguous t along a dim that is not its last is copied too: the backward of an output that was
// not written as strided rows (its input was not contiguous) takes its gradient as plain rows.
std::pair<at::Tensor, RowLayout> rows_of(const at::Tensor& t, std::int64_t dim) {
  if (auto l = row_layout(t, dim)) return {t, *l};
  at::Tensor copy = dim_last(t, dim).copy_(t);
  return {copy, *row_layout(copy, dim)};
}

void launch_rows(const void* l, const void* in, std::int64_t ld_in, const void* in1, std::int64_t ld_in1, void* out,
                 std::int64_t ld_out, const RowLayout& shape, void* stream) {
  const char* message = nullptr;
  check(bridge->launch_rows(l, in, ld_in, in1, ld_in1, out, ld_out, shape.rows, shape.cols, shape.inner, stream,
                            &message),
        message);
}

at::Tensor softmax_cuda(const at::Tensor& x_in, std::int64_t dim, c10::string_view activation) {
  check_family(activation);
  const int slot = checked_slot(x_in, "x");
  check_cuda(x_in, "x");
  const std::int64_t d = row_dim(x_in.dim(), dim);
  at::Tensor out = row_output(x_in, d);
  if (x_in.numel() == 0) return out;
  if (strided_rows(x_in, d)) {
    const RowLayout s = strided_layout(x_in, d);
    const c10::DeviceIndex device = x_in.device().index();
    launch_rows(launcher(activation_entry(activation), slot, forward_kind, device), x_in.const_data_ptr(), s.pitch,
                nullptr, s.pitch, out.data_ptr(), s.pitch, s, current_stream(device));
    return out;
  }
  const auto [x, shape] = rows_of(x_in, d);
  const c10::DeviceIndex device = x.device().index();
  launch_rows(launcher(activation_entry(activation), slot, forward_kind, device), x.const_data_ptr(), shape.pitch,
              nullptr, shape.pitch, out.data_ptr(), row_layout(out, d)->pitch, shape, current_stream(device));
  return out;
}

void check_row_grad(const at::Tensor& grad, const at::Tensor& y) {
  if (grad.sym_sizes() != y.sym_sizes() || grad.scalar_type() != y.scalar_type())
    invalid("grad (" + std::string(c10::toString(grad.scalar_type())) + ", " + c10::str(grad.sym_sizes()) +
            ") and y (" + std::string(c10::toString(y.scalar_type())) + ", " + c10::str(y.sym_sizes()) +
            ") must match");
}

at::Tensor softmax_backward_cuda(const at::Tensor& grad_in, const at::Tensor& y_in, std::int64_t dim,
                                 c10::string_view activation) {
  check_family(activation);
  const int slot = checked_slot(y_in, "y");
  check_row_grad(grad_in, y_in);
  check_cuda(y_in, "y");
  check_cuda(grad_in, "grad");
  if (grad_in.device() != y_in.device())
    invalid("grad is on " + grad_in.device().str() + " but y on " + y_in.device().str());
  const std::int64_t d = row_dim(y_in.dim(), dim);
  at::Tensor out = row_output(y_in, d);
  if (y_in.numel() == 0) return out;
  if (strided_rows(y_in, d)) {
    const RowLayout s = strided_layout(y_in, d);
    const at::Tensor g = grad_in.contiguous();  // the gradient in y's layout: a copy only where it is not
    const c10::DeviceIndex device = y_in.device().index();
    launch_rows(launcher(activation_entry(activation), slot, backward_from_output, device), g.const_data_ptr(), s.pitch,
                y_in.const_data_ptr(), s.pitch, out.data_ptr(), s.pitch, s, current_stream(device));
    return out;
  }
  const auto [g, shape] = rows_of(grad_in, d);
  const auto [y, y_shape] = rows_of(y_in, d);
  const c10::DeviceIndex device = y.device().index();
  launch_rows(launcher(activation_entry(activation), slot, backward_from_output, device), g.const_data_ptr(),
              shape.pitch, y.const_data_ptr(), y_shape.pitch, out.data_ptr(), row_layout(out, d)->pitch, shape,
              current_stream(device));
  return out;
}

at::Tensor softmax_meta(const at::Tensor& x, std::int64_t dim, c10::string_view activation) {
  check_family(activation);
  checked_slot(x, "x");
  return row_output(x, row_dim(x.dim(), dim));
}

at::Tensor softmax_backward_meta(const at::Tensor& grad, const at::Tensor& y, std::int64_t dim,
                                 c10::string_view activation) {
  check_family(activation);
  checked_slot(y, "y");
  check_row_grad(grad, y);
  return row_output(y, row_dim(y.dim(), dim));
}

using SoftmaxFn = at::Tensor(const at::Tensor&, std::int64_t, c10::string_view);
using SoftmaxBackwardFn = at::Tensor(const at::Tensor&, const at::Tensor&, std::int64_t, c10::string_view);

const c10::TypedOperatorHandle<SoftmaxFn>& softmax_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("kplay::softmax", "").typed<SoftmaxFn>();
  return op;
}
const c10::TypedOperatorHandle<SoftmaxBackwardFn>& softmax_backward_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("kplay::softmax_backward", "").typed<SoftmaxBackwardFn>();
  return op;
}

struct SoftmaxFunction : public torch::autograd::Function<SoftmaxFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, std::int64_t dim, c10::string_view activation) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor y = softmax_op().call(x, dim, activation);
    ctx->save_for_backward({y});
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["activation"] = std::string(activation);
    return y;
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grads) {
    const at::Tensor y = ctx->get_saved_variables()[0];
    const std::string activation = ctx->saved_data["activation"].toStringRef();
    return {softmax_backward_op().call(grads[0], y, ctx->saved_data["dim"].toInt(), activation), at::Tensor(),
            at::Tensor()};
  }
};

at::Tensor softmax_autograd(const at::Tensor& x, std::int64_t dim, c10::string_view activation) {
  if (!needs_grad(x)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return softmax_op().call(x, dim, activation);
  }
  return SoftmaxFunction::apply(x, dim, activation);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kplay, m) {
  m.def("softmax(Tensor x, int dim, str activation) -> Tensor");
  m.def("softmax_backward(Tensor grad, Tensor y, int dim, str activation) -> Tensor");
}

TORCH_LIBRARY_IMPL(kplay, CUDA, m) {
  m.impl("softmax", &softmax_cuda);
  m.impl("softmax_backward", &softmax_backward_cuda);
}

TORCH_LIBRARY_IMPL(kplay, Meta, m) {
  m.impl("softmax", &softmax_meta);
  m.impl("softmax_backward", &softmax_backward_meta);
}

TORCH_LIBRARY_IMPL(kplay, Autograd, m) {
  m.impl("softmax", &softmax_autograd);
  m.impl("softmax_backward", torch::autograd::autogradNotImplementedFallback());
}

// ---- Python entry points: eager calls and torch.ops.kplay.* ---------------------------------

namespace {

// A plain call (exact tensors, a str and a bool where the schema has them, positional, no torch
// function mode) goes straight to the dispatcher's typed call: no schema parsing, no boxing. It is
// still a dispatcher call, so autograd, dispatch modes (FakeTensorMode, functionalization) and
// every other key see it as they see torch.ops.kplay.*. Anything else goes to the op's original
// boxed entry, which handles every case.
//
// PyInit__torch_ops makes these the `_op` of torch.ops.kplay.{forward,forward_,backward,
// gated_forward}.default, so the calls that users make through torch.ops take them too, as do
// Inductor's calls of the ops it keeps as operators (gated_forward; C++ wrapper code); that is
// done when the OpOverload objects are created, before anything hashes them
// (OpOverload.__hash__ is hash(_op)). kplay.torch's eager calls use the module's functions
// (forward, forward_ returning x, gated_forward) directly.
PyObject* forward_boxed = nullptr;  // the original _op of each routed overload, owned references
PyObject* forward_inplace_boxed = nullptr;
PyObject* backward_boxed = nullptr;
PyObject* gated_forward_boxed = nullptr;

bool no_keywords(PyObject* kwnames) { return kwnames == nullptr || PyTuple_GET_SIZE(kwnames) == 0; }

bool plain_call(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return nargs == 2 && no_keywords(kwnames) && THPVariable_CheckExact(args[0]) && PyUnicode_Check(args[1]) &&
         !at::impl::torch_function_mode_enabled();
}

PyObject* boxed_call(PyObject* boxed, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return PyObject_Vectorcall(boxed, args, static_cast<size_t>(nargs), kwnames);
}

c10::string_view text_of(PyObject* s) {  // nullptr data on a Python error
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(s, &size);
  return {text, text == nullptr ? 0 : static_cast<std::size_t>(size)};
}

PyObject* py_forward(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (!plain_call(args, nargs, kwnames)) return boxed_call(forward_boxed, args, nargs, kwnames);
  HANDLE_TH_ERRORS
  const c10::string_view activation = text_of(args[1]);
  if (activation.data() == nullptr) return nullptr;
  const at::Tensor& x = THPVariable_Unpack(args[0]);
  at::Tensor y;
  {
    pybind11::gil_scoped_release no_gil;
    y = forward_op().call(x, activation);
  }
  return THPVariable_Wrap(std::move(y));
  END_HANDLE_TH_ERRORS
}

// torch.ops.kplay.forward_.default: returns None, as its schema says.
PyObject* op_forward_inplace(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (!plain_call(args, nargs, kwnames)) return boxed_call(forward_inplace_boxed, args, nargs, kwnames);
  HANDLE_TH_ERRORS
  const c10::string_view activation = text_of(args[1]);
  if (activation.data() == nullptr) return nullptr;
  const at::Tensor& x = THPVariable_Unpack(args[0]);
  {
    pybind11::gil_scoped_release no_gil;
    forward_inplace_op().call(x, activation);
  }
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

// kplay.torch's in-place entry: the same call, returning x.
PyObject* py_forward_inplace(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* r = op_forward_inplace(self, args, nargs, kwnames);
  if (r == nullptr) return nullptr;
  Py_DECREF(r);
  Py_INCREF(args[0]);
  return args[0];
}

// backward(grad, saved, activation, saved_output): the op of compiled training graphs' backward.
PyObject* py_backward(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const bool plain = nargs == 4 && no_keywords(kwnames) && THPVariable_CheckExact(args[0]) &&
                     THPVariable_CheckExact(args[1]) && PyUnicode_Check(args[2]) && PyBool_Check(args[3]) &&
                     !at::impl::torch_function_mode_enabled();
  if (!plain) return boxed_call(backward_boxed, args, nargs, kwnames);
  HANDLE_TH_ERRORS
  const c10::string_view activation = text_of(args[2]);
  if (activation.data() == nullptr) return nullptr;
  const at::Tensor& grad = THPVariable_Unpack(args[0]);
  const at::Tensor& saved = THPVariable_Unpack(args[1]);
  const bool saved_output = args[3] == Py_True;
  at::Tensor y;
  {
    pybind11::gil_scoped_release no_gil;
    y = backward_op().call(grad, saved, activation, saved_output);
  }
  return THPVariable_Wrap(std::move(y));
  END_HANDLE_TH_ERRORS
}

// gated_forward(x, b, activation), b a tensor or None, without FP8 output (kplay.torch.gated's
// call); with out_dtype and scale, or keywords, the boxed entry.
PyObject* py_gated_forward(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const bool plain = nargs == 3 && no_keywords(kwnames) && THPVariable_CheckExact(args[0]) &&
                     (args[1] == Py_None || THPVariable_CheckExact(args[1])) && PyUnicode_Check(args[2]) &&
                     !at::impl::torch_function_mode_enabled();
  if (!plain) return boxed_call(gated_forward_boxed, args, nargs, kwnames);
  HANDLE_TH_ERRORS
  const c10::string_view activation = text_of(args[2]);
  if (activation.data() == nullptr) return nullptr;
  const at::Tensor& x = THPVariable_Unpack(args[0]);
  std::optional<at::Tensor> b;
  if (args[1] != Py_None) b = THPVariable_Unpack(args[1]);
  at::Tensor y;
  {
    pybind11::gil_scoped_release no_gil;
    y = gated_forward_op().call(x, b, activation, std::nullopt, 1.0);
  }
  return THPVariable_Wrap(std::move(y));
  END_HANDLE_TH_ERRORS
}

// ---- the out= forms, for Inductor's generated code (kplay/_torch_inductor.py) ----------------
//
// forward_out(x, activation, *, out) and backward_out(grad, saved, activation, saved_output, *,
// out) launch kplay's kernel into a buffer that Inductor allocated, as its generated code calls
// its own extern kernels (extern_kernels.mm(a, b, out=buf)): no dispatcher call and no allocation.
// They are not operators: a compiled graph has already run autograd and every dispatch key when
// Inductor writes the call, so nothing is skipped that the graph needs.

// out: the argument after the `positional` ones, or the keyword; nullptr with a TypeError set
// where the call does not have that form.
PyObject* out_argument(const char* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                       Py_ssize_t positional) {
  PyObject* out = nullptr;
  if (no_keywords(kwnames) && nargs == positional + 1) {
    out = args[positional];
  } else if (nargs == positional && kwnames != nullptr && PyTuple_GET_SIZE(kwnames) == 1 &&
             PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "out") == 0) {
    out = args[positional];
  }
  if (out == nullptr || !THPVariable_Check(out)) {
    PyErr_Format(PyExc_TypeError, "%s takes %zd positional arguments and a tensor out", name, positional);
    return nullptr;
  }
  return out;
}

PyObject* py_forward_out(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* out = out_argument("forward_out", args, nargs, kwnames, 2);
  if (out == nullptr) return nullptr;
  if (!THPVariable_Check(args[0]) || !PyUnicode_Check(args[1]))
    return PyErr_Format(PyExc_TypeError, "forward_out(x, activation, *, out): x a tensor, activation a str");
  HANDLE_TH_ERRORS
  const c10::string_view activation = text_of(args[1]);
  if (activation.data() == nullptr) return nullptr;
  const at::Tensor& x = THPVariable_Unpack(args[0]);
  const at::Tensor& o = THPVariable_Unpack(out);
  if (!x.is_cuda()) {  // the op's own kernel (CPU: kplay/_torch_cpu.py), copied out
    o.copy_(forward_op().call(x, activation));
    Py_RETURN_NONE;
  }
  {
    pybind11::gil_scoped_release no_gil;
    forward_out_cuda(x, activation, o);
  }
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

PyObject* py_backward_out(PyObject* /*self*/, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* out = out_argument("backward_out", args, nargs, kwnames, 4);
  if (out == nullptr) return nullptr;
  if (!THPVariable_Check(args[0]) || !THPVariable_Check(args[1]) || !PyUnicode_Check(args[2]) || !PyBool_Check(args[3]))
    return PyErr_Format(PyExc_TypeError,
                        "backward_out(grad, saved, activation, saved_output, *, out): grad and saved tensors, "
                        "activation a str, saved_output a bool");
  HANDLE_TH_ERRORS
  const c10::string_view activation = text_of(args[2]);
  if (activation.data() == nullptr) return nullptr;
  const at::Tensor& grad = THPVariable_Unpack(args[0]);
  const at::Tensor& saved = THPVariable_Unpack(args[1]);
  const at::Tensor& o = THPVariable_Unpack(out);
  const bool saved_output = args[3] == Py_True;
  if (!saved.is_cuda()) {
    o.copy_(backward_op().call(grad, saved, activation, saved_output));
    Py_RETURN_NONE;
  }
  {
    pybind11::gil_scoped_release no_gil;
    backward_out_cuda(grad, saved, activation, saved_output, o);
  }
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

// METH_FASTCALL | METH_KEYWORDS's signature (Python names its typedef only from 3.13).
using FastWithKeywords = PyObject* (*)(PyObject*, PyObject* const*, Py_ssize_t, PyObject*);
PyCFunction as_cfunction(FastWithKeywords f) { return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f)); }
constexpr int fastcall = METH_FASTCALL | METH_KEYWORDS;

PyMethodDef methods[] = {
    {"forward", as_cfunction(py_forward), fastcall,
     "forward(x, activation) -> Tensor: torch.ops.kplay.forward, called without its Python layers"},
    {"forward_", as_cfunction(py_forward_inplace), fastcall,
     "forward_(x, activation) -> x: torch.ops.kplay.forward_, called without its Python layers"},
    {"gated_forward", as_cfunction(py_gated_forward), fastcall,
     "gated_forward(x, b, activation) -> Tensor: torch.ops.kplay.gated_forward, called without its Python layers"},
    {"backward", as_cfunction(py_backward), fastcall,
     "backward(grad, saved, activation, saved_output) -> Tensor: torch.ops.kplay.backward, called without its "
     "Python layers"},
    {"forward_out", as_cfunction(py_forward_out), fastcall,
     "forward_out(x, activation, *, out) -> None: activation(x) into out (dense, x's shape and dtype), no "
     "dispatcher call: Inductor's generated code calls it"},
    {"backward_out", as_cfunction(py_backward_out), fastcall,
     "backward_out(grad, saved, activation, saved_output, *, out) -> None: the backward into out, no dispatcher "
     "call: Inductor's generated code calls it"},
    {"forward_op_", as_cfunction(op_forward_inplace), fastcall,
     "forward_op_(x, activation) -> None: torch.ops.kplay.forward_.default's entry"},
    {nullptr, nullptr, 0, nullptr}};

// The object at a dotted path below a module, a new reference.
PyObject* attribute_path(const char* module, std::initializer_list<const char*> names) {
  PyObject* o = PyImport_ImportModule(module);
  for (const char* name : names) {
    if (o == nullptr) return nullptr;
    PyObject* next = PyObject_GetAttrString(o, name);
    Py_DECREF(o);
    o = next;
  }
  return o;
}

// torch.ops.kplay.<op>.default's _op becomes the module's function `entry`; the original, kept in
// *boxed, serves the calls that are not plain (see "Python entry points").
bool route(PyObject* module, const char* op, const char* entry, PyObject** boxed) {
  PyObject* overload = attribute_path("torch", {"ops", "kplay", op, "default"});
  if (overload == nullptr) return false;
  PyObject* fn = PyObject_GetAttrString(module, entry);
  *boxed = fn == nullptr ? nullptr : PyObject_GetAttrString(overload, "_op");
  const bool ok = *boxed != nullptr && PyObject_SetAttrString(overload, "_op", fn) == 0;
  Py_XDECREF(fn);
  Py_DECREF(overload);
  return ok;
}

}  // namespace

// The Python module: importing it (after torch) loads the registrations above; it takes the
// launch table and the exception classes from kplay._core.
PyMODINIT_FUNC PyInit__torch_ops() {  // NOLINT(bugprone-reserved-identifier): Python's name
  static PyModuleDef def = {PyModuleDef_HEAD_INIT,
                            "kplay._torch_ops",
                            "kplay's PyTorch operators in C++ (loaded by kplay.torch)",
                            -1,
                            methods,
                            nullptr,
                            nullptr,
                            nullptr,
                            nullptr};
  PyObject* core = PyImport_ImportModule("kplay._core");
  if (core == nullptr) return nullptr;
  PyObject* capsule = PyObject_GetAttrString(core, "torch_bridge");
  if (capsule == nullptr) return nullptr;
  bridge = static_cast<const KplayTorchBridge*>(PyCapsule_GetPointer(capsule, KPLAY_TORCH_BRIDGE_NAME));
  Py_DECREF(capsule);
  if (bridge == nullptr) return nullptr;
  if (bridge->version != KPLAY_TORCH_BRIDGE_VERSION) {
    PyErr_Format(PyExc_ImportError, "kplay._torch_ops expects launch table version %d, kplay._core has %d",
                 KPLAY_TORCH_BRIDGE_VERSION, bridge->version);
    return nullptr;
  }
  error_base = PyObject_GetAttrString(core, "Error");
  error_argument = PyObject_GetAttrString(core, "InvalidArgumentError");
  error_no_device = PyObject_GetAttrString(core, "NoDeviceError");
  error_unsupported = PyObject_GetAttrString(core, "UnsupportedError");
  error_compile = PyObject_GetAttrString(core, "CompileError");
  Py_DECREF(core);
  if (!error_base || !error_argument || !error_no_device || !error_unsupported || !error_compile) return nullptr;
  PyObject* m = PyModule_Create(&def);
  if (m == nullptr) return nullptr;
  if (!route(m, "forward", "forward", &forward_boxed) || !route(m, "forward_", "forward_op_", &forward_inplace_boxed) ||
      !route(m, "backward", "backward", &backward_boxed) ||
      !route(m, "gated_forward", "gated_forward", &gated_forward_boxed))
    return nullptr;
  if (PyModule_AddStringConstant(m, "TORCH_VERSION", KPLAY_TORCH_VERSION) < 0) return nullptr;
  // kplay.torch registers kplay/_torch_slope.py's Python ops only where the extension lacks these.
  if (PyModule_AddIntConstant(m, "PRELU_RRELU_OPS", 1) < 0) return nullptr;
  // ... and kplay/_torch_softmax.py's only where it lacks the softmax family's.
  if (PyModule_AddIntConstant(m, "SOFTMAX_OPS", 1) < 0) return nullptr;
  return m;
}
