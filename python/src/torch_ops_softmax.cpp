// kplay._torch_ops, the softmax family (kplay/_torch_softmax.py has the same ops in Python)
//
//   kplay::softmax(Tensor x, int dim, str activation) -> Tensor
//   kplay::softmax_backward(Tensor grad, Tensor y, int dim, str activation) -> Tensor
//
// activation: softmax, log_softmax or softmin, each may add (accuracy=torch) (its float32 forward by
// torch's formula, docs/accuracy.md), run by kplay's row kernel along `dim`. A contiguous
// input over a dim that is not the last ([N, C, H, W] over dim 1, as Softmax2d takes it) is read
// where it is as strided rows, [outer, cols, inner], and its output is contiguous like it (other
// operands of such a backward are made contiguous). Otherwise an operand is read where it is when
// `dim` has unit stride and the other dimensions fold, in order, into rows of one pitch, else it
// is copied with `dim` moved last first (an extra read and write), and the output is contiguous
// with `dim` moved last, viewed in the input's dimension order. The Meta kernels give the same
// strides. Autograd saves the output, as torch does.

#include "torch_ops_common.h"

namespace {

using namespace kplay_torch;  // NOLINT(google-build-using-namespace): the module's own helpers

// The family's texts, as kplay/_softmax.py's check_family takes them: a member, with or without
// (accuracy=torch) (its float32 forward by torch's formula; the core refuses it in other dtypes).
void check_family(c10::string_view activation) {
  constexpr c10::string_view kTier = "(accuracy=torch)";
  c10::string_view member = activation;
  if (member.size() > kTier.size() && member.substr(member.size() - kTier.size()) == kTier)
    member = member.substr(0, member.size() - kTier.size());
  if (member != "softmax" && member != "log_softmax" && member != "softmin")
    invalid("'" + std::string(activation) +
            "' is not one of the softmax family (softmax, log_softmax, softmin, each with or without "
            "(accuracy=torch))");
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
