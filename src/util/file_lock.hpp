// Cross-process locks on files: flock() on <dir>/<name>.lock. The kernel releases a flock when
// its holder exits or dies, so a SIGKILLed compile never blocks the others. The holder unlinks
// the file on release, and a waiter that wakes up on an unlinked file retries, so the lock
// directory does not fill up and two holders can never coexist.
// Used by the kernel database (one compile of a key at a time) and the OpenCL backend (one
// build of a program at a time, whatever database each process uses).
#pragma once
#include <memory>
#include <string>

namespace kplay {

// A held lock; destroying it releases it.
class HeldLock {
 public:
  virtual ~HeldLock() = default;
};

// Blocks until held. `name` may be any text; unsafe characters are hashed away. Creates `dir`
// as a private directory (private_dir.hpp). Throws Error(io_failed) when the directory or file
// cannot be created.
std::unique_ptr<HeldLock> acquire_file_lock(const std::string& dir, const std::string& name);

}  // namespace kplay
