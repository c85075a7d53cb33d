// See loaded_from.hpp.
#include "loaded_from.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

namespace kplay {
namespace {

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string parent(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash == 0 ? 1 : slash);
}

}  // namespace

std::string loaded_from_dir() {
  Dl_info info{};
  std::string file;
  // A shared object (libkplay.so, kplay/_core.so) is named by its path. The main program may be
  // named by argv[0] alone ("kplay", found on PATH): then /proc/self/exe says where it is.
  if (::dladdr(reinterpret_cast<void*>(&loaded_from_dir), &info) && info.dli_fname &&
      std::string(info.dli_fname).find('/') != std::string::npos)
    file = real_path(info.dli_fname);
  if (file.empty()) file = real_path("/proc/self/exe");
  return parent(file);
}

}  // namespace kplay
