// Rendering of kernel sources from templates; see codegen.hpp.
#include "codegen.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "row_codegen.hpp"
#include "spec/activations.hpp"
#include "template_store.hpp"
#include "util/hash.hpp"

namespace kplay {

std::string RenderedKernel::options_string() const {
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "" : " ") + o;
  return out;
}

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::flat: return "flat";
    case Layout::wgrad_parts: return "wgrad-parts";
    case Layout::wgrad_sum: return "wgrad-sum";
    case Layout::strided: return "strided";
    default: return "general";
  }
}

namespace {
RowLayout row_layout(Layout layout) {
  return layout == Layout::strided ? RowLayout::strided : layout == Layout::flat ? RowLayout::whole : RowLayout::any;
}
}  // namespace

std::string entry_name(const KernelSpec& spec, const KernelConfig& c, Layout layout) {
  const ResolvedActivation act = resolve_activation(spec.activation);
  if (act.is_row()) return row_entry_name(spec, c, row_layout(layout));
  std::ostringstream os;
  // Parameters and user snippets add a hash of the activation's text: entry names stay identifiers.
  os << "kplay_" << (act.gated ? "gated_" : "");
  if (act.slope == SlopeForm::weight)
    os << "prelu_";
  else
    os << (act.slope == SlopeForm::random ? "training_" : "") << act.act->name << act.entry_suffix() << '_';
  if (spec.direction == Direction::forward)
    os << "fwd";
  else
    os << (spec.saved == Saved::input ? "bwdx" : "bwdy");
  // The grid policy only changes the launch geometry, not the code, so it is not in the name
  // (and configs that differ only there share one binary).
  os << '_' << to_string(spec.dtype);
  if (spec.out != OutDtype::same) os << '_' << to_string(spec.out);
  os << "_v" << c.vec << "_b" << c.block << "_p" << c.per_thread;
  os << (c.cache == CacheHint::streaming ? "_cs" : "_cd") << (c.fast_math ? "_fm" : "_pm");
  if (c.late_gradient) os << "_lg";
  if (layout == Layout::flat) os << "_flat";
  if (layout == Layout::wgrad_parts) os << "_wparts";
  if (layout == Layout::wgrad_sum) os << "_wsum";
  return os.str();
}

namespace {
const char* dtype_macro(Dtype d) {
  switch (d) {
    case Dtype::f32: return "KP_DTYPE_F32";
    case Dtype::f16: return "KP_DTYPE_F16";
    case Dtype::bf16: return "KP_DTYPE_BF16";
    case Dtype::f64: return "KP_DTYPE_F64";
  }
  return "KP_DTYPE_UNKNOWN";
}

// `where` names the file in compiler messages (#line), so errors point at the template or user file.
void append_text(std::ostringstream& os, const std::string& where, const std::string& text) {
  std::string quoted;
  for (char ch : where) {
    if (ch == '"' || ch == '\\') quoted += '\\';
    if (ch != '\n') quoted += ch;
  }
  os << "#line 1 \"" << quoted << "\"\n" << text;
  if (text.empty() || text.back() != '\n') os << '\n';
}

void append_file(std::ostringstream& os, const std::string& name) { append_text(os, name, template_text(name)); }

// KPLAY_FP64_MATH's counterpart (runtime/fast_fp64.hpp): "0" turns the lean float32 routines off.
bool f32_lean_allowed() {
  const char* v = std::getenv("KPLAY_F32_LEAN");
  return v == nullptr || std::strcmp(v, "0") != 0;
}
}  // namespace

RenderedKernel render_kernel(const KernelSpec& spec, const KernelConfig& c, const Dialect& dialect, Layout layout) {
  const ResolvedActivation act = resolve_activation(spec.activation);
  if (act.is_row()) return render_row_kernel(spec, c, dialect, row_layout(layout));  // the second kernel shape
  RenderedKernel k;
  k.entry = entry_name(spec, c, layout);

  // A gated float32 kernel without fast-math computes in double (gated_wide_math): its math is
  // the float64 kernel's, its storage float (KP_WIDE_F32), so act(a) * b is rounded once; on a
  // device with fast FP64 the activations that have a float32 double routine take it (KP_FAST_FP64),
  // the others the float64 kernel's math.
  const bool wide = act.gated && gated_wide_math(spec.dtype, c.fast_math);
  const Dtype math = wide ? Dtype::f64 : spec.dtype;
  std::ostringstream os;
  os << "/* kplay " << dialect.name << " kernel: " << to_string(spec) << " */\n";
  os << "#define KP_ENTRY " << k.entry << '\n';
  for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
    os << "#define " << dtype_macro(d) << ' ' << (d == math ? 1 : 0) << '\n';
  os << "#define KP_WIDE_F32 " << (wide ? 1 : 0) << '\n';
  os << "#define KP_VEC " << c.vec << '\n';
  os << "#define KP_VEC_BYTES " << c.vec * dtype_size(spec.dtype) << '\n';
  os << "#define KP_OUT_VEC_BYTES " << c.vec * out_size(spec) << '\n';
  os << "#define KP_VPT " << c.per_thread << '\n';
  os << "#define KP_BLOCK " << c.block << '\n';
  os << "#define KP_BACKWARD " << (spec.direction == Direction::backward ? 1 : 0) << '\n';
  os << "#define KP_SAVED_OUTPUT " << (spec.direction == Direction::backward && spec.saved == Saved::output ? 1 : 0)
     << '\n';
  os << "#define KP_GATED " << (act.gated ? 1 : 0) << '\n';
  os << "#define KP_OUT_F8 " << (spec.out == OutDtype::f8e4m3 ? 1 : spec.out == OutDtype::f8e5m2 ? 2 : 0) << '\n';
  os << "#define KP_STREAMING " << (c.cache == CacheHint::streaming ? 1 : 0) << '\n';
  os << "#define KP_FLAT " << (layout == Layout::flat ? 1 : 0) << '\n';
  os << "#define KP_LATE_GRAD " << (c.late_gradient ? 1 : 0) << '\n';
  // Only the per-element slope forms name these: every other kernel's source stays as it was.
  if (act.slope != SlopeForm::none) {
    os << "#define KP_SLOPE " << (act.slope == SlopeForm::weight ? 1 : 2) << '\n';
    os << "#define KP_WGRAD " << (layout == Layout::wgrad_parts ? 1 : layout == Layout::wgrad_sum ? 2 : 0) << '\n';
  }
  os << "#define KP_FAST_MATH " << (c.fast_math ? 1 : 0) << '\n';
  // Only the float32 IEEE kernels have a double path: other kernels keep one hash on every device.
  // A wide gated kernel (float32 storage, double math) takes it too, with the routines' double
  // results unrounded (templates/common/fp64_math.h, kp_d_res).
  const bool f32_storage = math == Dtype::f32 || wide;
  // accuracy=torch (config_validation: float32 only): the snippets' float formula (KP_F32_IEEE 0),
  // no double or lean routine, and torch's compiler options (no -fmad=false); backward only where
  // the activation's tier has a backward bound (torch_tier_kernel), else the exact kernel.
  const bool tier = act.torch_tier_kernel(spec.direction) && math == Dtype::f32 && !c.fast_math;
  const bool fast_fp64 = dialect.fast_fp64 && f32_storage && !c.fast_math && !tier;
  os << "#define KP_FAST_FP64 " << (fast_fp64 ? 1 : 0) << '\n';
  os << "#define KP_TORCH_TIER " << (tier ? 1 : 0) << '\n';
  // The lean float routines (templates/common/f32_math.h) for the float32 IEEE kernels of the
  // activations that have one, on every device; KPLAY_F32_LEAN=0 keeps the double or float-float
  // routines instead (to compare them). Only those kernels name it: other hashes stay as they were.
  const bool f32_ieee = math == Dtype::f32 && !c.fast_math && !tier;
  os << "#define KP_F32_IEEE " << (f32_ieee ? 1 : 0) << '\n';  // the snippets' bound-keeping float32 branch
  if (f32_ieee) os << "#define KP_F32_LEAN " << (f32_lean_allowed() ? 1 : 0) << '\n';
  // Parameters are compile-time constants (docs/design.md says why): KP_P_<NAME>, rounded for the
  // storage dtype (float32's in a wide kernel, written exactly).
  os << act.param_defines(spec.dtype, spec.direction, wide);
  append_file(os, dialect.prelude);
  append_file(os, "common/narrow_math.h");
  // Float-float building blocks for the float32 snippets (IEEE only: not with fast-math).
  if (math == Dtype::f32 && !c.fast_math) {
    append_file(os, "common/precise_math.h");
    append_file(os, "common/precise_grad.h");  // snippets define their backward in every kernel
    append_file(os, "common/fp64_math.h");     // empty unless KP_FAST_FP64
    append_file(os, "common/f32_math.h");
  }
  if (tier) append_file(os, "common/tier_math.h");
  // Full-precision double routines that undercut the built-ins (float64 IEEE kernels only), and in
  // a wide kernel on a fast-FP64 device fp64_math.h's for the activations it has.
  if (math == Dtype::f64 && !c.fast_math) append_file(os, "common/float64_math.h");
  if (wide && fast_fp64) append_file(os, "common/fp64_math.h");
  if (act.act->user)
    append_text(os, act.act->origin.empty() ? "activation " + act.act->name : act.act->origin, act.act->snippet);
  else
    append_file(os, act.act->snippet);
  if (act.slope != SlopeForm::none) append_file(os, "common/slope.h");
  // The weight gradient's kernels are all of slope.h: the generic kernel is left out.
  if (layout != Layout::wgrad_parts && layout != Layout::wgrad_sum) append_file(os, dialect.kernel);
  k.source = os.str();

  k.options = dialect.options;
  if (dtype_size(spec.dtype) == 2)
    k.options.insert(k.options.end(), dialect.narrow_options.begin(), dialect.narrow_options.end());
  if (f32_ieee) k.options.insert(k.options.end(), dialect.precise_options.begin(), dialect.precise_options.end());
  if (c.fast_math)
    k.options.insert(k.options.end(), dialect.fast_math_options.begin(), dialect.fast_math_options.end());

  Hasher h;
  h.add(dialect.name).add(k.source).add(k.entry);
  for (const auto& o : k.options) h.add(o);
  k.hash = h.hex();
  return k;
}

}  // namespace kplay
