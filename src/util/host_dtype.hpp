// Host-side storage of every dtype: rounding a double into float16 / bfloat16 / float32 / float64
// bits and reading them back, for preparing inputs and reading outputs. Round to nearest even.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kplay/types.hpp"

namespace kplay {

std::uint16_t float_to_half_bits(float f);
float half_bits_to_float(std::uint16_t h);
std::uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(std::uint16_t h);

// Element i of a buffer of dtype d.
void store_element(Dtype d, void* buffer, std::size_t i, double value);
double load_element(Dtype d, const void* buffer, std::size_t i);

// The value as it survives a round trip through dtype d.
double round_to(Dtype d, double value);

// The neighbour of v in dtype d toward `direction` (v itself if equal or NaN).
double next_toward(Dtype d, double v, double direction);

// Smallest positive normal number of d: relative errors are measured against at least this.
double min_normal(Dtype d);

// FP8 (OutDtype f8e4m3: float8_e4m3fn, 4 exponent bits, 3 mantissa bits, no infinities, NaN
// 0x7f; f8e5m2: 5 and 2, IEEE-like with infinities). fp8_from_double rounds to nearest even and
// saturates: beyond the largest finite value (448, 57344) and +-inf give it with their sign, NaN
// gives NaN, as the kernels' cvt.rn.satfinite does.
double fp8_max(OutDtype f);
double fp8_to_double(OutDtype f, std::uint8_t bits);
std::uint8_t fp8_from_double(OutDtype f, double v);
// The spacing of the FP8 format at |v| (its subnormal spacing below the smallest normal number).
double fp8_ulp(OutDtype f, double v);

}  // namespace kplay
