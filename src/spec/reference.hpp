// Host reference of every built-in activation, written from the definitions (torch's formulas,
// constants and branch conditions) and not from the kernel templates, so a slip in a template
// shows up as a test failure instead of being copied into the expected values.
// `p` holds the parameters in the registry's order (activations.cpp).
//
// One body per function, instantiated for two types (reference.cpp): double, the reference of
// float32 and the 16-bit dtypes (29 bits and more beyond theirs), and long double, the reference
// of float64 kernels, which a double reference would measure together with its own rounding.
// long double is x87 extended on x86-64 (64-bit significand: 11 bits beyond double).
//
// reference.cpp lists each activation's functions once, under its registry name, and the registry
// takes them from there by name: a new reference is written in reference.cpp alone.
#pragma once
#include <string>
#include <vector>

namespace kplay::reference {

template <typename T>
using Forward = T (*)(T x, const double* p);
template <typename T>
using Grad = T (*)(T grad, T saved, const double* p);

// One activation's reference, in double and in long double. The from_output pair is nullptr
// where the derivative does not follow from the output.
struct Functions {
  Forward<double> forward = nullptr;
  Grad<double> from_input = nullptr, from_output = nullptr;
  Forward<long double> forward_ld = nullptr;
  Grad<long double> from_input_ld = nullptr, from_output_ld = nullptr;
};

// The reference of the built-in named `name`, or nullptr when reference.cpp has none.
const Functions* find(const std::string& name);
// Every name reference.cpp has a reference for (tests match them against the registry).
std::vector<std::string> names();

// selu's forward, for tests that compare with it directly (tests/test_api.cpp).
template <typename T>
T selu(T x, const double* p);

}  // namespace kplay::reference
