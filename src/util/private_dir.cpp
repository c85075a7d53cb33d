// Safe creation of kplay's own directories; see private_dir.hpp.
#include "private_dir.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
}  // namespace

void ensure_private_directory(const std::string& dir_text, const std::string& what, bool owned_only) {
  const fs::path dir = fs::path(dir_text).lexically_normal();
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
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  const bool must_be_ours = owned_only || shared_directory(parent);
  if (S_ISLNK(st.st_mode)) {
    if (must_be_ours) refuse(what, dir_text, "it is a symbolic link (refusing to follow it)");
    if (::stat(dir.c_str(), &st) != 0) refuse(what, dir_text, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) refuse(what, dir_text, "it is not a directory");
  if (must_be_ours && st.st_uid != ::getuid())
    refuse(what, dir_text, "it belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  // Ours but writable by others (an older kplay under umask 002, say): close it rather than refuse.
  if (must_be_ours && (st.st_mode & (S_IWGRP | S_IWOTH)) && ::chmod(dir.c_str(), st.st_mode & 0755) != 0)
    refuse(what, dir_text,
           std::string("others may write into it and it cannot be restricted: ") + std::strerror(errno));
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
