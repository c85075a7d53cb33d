// Cross-process locks on files: flock() on <dir>/<name>.lock. The kernel releases a flock when
// its holder exits or dies, so a SIGKILLed compile never blocks the others. The holder unlinks
// the file on release, and a waiter that wakes up on an unlinked file retries, so the lock
// directory does not fill up and two holders can never coexist.
#pragma once
#include <memory>
#include <string>

#include "../engine.hpp"

namespace kplay {

// Blocks until held. `name` may be any text; unsafe characters are hashed away. Creates `dir`.
// Throws Error(io_failed) when the directory or file cannot be created.
std::unique_ptr<BinaryStore::KeyLock> acquire_file_lock(const std::string& dir, const std::string& name);

}  // namespace kplay
