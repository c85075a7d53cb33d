// The pieces every operator file of kplay._torch_ops shares (torch_ops.cpp has the module's
// overview): kplay's exceptions raised through torch's python_error, the launch table kplay._core
// hands the module (torch_bridge.h), each activation's launchers cached per dtype, direction and
// device, the layouts a launch takes without a copy, and the autograd names. One definition for the
// whole module: inline functions and variables (a single bridge and a single cache), in a namespace
// of its own; the operators themselves stay in each file's anonymous namespace.
#pragma once
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

namespace kplay_torch {

inline const KplayTorchBridge* bridge = nullptr;  // set by PyInit__torch_ops before any call
// kplay's exception classes, by kplay::ErrorCode (kplay._core), owned references.
inline PyObject* error_base = nullptr;
inline PyObject* error_argument = nullptr;
inline PyObject* error_no_device = nullptr;
inline PyObject* error_unsupported = nullptr;
inline PyObject* error_compile = nullptr;

inline PyObject* exception_for(int code) {
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
[[noreturn]] inline void fail(int code, const char* message) {
  python_error error;
  {
    pybind11::gil_scoped_acquire gil;
    PyErr_SetString(exception_for(code), message);
    error.persist();
  }
  throw error;
}

[[noreturn]] inline void invalid(const std::string& message) { fail(1, message.c_str()); }

// `message` by reference: in check(bridge->f(..., &message), message) the call may be evaluated
// after the second argument, so a copy could still be the nullptr the call overwrites.
inline void check(int code, const char* const& message) {
  if (code != 0) fail(code, message != nullptr ? message : "kplay failed without a message");
}

// kplay's dtype code and its slot in the launcher tables, or -1 where kplay has no such dtype.
inline int dtype_slot(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return 0;
    case at::kHalf: return 1;
    case at::kBFloat16: return 2;
    case at::kDouble: return 3;
    default: return -1;
  }
}
inline constexpr std::array<int, 4> dtype_codes = {KPLAY_F32, KPLAY_F16, KPLAY_BF16, KPLAY_F64};

inline int checked_slot(const at::Tensor& t, const char* what) {
  const int slot = dtype_slot(t.scalar_type());
  if (slot < 0)
    invalid(std::string("kplay.torch takes float32, float16, bfloat16 or float64 tensors; ") + what + " is " +
            std::string(c10::toString(t.scalar_type())));
  return slot;
}

inline void check_cuda(const at::Tensor& t, const char* what) {
  if (!t.is_cuda())
    invalid(std::string("kplay.torch needs CUDA tensors; ") + what + " is on '" + t.device().str() + "'");
}

// ---- launchers, cached per activation string, dtype, direction and device -----------------

enum Kind { forward_kind = 0, backward_from_input = 1, backward_from_output = 2 };
inline constexpr std::size_t max_devices = 64;

struct Activation {
  explicit Activation(std::string n) : name(std::move(n)) {}
  std::string name;
  std::atomic<int> saves_output{-1};  // -1 until asked
  std::array<std::atomic<void*>, std::size_t{4} * 3 * max_devices> launchers{};
};

// The entry of type T named `name` (an activation's launchers, a gated activation's), made on
// first use. One map and one lock per T, keyed by views of the entries' own names; entries live as
// long as the process (as the launchers, which _core owns and nothing frees at exit).
template <class T>
T& named_entry(c10::string_view name) {
  static std::mutex mutex;
  static auto* map = new std::unordered_map<std::string_view, T*>();
  const std::string_view key(name.data(), name.size());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = map->find(key);
  if (it != map->end()) return *it->second;
  auto* e = new T(std::string(key));
  map->emplace(std::string_view(e->name), e);
  return *e;
}

inline Activation& activation_entry(c10::string_view name) { return named_entry<Activation>(name); }

inline bool saves_output(Activation& a) {
  int r = a.saves_output.load(std::memory_order_acquire);
  if (r < 0) {
    const char* message = nullptr;
    check(bridge->saves_output(a.name.c_str(), &r, &message), message);
    a.saves_output.store(r, std::memory_order_release);
  }
  return r != 0;
}

inline const void* launcher(Activation& a, int slot, Kind kind, c10::DeviceIndex device) {
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

inline void* current_stream(c10::DeviceIndex device) {
  static const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return cuda->getStreamNativeHandle(cuda->getStream(c10::Device(c10::DeviceType::CUDA, device)));
}

inline void launch(const void* l, const void* in, const void* in1, void* out, std::int64_t n, void* stream) {
  const char* message = nullptr;
  check(bridge->launch(l, in, in1, out, n, stream, &message), message);
}

// ---- layouts (kplay/_layout.py) -----------------------------------------------------------

// The row pitch when t is rows x cols with unit column stride and its leading dimensions fold
// into rows with one pitch; nullopt otherwise.
inline std::optional<std::int64_t> row_pitch(const at::Tensor& t) {
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

inline std::int64_t innermost_size(const at::Tensor& t) {
  for (std::int64_t i = t.dim() - 1; i >= 0; --i)
    if (t.size(i) != 1) return t.size(i);
  return 1;
}

// f(x) into out (dense, from empty_like), or in place when out is x.
inline void forward_into(Activation& a, int slot, const at::Tensor& x, const at::Tensor& out) {
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

// ---- autograd -----------------------------------------------------------------------------------

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

inline bool needs_grad(const at::Tensor& x) { return at::GradMode::is_enabled() && x.requires_grad(); }

// kplay::gated_forward's typed handle (torch_ops_gated.cpp): the Python entry points call it.
using GatedForwardFn = at::Tensor(const at::Tensor&, const std::optional<at::Tensor>&, c10::string_view,
                                  std::optional<at::ScalarType>, double);
const c10::TypedOperatorHandle<GatedForwardFn>& gated_forward_op();

}  // namespace kplay_torch
