// Host reference of every built-in activation, written from the definitions (torch's formulas,
// constants and branch conditions) and not from the kernel templates, so a slip in a template
// shows up as a test failure instead of being copied into the expected values.
// `p` holds the parameters in the registry's order (activations.cpp).
//
// One body per function, instantiated for two types (reference.cpp): double, the reference of
// float32 and the 16-bit dtypes (29 bits and more beyond theirs), and long double, the reference
// of float64 kernels, which a double reference would measure together with its own rounding.
// long double is x87 extended on x86-64 (64-bit significand: 11 bits beyond double).
#pragma once

namespace kplay::reference {

#define KPLAY_REFERENCE(name)                          \
  template <typename T>                                \
  T name(T x, const double* p);                        \
  template <typename T>                                \
  T name##_grad_from_input(T g, T x, const double* p); \
  template <typename T>                                \
  T name##_grad_from_output(T g, T y, const double* p);

KPLAY_REFERENCE(relu)
KPLAY_REFERENCE(relu6)
KPLAY_REFERENCE(leaky_relu)
KPLAY_REFERENCE(elu)
KPLAY_REFERENCE(celu)
KPLAY_REFERENCE(selu)
KPLAY_REFERENCE(gelu)
KPLAY_REFERENCE(silu)
KPLAY_REFERENCE(mish)
KPLAY_REFERENCE(softplus)
KPLAY_REFERENCE(softsign)
KPLAY_REFERENCE(sigmoid)
KPLAY_REFERENCE(tanh)
KPLAY_REFERENCE(hardtanh)
KPLAY_REFERENCE(hardsigmoid)
KPLAY_REFERENCE(hardswish)
KPLAY_REFERENCE(logsigmoid)
KPLAY_REFERENCE(tanhshrink)
KPLAY_REFERENCE(softshrink)
KPLAY_REFERENCE(hardshrink)
KPLAY_REFERENCE(threshold)

#undef KPLAY_REFERENCE

}  // namespace kplay::reference
