// See output_file.hpp.
#include "output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "kplay/error.hpp"

namespace kplay::cli {
namespace {

[[noreturn]] void failed(const std::string& flag, const std::string& path, int err) {
  throw Error(ErrorCode::io_failed, flag + " " + path + ": cannot write (" + std::strerror(err) + ")");
}

}  // namespace

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    std::fflush(stdout);
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0 ||
        std::ferror(stdout))
      failed(flag, "(standard output)", errno ? errno : EIO);
    return;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) failed(flag, path, errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      failed(flag, path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) failed(flag, path, errno);  // NFS and friends report write errors here
}

void check_output_file(const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) failed(flag, path, errno);
  ::close(fd);
}

}  // namespace kplay::cli
