// FNV-1a 64 with length prefixes; see hash.hpp.
#include "hash.hpp"

#include <cstdio>

namespace kplay {

void Hasher::bytes(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    state_ ^= p[i];
    state_ *= 1099511628211ull;
  }
}

Hasher& Hasher::add(std::uint64_t value) {
  unsigned char le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(value >> (8 * i));
  bytes(le, 8);
  return *this;
}

Hasher& Hasher::add(const std::string& part) {
  add(static_cast<std::uint64_t>(part.size()));
  bytes(part.data(), part.size());
  return *this;
}

std::string Hasher::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(state_));
  return buf;
}

std::string hash_hex(const std::vector<std::string>& parts) {
  Hasher h;
  for (const auto& p : parts) h.add(p);
  return h.hex();
}

}  // namespace kplay
