// Reading a file whose size nobody vouches for (an import, a snippet, a template from
// KPLAY_TEMPLATE_DIR): regular files only, and the size checked before a byte is read, so a path
// such as /dev/zero, a FIFO or a multi-gigabyte file is refused at once instead of read until
// memory runs out or forever. Every file kplay reads goes through here.
#pragma once
#include <cstdint>
#include <string>

namespace kplay {

// The whole of `path`, a regular file of at most `max_bytes`. `what` names it in messages, e.g.
// "activation snippet './my_act.h'". Throws Error(invalid_argument) when the path does not exist,
// is not a regular file (a character or block device, a FIFO, a socket, a directory) or holds more
// than max_bytes, and Error(io_failed) when it exists but cannot be read (permissions, I/O error).
// A FIFO is never opened (opening one waits for a writer); anything else is opened without
// blocking and checked again on the open descriptor, so a swap of the path after the first check
// is caught too.
std::string read_bounded_file(const std::string& path, std::uint64_t max_bytes, const std::string& what);

// At most `max_bytes` read from the descriptor `fd` to its end (standard input for `-`): throws
// Error(invalid_argument) as soon as more arrive, having read at most max_bytes + 1.
std::string read_bounded_stream(int fd, std::uint64_t max_bytes, const std::string& what);

// "1 MiB", "64 MiB", "512 KiB", "100 bytes": a limit as messages print it.
std::string byte_limit_text(std::uint64_t bytes);

}  // namespace kplay
