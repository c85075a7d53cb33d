// PoCL's kernel cache folder, checked like kplay's own; see pocl_cache.hpp.
#include "pocl_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "kplay/error.hpp"
#include "util/private_dir.hpp"

namespace kplay::rt::opencl {
namespace {
std::string chosen;
std::string refusal;  // set when no folder can be trusted: OpenCL is not used

// The folder is this process's alone (mkdtemp, mode 0700); PoCL leaves an empty temporary file in it.
void remove_temporary_folder() {
  std::error_code ec;
  std::filesystem::remove_all(chosen, ec);
}

void warn(const std::string& message) { std::fprintf(stderr, "kplay: warning: %s\n", message.c_str()); }

// Where PoCL would look without POCL_CACHE_DIR: $XDG_CACHE_HOME/pocl (set and not empty), else
// $HOME/.cache/pocl, for messages.
std::string pocl_default() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/pocl";
  const char* home = std::getenv("HOME");
  return home ? std::string(home) + "/.cache/pocl" : std::string("/tmp/pocl");
}

// A new folder of this process's own, where another user cannot replace what PoCL writes (in
// /tmp, whose sticky bit keeps others from renaming it), or "" when none can be made.
std::string private_temporary_folder() {
  std::string pattern = "/tmp/kplay-pocl-XXXXXX";
  if (!untrusted_path_reason("/tmp").empty() || !::mkdtemp(pattern.data())) return {};
  return pattern;
}

void settle() {
  std::string why;  // why the usual folder was not taken
  if (const char* set = std::getenv("POCL_CACHE_DIR"); set && *set) {
    why = untrusted_path_reason(set);
    if (why.empty()) {
      chosen = set;
      return;
    }
    why = "POCL_CACHE_DIR " + std::string(set) + " is refused: " + why;
  } else {
    const std::string folder = user_cache_directory() + "/pocl";
    try {
      ensure_private_directory(folder, "PoCL kernel cache folder", true);
      ::setenv("POCL_CACHE_DIR", folder.c_str(), 1);
      chosen = folder;
      return;
    } catch (const std::exception& e) {
      why = "PoCL's kernel cache cannot go where it would (" + pocl_default() + ") or into kplay's folder: " + e.what();
    }
  }
  // Compiled kernels then live only as long as each program: PoCL builds them in fresh folders
  // below this one and removes them again.
  ::setenv("POCL_KERNEL_CACHE", "0", 1);
  chosen = private_temporary_folder();
  if (!chosen.empty()) {
    ::setenv("POCL_CACHE_DIR", chosen.c_str(), 1);
    std::atexit(remove_temporary_folder);
    warn(why + "; PoCL's kernel cache is off for this run (kernels are compiled again each time), in " + chosen);
    return;
  }
  refusal = why + "; no private folder could be made in /tmp either";
}
}  // namespace

void settle_pocl_cache() {
  static std::once_flag once;
  std::call_once(once, settle);
  if (!refusal.empty()) throw Error(ErrorCode::no_device, "no OpenCL device used: " + refusal);
}

std::string pocl_cache_folder() { return chosen; }

}  // namespace kplay::rt::opencl
