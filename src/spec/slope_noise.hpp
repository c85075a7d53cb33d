// RReLU's training slopes on the host, exactly as the kernels draw them (templates/common/slope.h):
// what the reference of training(rrelu) multiplies by, and what the tests check the draws of
// (range, distribution, regeneration). The stream is SplitMix64 keyed by (seed, index), not
// torch's Philox: the same seed gives the same slopes on every device and backend, not torch's.
#pragma once
#include <cstdint>

#include "kplay/types.hpp"

namespace kplay {

// The 64-bit word of element `index` (the launch's counter plus the element's index) under `seed`.
std::uint64_t rrelu_noise_word(std::uint64_t seed, std::uint64_t index);

// The slope of that element for a kernel of `dtype`: min(fma(u, upper - lower, lower), upper) in
// its compute type (float; double for float64), u the word's top 24 (53) bits over 2^24 (2^53).
// lower, upper and upper - lower are rounded to the compute type first, as the kernel's constants.
double rrelu_slope(std::uint64_t seed, std::uint64_t index, double lower, double upper, Dtype dtype);

}  // namespace kplay
