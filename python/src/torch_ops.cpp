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
//   kplay::gated_forward / gated_backward: the gated form, out = act(a) * b (torch_ops_gated.cpp)
//   kplay::prelu, prelu_backward, rrelu_train, rrelu_train_backward (torch_ops_slope.cpp)
//   kplay::softmax, softmax_backward: the softmax family (torch_ops_softmax.cpp)
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
// This file: the element-wise operators and the module's Python entry points; what the operator
// files share is in torch_ops_common.h.

#include "torch_ops_common.h"

namespace {

using namespace kplay_torch;  // NOLINT(google-build-using-namespace): the module's own helpers

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

// ---- Python entry points: eager calls and torch.ops.kplay.* ---------------------------------

namespace {

using namespace kplay_torch;  // NOLINT(google-build-using-namespace)

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
