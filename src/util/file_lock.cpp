// flock()-based locks; see file_lock.hpp.
#include "file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "hash.hpp"
#include "kplay/error.hpp"
#include "private_dir.hpp"

namespace kplay {
namespace {

class FileLock : public HeldLock {
 public:
  FileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileLock() override {
    ::unlink(path_.c_str());  // still held: nobody else can be holding this file
    ::close(fd_);             // releases the flock
  }

 private:
  int fd_;
  std::string path_;
};

std::string file_name(const std::string& name) {
  bool safe = !name.empty() && name.size() <= 96 && name[0] != '.';
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) safe = false;
  return (safe ? name : "h" + hash_hex({name})) + ".lock";
}

}  // namespace

std::unique_ptr<HeldLock> acquire_file_lock(const std::string& dir, const std::string& name) {
  ensure_private_directory(dir, "lock directory", true);
  const std::string path = dir + "/" + file_name(name);
  for (;;) {
    // O_NOFOLLOW: a symlink in place of a lock file is refused, never followed.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw Error(ErrorCode::io_failed, "cannot open the lock file " + path + ": " + std::strerror(errno));
    int rc;
    while ((rc = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
      const int err = errno;
      ::close(fd);
      throw Error(ErrorCode::io_failed, "cannot lock " + path + ": " + std::strerror(err));
    }
    // The previous holder may have unlinked the file while we waited: then lock the new one.
    struct stat held {
    }, current{};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 && held.st_ino == current.st_ino &&
        held.st_dev == current.st_dev)
      return std::make_unique<FileLock>(fd, path);
    ::close(fd);
  }
}

}  // namespace kplay
