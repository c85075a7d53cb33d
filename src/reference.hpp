// Double-precision host reference of every built-in activation, written from the definitions
// (torch's formulas, constants and branch conditions) and not from the kernel templates, so a slip
// in a template shows up as a test failure instead of being copied into the expected values.
// `p` holds the parameters in the registry's order (activations.cpp).
#pragma once

namespace kplay::reference {

#define KPLAY_REFERENCE(name)                                         \
  double name(double x, const double* p);                             \
  double name##_grad_from_input(double g, double x, const double* p); \
  double name##_grad_from_output(double g, double y, const double* p);

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
