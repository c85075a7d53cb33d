// Safe creation of kplay's own directories and the ownership check of a path; see private_dir.hpp.
#include "private_dir.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "kplay/error.hpp"

namespace kplay {
namespace fs = std::filesystem;

namespace {
[[noreturn]] void refuse(const std::string& what, const std::string& dir, const std::string& why) {
  throw Error(ErrorCode::io_failed, "cannot use the " + what + " " + dir + ": " + why);
}

// World-writable: anybody may have put something there (sticky or not).
bool shared_directory(const fs::path& dir) {
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH);
}

bool trusted_owner(uid_t owner) { return owner == ::geteuid() || owner == 0; }

std::string mode_text(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// One component that is not a symlink: its owner and who may write to it.
std::string check_component(const fs::path& p, const struct stat& st) {
  if (!trusted_owner(st.st_uid))
    return p.string() + " belongs to another user (uid " + std::to_string(st.st_uid) +
           "), who could have put there what kplay would read";
  const bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_dir)
    return p.string() + " may be written by its group or by others (mode " + mode_text(st.st_mode) + "; `chmod go-w " +
           p.string() + "` closes it)";
  return {};
}

std::string check_path(const fs::path& path, int depth) {
  if (depth > 32) return path.string() + ": too many levels of symbolic links";
  std::error_code ec;
  fs::path abs = path;
  if (!abs.is_absolute()) {
    abs = fs::current_path(ec) / path;
    if (ec) return "cannot resolve " + path.string() + ": " + ec.message();
  }
  abs = abs.lexically_normal();
  fs::path cur = abs.root_path();
  struct stat st {};
  if (::lstat(cur.c_str(), &st) != 0) return "cannot examine " + cur.string() + ": " + std::strerror(errno);
  if (std::string why = check_component(cur, st); !why.empty()) return why;
  for (const auto& piece : abs.relative_path()) {
    if (piece.empty() || piece == ".") continue;
    if (piece == "..") {  // lexically_normal leaves these only right below the root
      cur = cur.parent_path();
      continue;
    }
    const fs::path next = cur / piece;
    if (::lstat(next.c_str(), &st) != 0) {
      if (errno == ENOENT) return {};  // the rest does not exist yet: kplay creates it, private
      return "cannot examine " + next.string() + ": " + std::strerror(errno);
    }
    if (!S_ISLNK(st.st_mode)) {
      if (std::string why = check_component(next, st); !why.empty()) return why;
      cur = next;
      continue;
    }
    if (!trusted_owner(st.st_uid))
      return next.string() + " is a symbolic link owned by another user (uid " + std::to_string(st.st_uid) +
             "), who could point it anywhere";
    fs::path target = fs::read_symlink(next, ec);
    if (ec) return "cannot read the symbolic link " + next.string() + ": " + ec.message();
    if (target.is_relative()) target = cur / target;
    if (std::string why = check_path(target, depth + 1); !why.empty()) return why;
    const fs::path real = fs::canonical(next, ec);
    if (ec) return {};  // dangling: nothing there yet, and creating through it fails later
    cur = real;
  }
  return {};
}
}  // namespace

std::string untrusted_path_reason(const std::string& path) { return check_path(fs::path(path), 0); }

void ensure_private_directory(const std::string& dir_text, const std::string& what, bool owned_only) {
  const fs::path dir = fs::path(dir_text).lexically_normal();
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  // Nothing is created below a component someone else could have written.
  if (std::string why = untrusted_path_reason(parent.string()); !why.empty()) refuse(what, dir_text, why);
  // mkdir each missing part; EEXIST is fine (another process won the race), anything else is not.
  fs::path part;
  for (const auto& piece : dir) {
    part /= piece;
    if (piece.empty() || piece == "/" || piece == "." || piece == "..") continue;
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      refuse(what, dir_text, "cannot create " + part.string() + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) refuse(what, dir_text, std::strerror(errno));
  const bool must_be_ours = owned_only || shared_directory(parent);
  if (S_ISLNK(st.st_mode)) {
    if (must_be_ours) refuse(what, dir_text, "it is a symbolic link (refusing to follow it)");
    if (::stat(dir.c_str(), &st) != 0) refuse(what, dir_text, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) refuse(what, dir_text, "it is not a directory");
  if (must_be_ours && st.st_uid != ::geteuid())
    refuse(what, dir_text, "it belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  // Ours but writable by others (an older kplay under umask 002, say): close it rather than refuse.
  if (must_be_ours && (st.st_mode & (S_IWGRP | S_IWOTH)) && ::chmod(dir.c_str(), st.st_mode & 0755) != 0)
    refuse(what, dir_text,
           std::string("others may write into it and it cannot be restricted: ") + std::strerror(errno));
  // Once more with every part there: the parts just created, or created by someone else meanwhile.
  if (std::string why = untrusted_path_reason(dir.string()); !why.empty()) refuse(what, dir_text, why);
}

std::string user_cache_directory() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/kplay";  // a relative one is invalid: ignored
  const char* env_home = std::getenv("HOME");
  std::string home = env_home ? env_home : "";
  if (home.empty())
    if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  if (home.empty()) home = "/tmp/kplay-" + std::to_string(getuid());
  return home + "/.cache/kplay";
}

}  // namespace kplay
