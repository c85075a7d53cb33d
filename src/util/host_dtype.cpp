// Bit-level conversions for the 16-bit dtypes; see host_dtype.hpp.
#include "host_dtype.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kplay {
namespace {
std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t u = bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (a < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    // value = a * 2^-24 units; round to nearest even in units of 2^-24.
    const float mag = from_bits(a);
    const float scaled = mag * 16777216.0f;  // exact: power of two
    const float r = std::nearbyint(scaled);  // default rounding mode: nearest even
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(r));
  }
  const std::uint32_t exp = ((a >> 23) - 127 + 15);
  std::uint32_t mant = a & 0x7fffffu;
  std::uint32_t h = (exp << 10) | (mant >> 13);
  const std::uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
  return static_cast<std::uint16_t>(sign | h);
}

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) / 16777216.0f;  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return from_bits(sign | 0x7f800000u | (mant << 13));
  return from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u = bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_bits_to_float(std::uint16_t h) { return from_bits(static_cast<std::uint32_t>(h) << 16); }

void store_element(Dtype d, void* buffer, std::size_t i, double value) {
  switch (d) {
    case Dtype::f32: static_cast<float*>(buffer)[i] = static_cast<float>(value); break;
    case Dtype::f64: static_cast<double*>(buffer)[i] = value; break;
    case Dtype::f16: static_cast<std::uint16_t*>(buffer)[i] = float_to_half_bits(static_cast<float>(value)); break;
    case Dtype::bf16: static_cast<std::uint16_t*>(buffer)[i] = float_to_bf16_bits(static_cast<float>(value)); break;
  }
}

double load_element(Dtype d, const void* buffer, std::size_t i) {
  switch (d) {
    case Dtype::f32: return static_cast<const float*>(buffer)[i];
    case Dtype::f64: return static_cast<const double*>(buffer)[i];
    case Dtype::f16: return half_bits_to_float(static_cast<const std::uint16_t*>(buffer)[i]);
    case Dtype::bf16: return bf16_bits_to_float(static_cast<const std::uint16_t*>(buffer)[i]);
  }
  return 0;
}

double round_to(Dtype d, double value) {
  unsigned char tmp[8];
  store_element(d, tmp, 0, value);
  return load_element(d, tmp, 0);
}

double next_toward(Dtype d, double v, double direction) {
  if (std::isnan(v) || v == direction) return v;
  const bool up = direction > v;
  switch (d) {
    case Dtype::f32: return std::nextafter(static_cast<float>(v), up ? HUGE_VALF : -HUGE_VALF);
    case Dtype::f64: return std::nextafter(v, direction);
    case Dtype::f16:
    case Dtype::bf16: {
      // 16-bit patterns are ordered like sign-magnitude integers: step the magnitude.
      unsigned char tmp[2];
      store_element(d, tmp, 0, v);
      std::uint16_t bits;
      std::memcpy(&bits, tmp, 2);
      const bool negative = (bits & 0x8000u) != 0;
      if ((bits & 0x7fffu) == 0) {
        bits = static_cast<std::uint16_t>(up ? 0x0001u : 0x8001u);  // the smallest subnormal
      } else {
        bits = static_cast<std::uint16_t>(up != negative ? bits + 1 : bits - 1);
      }
      std::memcpy(tmp, &bits, 2);
      return load_element(d, tmp, 0);
    }
  }
  return v;
}

double min_normal(Dtype d) {
  switch (d) {
    case Dtype::f32: return std::numeric_limits<float>::min();
    case Dtype::f64: return std::numeric_limits<double>::min();
    case Dtype::f16: return 6.103515625e-05;
    case Dtype::bf16: return std::numeric_limits<float>::min();
  }
  return 0;
}

namespace {
struct Fp8Format {
  int mantissa;  // stored mantissa bits
  int bias;
  double max;
  bool has_inf;
};
Fp8Format fp8_format(OutDtype f) {
  return f == OutDtype::f8e5m2 ? Fp8Format{2, 15, 57344.0, true} : Fp8Format{3, 7, 448.0, false};
}
}  // namespace

double fp8_max(OutDtype f) { return fp8_format(f).max; }

double fp8_to_double(OutDtype f, std::uint8_t b) {
  const Fp8Format fm = fp8_format(f);
  const int ebits = 7 - fm.mantissa;
  const int e = (b >> fm.mantissa) & ((1 << ebits) - 1);
  const int m = b & ((1 << fm.mantissa) - 1);
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if (fm.has_inf && e == (1 << ebits) - 1) return m ? std::numeric_limits<double>::quiet_NaN() : sign * HUGE_VAL;
  if (!fm.has_inf && e == (1 << ebits) - 1 && m == (1 << fm.mantissa) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(m, 1 - fm.bias - fm.mantissa);
  return sign * std::ldexp((1 << fm.mantissa) + m, e - fm.bias - fm.mantissa);
}

double fp8_ulp(OutDtype f, double v) {
  const Fp8Format fm = fp8_format(f);
  const int emin = 1 - fm.bias;
  const double a = std::fabs(v);
  const int e = a == 0 || std::isnan(a) ? emin : std::max(std::ilogb(std::min(a, fm.max)), emin);
  return std::ldexp(1.0, e - fm.mantissa);
}

std::uint8_t fp8_from_double(OutDtype f, double v) {
  const Fp8Format fm = fp8_format(f);
  if (std::isnan(v)) return f == OutDtype::f8e5m2 ? 0x7e : 0x7f;
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  double a = std::min(std::fabs(v), fm.max);  // saturate (infinities too)
  // Round to nearest even at the spacing of a's binade: exact in double, then find the code.
  const double q = fp8_ulp(f, a);
  a = std::nearbyint(a / q) * q;
  if (a > fm.max) a = fm.max;  // a tie at the top rounds to the even above, which saturates
  for (int code = 0; code < 0x80; ++code)
    if (fp8_to_double(f, static_cast<std::uint8_t>(code)) == a) return static_cast<std::uint8_t>(sign | code);
  return static_cast<std::uint8_t>(sign | 0x7f);  // not reached: every rounded value has a code
}

}  // namespace kplay
