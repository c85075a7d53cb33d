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

// Every built-in activation with a reference, once: the declarations below and the
// instantiations in reference.cpp both expand it.
#define KPLAY_REFERENCE_ACTIVATIONS(X) \
  X(relu)                              \
  X(relu6)                             \
  X(leaky_relu)                        \
  X(elu)                               \
  X(celu)                              \
  X(selu)                              \
  X(gelu)                              \
  X(silu)                              \
  X(mish)                              \
  X(softplus)                          \
  X(softsign)                          \
  X(sigmoid)                           \
  X(tanh)                              \
  X(hardtanh)                          \
  X(hardsigmoid)                       \
  X(hardswish)                         \
  X(logsigmoid)                        \
  X(tanhshrink)                        \
  X(softshrink)                        \
  X(hardshrink)                        \
  X(threshold)

#define KPLAY_REFERENCE_DECLARE(name)                  \
  template <typename T>                                \
  T name(T x, const double* p);                        \
  template <typename T>                                \
  T name##_grad_from_input(T g, T x, const double* p); \
  template <typename T>                                \
  T name##_grad_from_output(T g, T y, const double* p);
KPLAY_REFERENCE_ACTIVATIONS(KPLAY_REFERENCE_DECLARE)
#undef KPLAY_REFERENCE_DECLARE

}  // namespace kplay::reference
