// Bounded file reads; see bounded_file.hpp.
#include "bounded_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kplay/error.hpp"

namespace kplay {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void refuse_kind(const std::string& what, mode_t mode) {
  throw Error(ErrorCode::invalid_argument,
              what + " is " + kind_of(mode) + ", not a regular file; kplay reads only regular files");
}

[[noreturn]] void refuse_size(const std::string& what, std::uint64_t max_bytes, const std::string& size) {
  throw Error(ErrorCode::invalid_argument, what + " is larger than " + byte_limit_text(max_bytes) +
                                               (size.empty() ? "" : " (" + size + ")") + "; refused before reading");
}

[[noreturn]] void open_failed(const std::string& what, int err) {
  if (err == ENOENT || err == ENOTDIR)
    throw Error(ErrorCode::invalid_argument, what + " cannot be opened (no such file)");
  throw Error(ErrorCode::io_failed, what + " cannot be opened (" + std::strerror(err) + ")");
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads to the end or to limit + 1 bytes, whichever comes first.
std::string read_up_to(int fd, std::uint64_t limit, const std::string& what) {
  std::string out;
  char buf[65536];
  while (out.size() <= limit) {
    const std::uint64_t want = std::min<std::uint64_t>(sizeof buf, limit + 1 - out.size());
    const ssize_t got = ::read(fd, buf, static_cast<std::size_t>(want));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::io_failed, what + " cannot be read (" + std::strerror(errno) + ")");
    }
    if (got == 0) break;
    out.append(buf, static_cast<std::size_t>(got));
  }
  return out;
}

}  // namespace

std::string byte_limit_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string read_bounded_file(const std::string& path, std::uint64_t max_bytes, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) open_failed(what, errno);
  if (!S_ISREG(st.st_mode)) refuse_kind(what, st.st_mode);  // a FIFO is refused before open() waits on it
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    refuse_size(what, max_bytes, std::to_string(st.st_size) + " bytes");
  // O_NONBLOCK: should the path have become a FIFO since stat(), open() does not wait for a writer.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (fd.get() < 0) open_failed(what, errno);
  if (::fstat(fd.get(), &st) != 0)
    throw Error(ErrorCode::io_failed, what + " cannot be read (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) refuse_kind(what, st.st_mode);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    refuse_size(what, max_bytes, std::to_string(st.st_size) + " bytes");
  std::string text = read_up_to(fd.get(), max_bytes, what);
  if (text.size() > max_bytes) refuse_size(what, max_bytes, "it grew while being read");
  return text;
}

std::string read_bounded_stream(int fd, std::uint64_t max_bytes, const std::string& what) {
  std::string text = read_up_to(fd, max_bytes, what);
  if (text.size() > max_bytes) refuse_size(what, max_bytes, "");
  return text;
}

}  // namespace kplay
