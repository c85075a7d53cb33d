// SHA-256 (FIPS 180-4), for the content hash the kernel database records beside each compiled
// binary: unlike the FNV-1a of hash.hpp it is collision resistant, so a stored hash binds the
// bytes to their key. Parts are length-prefixed like Hasher's, so ("ab","c") and ("a","bc") differ.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace kplay {

class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, std::size_t n);  // raw bytes, no prefix
  Sha256& add(const std::string& part);             // 8-byte little-endian length, then the bytes
  std::string hex();                                // finishes: 64 lowercase hex digits

 private:
  void block(const unsigned char* p);
  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_ = 0;  // bytes
};

// SHA-256 of the raw bytes, as hex.
std::string sha256_hex(const std::string& bytes);

}  // namespace kplay
