// kplay._torch_ops, PReLU and RReLU in training (kplay/_torch_slope.py has the same ops in Python)
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

#include "torch_ops_common.h"

namespace {

using namespace kplay_torch;  // NOLINT(google-build-using-namespace): the module's own helpers

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
