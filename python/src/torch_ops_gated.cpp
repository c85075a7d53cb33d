// kplay._torch_ops, the gated activations: out = act(a) * b
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
#include "torch_ops_common.h"

namespace {

using namespace kplay_torch;  // NOLINT(google-build-using-namespace): the module's own helpers

enum GatedKind { gated_same = 0, gated_e4m3 = 1, gated_e5m2 = 2, gated_backward_kind = 3 };

struct Gated {
  explicit Gated(std::string n) : name(std::move(n)) {}
  std::string name;
  std::array<std::atomic<void*>, std::size_t{4} * 4 * max_devices> launchers{};
};

Gated& gated_entry(c10::string_view name) { return named_entry<Gated>(name); }

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

using GatedBackwardFn = std::vector<at::Tensor>(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                                c10::string_view);

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

const c10::TypedOperatorHandle<GatedForwardFn>& kplay_torch::gated_forward_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("kplay::gated_forward", "").typed<GatedForwardFn>();
  return op;
}

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
