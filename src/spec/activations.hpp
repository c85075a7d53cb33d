// The activation registry: one entry per activation ties its name and parameters to its template
// snippet, its reference (double; long double for float64), the points where its definition changes branch, its
// accuracy bounds (its arithmetic is counted apart, activation_costs.hpp). Adding a built-in = one snippet in
// templates/activations/, its reference functions in reference.cpp, one entry in
// activations.cpp and a row in tests/activation_cases.hpp (docs/adding-an-activation.md).
//
// Users add activations of their own at run time (user_activations.cpp): a snippet of the same
// form, with no host reference of its own; it is checked against itself compiled for float64.
#pragma once
#include <string>
#include <vector>

#include "kplay/types.hpp"

namespace kplay {

// A parameter of an activation. Numbers are finite doubles; a choice (gelu's `approximate`) is
// stored as the index of the chosen word. Values reach the kernel as compile-time constants:
// KP_P_<NAME> (a literal of the compute type) or, for a choice, KP_P_<NAME>_<WORD> set to 0 or 1.
// Which type torch converts a parameter to before it compares or computes with it. Most kernels
// take `value.to<opmath_t>()` (float for the 16-bit dtypes); the shrinks and threshold take
// `value.to<scalar_t>()`, the tensor's own dtype, and so does hardtanh's backward only.
enum class ParamType { compute, tensor, tensor_in_backward };

struct ParamDef {
  const char* name;
  double default_value;              // NaN: required
  std::vector<const char*> choices;  // non-empty: a choice parameter
  ParamType type = ParamType::compute;
};

// Reference math on (value, parameters in ParamDef order), in double and in long double (the
// reference of float64 kernels: reference.hpp).
template <typename T>
using RefForwardOf = T (*)(T x, const double* p);
template <typename T>
using RefGradOf = T (*)(T grad, T saved, const double* p);
using RefForward = RefForwardOf<double>;
using RefGrad = RefGradOf<double>;

// Bounds, in ulps of the dtype, that the kernels keep against the reference (long double for
// float64, double otherwise) over every input (backward: where the exact result is a normal
// number). Indexed [dtype][direction].
struct UlpBounds {
  double f32_forward = 2, f32_backward = 2;
  double narrow_forward = 1, narrow_backward = 1;  // float16 and bfloat16
  double f64_forward = 4, f64_backward = 4;
  double get(Dtype d, Direction dir) const;
};

// A value the snippet takes as KP_P_<NAME> beside the parameters, derived from them in double and
// rounded like a compute parameter (rrelu's mean slope (lower + upper) / 2, as torch forms it).
struct DerivedParam {
  const char* name;
  double (*value)(const double* p);
};

// The row shape (the softmax family): a function of a whole row, computed by the row kernel
// (templates/common/rowwise.h) over the last dimension's `cols` elements, its reference in
// row_reference.hpp. `negate`: softmax of -x (softmin); `log`: log_softmax. Backward always
// takes the saved output y, as torch saves it.
struct RowForm {
  bool log = false;
  bool negate = false;
};

struct Activation {
  std::string name;     // identifier: the CLI word, part of entry names
  std::string snippet;  // built-in: template path; user: the snippet text itself
  std::vector<ParamDef> params;
  std::vector<DerivedParam> derived;
  RefForward forward = nullptr;        // nullptr for user activations (self-referenced)
  RefGrad grad_from_input = nullptr;   // nullptr: no backward
  RefGrad grad_from_output = nullptr;  // nullptr: the output does not determine the derivative
  // The same three in long double: the reference of float64 kernels.
  RefForwardOf<long double> forward_ld = nullptr;
  RefGradOf<long double> grad_from_input_ld = nullptr, grad_from_output_ld = nullptr;
  // Extra condition for grad_from_output on the parameters (leaky_relu needs a slope > 0).
  bool (*output_determines_grad)(const double* p) = nullptr;
  // Refuses parameter values the definition does not allow: returns a message, or "" if fine.
  std::string (*check_params)(const double* p) = nullptr;
  // Points where the definition changes branch (thresholds, clamps): tests and sweeps plant each
  // one and its neighbours in the dtype.
  std::vector<double> (*edges)(const double* p) = nullptr;
  UlpBounds bounds;
  // The torch accuracy tier, where an activation has one: a choice parameter `accuracy` (exact,
  // the default, or torch) that gives float32 forward kernels the snippet's float formula compiled
  // as torch compiles its own (contraction on, library expf/tanhf/log1pf), held to this float32
  // bound, within torch's own measured error (docs/accuracy.md, "The torch tier"). 0: no tier.
  double torch_tier_forward = 0;
  // The tier's bound for parameter values other than the defaults, from the one above (nullptr:
  // the same): softplus's beta x and celu's x / alpha are rounded in float, as torch rounds them.
  double (*torch_tier_params)(double bound, const double* p) = nullptr;
  // The tier's float32 backward: the snippet's float derivative, held to this bound, within
  // torch's own backward error over every float32 (docs/experiments/torch_float32_ulp); 0: the
  // tier's backward is the exact kernel. By parameter values as above.
  double torch_tier_backward = 0;
  double (*torch_tier_backward_params)(double bound, const double* p) = nullptr;
  // Bounds that depend on a parameter's value, given the ones above: nullptr if none do (gelu's
  // float64 forward is held to 8 ulp, 4096 under approximate='tanh').
  UlpBounds (*param_bounds)(UlpBounds b, const double* p) = nullptr;
  // What `--act all` runs when a parameter has no default (threshold: torch's documented example).
  std::string example;
  // Autograd's default saved tensor (kplay.torch): the output where the derivative follows
  // exactly from it, or where torch saves the output too (sigmoid, tanh); else the input.
  bool saves_output = false;
  // torch.nn's class for it ("LeakyReLU"; "" where torch has none) and whether torch's module
  // and function take inplace=: what kplay.nn and replace_activations are built from.
  std::string torch_class;
  bool torch_inplace = false;
  // Row activations only (row_activations()): is_row set, the family member in row_form.
  bool is_row = false;
  RowForm row_form;
  // User activations only.
  bool user = false;
  std::string origin;       // the file it came from, for #line and messages ("" if registered)
  std::string source_hash;  // hash of the snippet text
};

// The kernel forms whose slope differs per element (templates/common/slope.h): x > 0 ? x : s x
// with s read from PReLU's weight tensor (`prelu`: one per channel, channel = dim 1, or one in
// all) or drawn per element from a counter-based hash of (seed, index) (`training(rrelu(...))`,
// RReLU in training; plain `rrelu` is its evaluation, the mean slope). Their kernels take the
// weight, the channel layout and the seed at run time (runtime/backend.hpp, KernelArgs::slope).
enum class SlopeForm { none, weight, random };

// An activation with its parameter values, as named by text (see activation_text.hpp).
//
// gated(ACT), for any built-in ACT with its parameters or a user snippet, is the gated form
// out = act(a) * b (SwiGLU is gated(silu)): `act` and `params` are ACT's, `gated` is set and
// `canonical` is "gated(" + ACT's canonical text + ")". Its backward writes grad_a = g act'(a) b
// and grad_b = g act(a) from the saved inputs a and b (docs/activations.md, "Gated activations").
struct ResolvedActivation {
  const Activation* act = nullptr;
  std::vector<double> params;  // one per act->params, defaults filled in
  std::string canonical;       // the text that names it everywhere; parameters at their default omitted
  bool gated = false;
  std::string inner;  // gated: ACT's canonical text; training(rrelu): rrelu's
  // prelu: act is leaky_relu (the family whose slope it reads from a tensor), params its default;
  // training(rrelu(...)): act and params are rrelu's.
  SlopeForm slope = SlopeForm::none;

  bool has_backward() const { return act->user ? user_backward : (act->is_row || act->grad_from_input != nullptr); }
  bool is_row() const { return act->is_row; }
  bool torch_tier() const;                    // accuracy=torch given
  bool torch_tier_kernel(Direction d) const;  // and the tier has a kernel of its own for d
  std::string exact_canonical() const;        // canonical without accuracy=torch (the tier's tuning)
  bool has_grad_from_output() const;          // never for gated: its backward takes a and b
  // act->bounds adjusted to these parameter values; for gated, the bounds of act(a) * b
  // (gated_bounds).
  UlpBounds bounds() const;
  bool user_backward = false, user_backward_from_output = false;  // what a user snippet defines
  // Compile-time definitions of the parameters for a kernel of `dtype` and `direction`.
  // exact_literals: each value written as the double it was rounded to (a float32 kernel whose
  // math runs in double, KP_WIDE_F32, takes float32's parameters in double literals).
  std::string param_defines(Dtype dtype = Dtype::f32, Direction direction = Direction::forward,
                            bool exact_literals = false) const;
  // "_h1a2b3c4d" when the name alone does not identify the kernel (parameters, user snippet).
  std::string entry_suffix() const;
};

const std::vector<Activation>& activations();  // the built-ins of the element-wise shape
// The built-ins of the row shape (softmax, log_softmax, softmin): listed apart, so that `--act
// all` and every loop over the element-wise kernels stay as they are; find_activation and
// resolve_activation know both.
const std::vector<Activation>& row_activations();
std::string row_activation_names();  // "softmax, log_softmax, softmin"

// Name, parameters, or a user snippet (path, registered name, or a name found on
// KPLAY_ACTIVATION_PATH). Throws Error(invalid_argument) naming what is wrong: an unknown
// activation (listing the known ones), an unknown parameter (listing the known ones), a missing
// required parameter, a value out of range, malformed text. Cached: a repeat costs a map lookup.
ResolvedActivation resolve_activation(const std::string& text);

// The built-in or user activation named exactly `name` (no parameters). Throws like above.
const Activation& find_activation(const std::string& name);

std::string activation_names();  // "relu, relu6, ..."

// Every built-in as `--act all` runs it: its name, or its example where a parameter is required.
std::vector<std::string> all_activation_texts();

// The spec a kernel is tuned as and stored under: a float32 backward named with accuracy=torch,
// of an activation whose tier has no backward kernel (torch_tier_backward 0), runs the exact
// kernel (src/codegen/codegen.cpp), so it takes and stores the exact text's tunings; every other
// spec is its own.
KernelSpec tuning_spec(KernelSpec spec);

// The bounds of gated(ACT) from ACT's own (docs/activations.md, "Gated activations"): float32
// computes act(a) * b in double and rounds once (2 ulp forward and backward); float16 and
// bfloat16 compute in float32 and round once (1 ulp forward); float64 rounds act(a) before the
// product, whose error in ulps of the result is up to twice that of act(a) in its own ulps.
UlpBounds gated_bounds(const UlpBounds& act);

// Whether a gated kernel of `dtype` computes in double (float32 without fast-math: one rounding
// of act(a) * b, whatever ACT's float32 error; codegen's KP_WIDE_F32).
bool gated_wide_math(Dtype dtype, bool fast_math);

// Parameters rounded as torch converts them for a tensor of `dtype` (ParamType): to the compute
// type (float below float64), or to the tensor's dtype. Kernels and the reference use these.
std::vector<double> params_for(const ResolvedActivation& a, Dtype dtype, Direction direction = Direction::forward);

}  // namespace kplay
