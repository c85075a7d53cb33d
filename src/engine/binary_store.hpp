// The engine's interface to persistent binaries, apart from the engine so that the kernel
// database (src/database/), which implements it, depends on this alone.
#pragma once
#include <memory>
#include <string>

#include "runtime/backend.hpp"
#include "util/file_lock.hpp"

namespace kplay {

// Persistent binaries (the kernel database implements it). Keys include the device fingerprint.
class BinaryStore {
 public:
  // Held while one process compiles a key, so that others wait and reuse its binary.
  using KeyLock = HeldLock;

  virtual ~BinaryStore() = default;
  virtual bool get(const std::string& key, rt::Binary& out) = 0;
  virtual void put(const std::string& key, const rt::Binary& binary) = 0;
  virtual void drop(const std::string& key) = 0;  // a binary that failed to load
  // Blocks until this process may compile `key`; nullptr when the store cannot lock.
  virtual std::unique_ptr<KeyLock> lock(const std::string& key) = 0;
};

}  // namespace kplay
