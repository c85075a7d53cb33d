// RReLU's training slopes on the host; see slope_noise.hpp.
#include "slope_noise.hpp"

#include <cmath>

namespace kplay {

std::uint64_t rrelu_noise_word(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double rrelu_slope(std::uint64_t seed, std::uint64_t index, double lower, double upper, Dtype dtype) {
  const std::uint64_t h = rrelu_noise_word(seed, index);
  if (dtype == Dtype::f64) {
    const double u = static_cast<double>(h >> 11) * 0x1p-53;
    const double r = std::fma(u, upper - lower, lower);
    return r < upper ? r : upper;
  }
  const float u = static_cast<float>(static_cast<std::uint32_t>(h >> 40)) * 0x1p-24f;
  const float r = std::fma(u, static_cast<float>(upper - lower), static_cast<float>(lower));
  const float up = static_cast<float>(upper);
  return r < up ? r : up;
}

}  // namespace kplay
