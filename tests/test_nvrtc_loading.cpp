// Finding NVRTC at run time (runtime/cuda/nvrtc_library.hpp): KPLAY_NVRTC first and never a
// silent fallback from it, the pip wheel's layout in site-packages, and --backend auto passing
// over CUDA devices that have no compiler. The "nvrtc" suite loads the toolkit's real libnvrtc.
#include <doctest/doctest.h>

#ifdef KPLAY_WITH_CUDA
#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_runner.hpp"
#include "db_test_support.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "runtime/cuda/nvrtc_compiler.hpp"
#include "runtime/cuda/nvrtc_library.hpp"

using namespace kplay;
namespace fs = std::filesystem;
using rt::cuda::find_wheel_nvrtc;
using rt::cuda::NvrtcSearch;
using rt::cuda::open_nvrtc_library;
using rt::cuda::site_packages_beside;

namespace {
// A file at `root`/`relative`, its folders made: a symlink to `target`, or an empty file.
std::string place(const std::string& root, const std::string& relative, const std::string& target = "") {
  const fs::path p = fs::path(root) / relative;
  fs::create_directories(p.parent_path());
  if (target.empty())
    std::ofstream(p.string()).put('\n');
  else
    fs::create_symlink(target, p);
  return p.string();
}

NvrtcSearch nowhere() { return NvrtcSearch{}; }  // every step empty
}  // namespace

TEST_CASE("KPLAY_NVRTC naming a missing file is an error naming it, not a fallback to another NVRTC") {
  NvrtcSearch s = NvrtcSearch::standard();  // the library path may well hold an NVRTC
  s.env = "/nonexistent/kplay-test/libnvrtc.so.13";
  try {
    open_nvrtc_library(s);
    FAIL("a missing KPLAY_NVRTC was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_argument);
    CHECK(std::string(e.what()).find("KPLAY_NVRTC=/nonexistent/kplay-test/libnvrtc.so.13") != std::string::npos);
  }
}

TEST_CASE("kplay emit --ptx and kplay devices name a KPLAY_NVRTC that does not load") {
  const std::string env = "KPLAY_NVRTC=/nonexistent/kplay-test/libnvrtc.so";
  const test::CliResult emit = test::run_cli("emit --act selu --ptx --arch sm_90", env);
  CHECK(emit.status == 2);
  CHECK(emit.has("KPLAY_NVRTC=/nonexistent/kplay-test/libnvrtc.so"));
  const test::CliResult devices = test::run_cli("devices", env);
  CHECK(devices.status == 0);
  CHECK(devices.has("compiler: KPLAY_NVRTC=/nonexistent/kplay-test/libnvrtc.so could not be loaded"));
}

TEST_CASE("the wheel search takes CUDA 13's nvidia/cu13 over CUDA 12's nvidia/cuda_nvrtc, root by root") {
  test::TempDir a, b;
  CHECK(find_wheel_nvrtc({a.path(), b.path()}).empty());
  const std::string cu12 = place(b.path(), "nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  CHECK(find_wheel_nvrtc({a.path(), b.path()}) == cu12);
  const std::string cu13 = place(b.path(), "nvidia/cu13/lib/libnvrtc.so.13");
  CHECK(find_wheel_nvrtc({a.path(), b.path()}) == cu13);
  const std::string first = place(a.path(), "nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
  CHECK(find_wheel_nvrtc({a.path(), b.path()}) == first);
  fs::create_directories(a.file("nvidia/cu13/lib/libnvrtc.so.13"));  // a folder of that name is no library
  CHECK(find_wheel_nvrtc({a.path(), b.path()}) == first);
}

TEST_CASE("site-packages beside kplay: the Python extension's parent, a virtual environment's lib") {
  test::TempDir t;
  fs::create_directories(t.file("venv/lib/python3.12/site-packages/kplay"));
  fs::create_directories(t.file("venv/bin"));
  const std::string sp = t.file("venv/lib/python3.12/site-packages");
  CHECK(site_packages_beside(sp + "/kplay") == std::vector<std::string>{sp});
  CHECK(site_packages_beside(t.file("venv/bin")) == std::vector<std::string>{sp});
  // A build tree's or a prefix's folders are no site-packages.
  fs::create_directories(t.file("prefix/lib"));
  CHECK(site_packages_beside(t.file("prefix/lib")).empty());
  CHECK(site_packages_beside("").empty());
}

TEST_CASE("with no NVRTC anywhere, the error says where it looked") {
  test::TempDir t;
  NvrtcSearch s = nowhere();
  s.loader_names = {"libkplay-test-no-such-nvrtc.so"};
  s.toolkit_dirs = {t.file("cuda/lib64")};
  s.site_packages = {t.path()};
  try {
    open_nvrtc_library(s);
    FAIL("an NVRTC was found where there is none");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(e.code() == ErrorCode::no_device);
    CHECK(what.find("libkplay-test-no-such-nvrtc.so") != std::string::npos);
    CHECK(what.find(t.file("cuda/lib64")) != std::string::npos);
    CHECK(what.find("no nvidia-cuda-nvrtc wheel in " + t.path()) != std::string::npos);
  }
}

TEST_CASE("--backend auto passes over CUDA devices that cannot compile, saying why") {
  rt::BackendReport cuda{
      "cuda", false, "1 device(s), driver CUDA 13.0, unusable without NVRTC (NVRTC not found)", {}, ""};
  cuda.devices.emplace_back();
  rt::BackendReport opencl{"opencl", true, "1 device(s)", {}, ""};
  opencl.devices.emplace_back();
  std::string why;
  CHECK(rt::choose_backend({cuda, opencl}, &why) == "opencl");
  CHECK(why == cuda.status);
  cuda.available = true;
  CHECK(rt::choose_backend({cuda, opencl}, &why) == "cuda");
  opencl.available = false;
  cuda.available = false;
  CHECK_THROWS_AS(rt::choose_backend({cuda, opencl}, &why), Error);
}

TEST_SUITE("nvrtc") {
  TEST_CASE("an NVRTC in a site-packages laid out as the nvidia-cuda-nvrtc wheel is found and loads") {
    const std::string real = rt::cuda::Nvrtc::get().path();
    test::TempDir t;
    const std::string wheel = place(t.path(), "nvidia/cu13/lib/libnvrtc.so.13", real);
    NvrtcSearch s = nowhere();
    s.site_packages = {t.file("elsewhere"), t.path()};
    const rt::cuda::NvrtcLibrary lib = open_nvrtc_library(s);
    CHECK(lib.path == wheel);
    CHECK(lib.found.find("pip wheel") != std::string::npos);
    CHECK(dlsym(lib.handle, "nvrtcCompileProgram") != nullptr);
  }

  TEST_CASE("a libnvrtc this process already loaded is taken before any search, and said so") {
    const rt::cuda::Nvrtc& loaded = rt::cuda::Nvrtc::get();
    int major = 0, minor = 0;
    std::sscanf(loaded.version().c_str(), "%d.%d", &major, &minor);
    NvrtcSearch s = nowhere();
    s.loaded_sonames = {"libkplay-test-not-loaded.so", "libnvrtc.so." + std::to_string(major)};
    s.loader_names = {"libkplay-test-no-such-nvrtc.so"};
    const rt::cuda::NvrtcLibrary lib = open_nvrtc_library(s);
    CHECK(lib.found == "already loaded in this process");
    CHECK(fs::equivalent(lib.path, loaded.path()));
  }

  TEST_CASE("a libnvrtc opened by path compiles with the libnvrtc-builtins beside it, not the loader's") {
    // NVRTC opens its builtins by name through the loader's search; kplay opens the ones beside
    // the libnvrtc it took first. Both are symlinks to the toolkit's, in a folder of their own.
    const std::string real = rt::cuda::Nvrtc::get().path();
    const std::string version = rt::cuda::Nvrtc::get().version();
    const std::string builtins = "libnvrtc-builtins.so." + version;
    test::TempDir t;
    const std::string lib = place(t.path(), "lib/libnvrtc.so.13", real);
    const std::string beside = place(t.path(), "lib/" + builtins, fs::path(real).parent_path() / builtins);
    const test::CliResult emit =
        test::run_cli("emit --act selu --ptx --arch sm_90", "KPLAY_NVRTC=" + lib + " LD_DEBUG=files");
    INFO(emit.output.substr(0, 2000));
    CHECK(emit.status == 0);
    CHECK(emit.has("file=" + beside + " [0];  generating link map"));
    // No other builtins was mapped: NVRTC's own dlopen found that one loaded.
    std::istringstream lines(emit.output);
    for (std::string line; std::getline(lines, line);)
      if (line.find("libnvrtc-builtins") != std::string::npos && line.find("generating link map") != std::string::npos)
        CHECK(line.find(beside) != std::string::npos);
  }

  TEST_CASE("KPLAY_NVRTC naming the toolkit's libnvrtc is the one used, and compiles") {
    const std::string real = rt::cuda::Nvrtc::get().path();
    const std::string env = "KPLAY_NVRTC=" + real;
    const test::CliResult emit = test::run_cli("emit --act selu --ptx --arch sm_90", env);
    INFO(emit.output.substr(0, 400));
    CHECK(emit.status == 0);
    CHECK(emit.has(".target sm_90"));
    const test::CliResult devices = test::run_cli("devices", env);
    CHECK(devices.has(real + " (KPLAY_NVRTC)"));
  }
}
#endif
