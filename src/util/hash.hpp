// Stable content hash for cache keys: FNV-1a 64 over length-prefixed parts, so that
// ("ab","c") and ("a","bc") differ. Printed as 16 hex digits. Not cryptographic; the database
// stores the hashed inputs' summary beside the key for checking.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kplay {

class Hasher {
 public:
  Hasher& add(const std::string& part);
  Hasher& add(std::uint64_t value);
  std::uint64_t value() const { return state_; }
  std::string hex() const;

 private:
  void bytes(const void* data, std::size_t n);
  std::uint64_t state_ = 1469598103934665603ull;
};

std::string hash_hex(const std::vector<std::string>& parts);

}  // namespace kplay
