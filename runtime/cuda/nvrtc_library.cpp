// Finding libnvrtc; see nvrtc_library.hpp.
#include "nvrtc_library.hpp"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>

#include "cuda_api.hpp"
#include "kplay/error.hpp"
#include "util/loaded_from.hpp"

namespace kplay::rt::cuda {
namespace {

constexpr int kFlags = RTLD_NOW | RTLD_LOCAL;
// Where each wheel puts it, relative to site-packages: CUDA 13's nvidia-cuda-nvrtc, then CUDA 12's
// nvidia-cuda-nvrtc-cu12.
const char* const kWheelFiles[] = {"nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"};

bool exists(const std::string& path, bool dir) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

std::string parent(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? std::string() : path.substr(0, slash);
}

std::string base_name(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// The file the loader mapped for a library opened by name.
std::string mapped_path(void* handle, const std::string& name) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
  return name;
}

std::string last_dlerror() {
  const char* e = ::dlerror();
  return e ? e : "dlopen failed";
}

// NVRTC opens libnvrtc-builtins.so.<major>.<minor> by name, through the loader's search, not from
// its own folder: the pip wheel's NVRTC 13.0 cannot compile a kernel unless its folder is on the
// loader's path. The loader hands back a library of that name that is already loaded, so the one
// beside a libnvrtc opened by path (or beside the file a symlink names) is opened first, and kept
// for the process, as NVRTC is.
void open_builtins_beside(void* nvrtc, const std::string& path) {
  const auto version = reinterpret_cast<decltype(&api::nvrtcVersion)>(::dlsym(nvrtc, "nvrtcVersion"));
  int major = 0, minor = 0;
  if (!version || version(&major, &minor) != NVRTC_SUCCESS) return;
  const std::string name = "/libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
  char real[PATH_MAX];
  for (const std::string& dir : {parent(path), ::realpath(path.c_str(), real) ? parent(real) : std::string()})
    if (!dir.empty() && exists(dir + name, false) && ::dlopen((dir + name).c_str(), kFlags)) return;
}

// A libnvrtc opened by path, with its builtins.
NvrtcLibrary by_path(void* handle, const std::string& path, const std::string& found) {
  open_builtins_beside(handle, path);
  return {handle, path, found};
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

}  // namespace

NvrtcSearch NvrtcSearch::standard() {
  NvrtcSearch s;
  const char* env = std::getenv("KPLAY_NVRTC");
  s.env = env ? env : "";
  s.loaded_sonames = {"libnvrtc.so.13", "libnvrtc.so.12"};
  s.loader_names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  s.toolkit_dirs = {"/usr/local/cuda/lib64"};
  s.site_packages = site_packages_beside(loaded_from_dir());
  return s;
}

std::vector<std::string> site_packages_beside(const std::string& loaded_from) {
  std::vector<std::string> roots;
  const std::string up = parent(loaded_from);
  if (up.empty()) return roots;
  if (base_name(loaded_from) == "kplay" && exists(up, true)) roots.push_back(up);  // site-packages/kplay/_core.so
  if (base_name(loaded_from) == "bin") {                                           // <venv>/bin/kplay
    glob_t g{};
    if (::glob((up + "/lib/python3*/site-packages").c_str(), GLOB_ONLYDIR, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) roots.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  return roots;
}

std::string find_wheel_nvrtc(const std::vector<std::string>& roots) {
  for (const auto& root : roots)
    for (const char* file : kWheelFiles)
      if (exists(root + "/" + file, false)) return root + "/" + file;
  return "";
}

NvrtcLibrary open_nvrtc_library(const NvrtcSearch& where) {
  if (!where.env.empty()) {
    void* h = ::dlopen(where.env.c_str(), kFlags);
    if (!h)
      throw Error(ErrorCode::invalid_argument,
                  "KPLAY_NVRTC=" + where.env + " could not be loaded as NVRTC: " + last_dlerror());
    return by_path(h, mapped_path(h, where.env), "KPLAY_NVRTC");
  }
  // torch may have loaded one from its wheel already; a second NVRTC would only cost memory.
  for (const auto& soname : where.loaded_sonames)
    if (void* h = ::dlopen(soname.c_str(), kFlags | RTLD_NOLOAD))
      return {h, mapped_path(h, soname), "already loaded in this process"};
  for (const auto& name : where.loader_names)
    if (void* h = ::dlopen(name.c_str(), kFlags)) return {h, mapped_path(h, name), "on the library path"};
  for (const auto& dir : where.toolkit_dirs)
    for (const auto& name : where.loader_names) {
      std::string path = dir;
      path += "/" + name;
      if (!exists(path, false)) continue;
      if (void* h = ::dlopen(path.c_str(), kFlags)) return by_path(h, path, "in " + dir);
    }
  const std::string wheel = find_wheel_nvrtc(where.site_packages);
  if (!wheel.empty()) {
    void* h = ::dlopen(wheel.c_str(), kFlags);
    if (!h)
      throw Error(ErrorCode::no_device, "NVRTC of the pip wheel " + wheel + " could not be loaded: " + last_dlerror());
    return by_path(h, wheel, "from the pip wheel nvidia-cuda-nvrtc");
  }
  std::string looked = "NVRTC not found: KPLAY_NVRTC is not set";
  if (!where.loader_names.empty()) looked += "; no " + join(where.loader_names, ", ") + " on the library path";
  if (!where.toolkit_dirs.empty()) looked += " nor in " + join(where.toolkit_dirs, ", ");
  looked += where.site_packages.empty() ? "; no site-packages beside kplay to look for the nvidia-cuda-nvrtc wheel in"
                                        : "; no nvidia-cuda-nvrtc wheel in " + join(where.site_packages, ", ");
  throw Error(ErrorCode::no_device, looked +
                                        ". Install the CUDA toolkit's NVRTC, or pip install nvidia-cuda-nvrtc, or set "
                                        "KPLAY_NVRTC to a libnvrtc.so");
}

}  // namespace kplay::rt::cuda
