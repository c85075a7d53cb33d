// Helpers for the kernel database tests: a temporary directory, a database whose warnings are
// collected instead of printed, and running the kplay_db_stress helper as a child process.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "build_paths.hpp"
#include "database/kernel_database.hpp"
#include "engine/engine.hpp"

namespace kplay::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kplay-db-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Collects warnings (thread-safe) so a test can count them.
struct Warnings {
  std::mutex mutex;
  std::vector<std::string> messages;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.push_back(m);
    };
  }
  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return messages.size();
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string out;
    for (const auto& m : messages) out += m + "\n";
    return out;
  }
};

inline std::unique_ptr<KernelDatabase> open_db(const std::string& path, Warnings* warnings = nullptr,
                                               std::uint64_t max_binary_bytes = 256ull << 20) {
  KernelDatabase::Options o;
  o.path = path;
  o.max_binary_bytes = max_binary_bytes;
  if (warnings) o.warn = warnings->sink();
  return std::make_unique<KernelDatabase>(o);
}

// A PoCL-like device for records written by hand: no device is opened.
inline rt::DeviceInfo test_cpu_device() {
  rt::DeviceInfo d;
  d.backend = "opencl";
  d.name = "Test CPU";
  d.platform = "Portable Computing Language";
  d.arch = "cpu";
  d.driver_version = "1.0";
  d.compiler_version = "pocl 5";
  d.memory_bytes = 80ull << 30;
  d.compute_units = 16;
  return d;
}

inline rt::Binary make_binary(const std::string& seed, std::size_t size = 1000) {
  rt::Binary b;
  b.format = "cubin";
  b.bytes.resize(size);
  for (std::size_t i = 0; i < size; ++i) b.bytes[i] = static_cast<char>((seed.size() * 131 + i * 7 + seed[0]) & 0xff);
  b.log = "log of " + seed;
  return b;
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Starts kplay_db_stress with `args`; returns the child's pid. KPLAY_DB_STRESS overrides the
// build-time path, for running a copied test binary on another machine.
inline pid_t spawn_stress(const std::vector<std::string>& args) {
  const char* override_path = std::getenv("KPLAY_DB_STRESS");
  std::vector<std::string> all = {override_path && *override_path ? override_path : built_db_stress_path()};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Exit status of the child, or 128 + signal.
inline int wait_child(pid_t pid) {
  int raw = 0;
  if (waitpid(pid, &raw, 0) != pid) return -1;
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

// Waits up to `seconds` for a file to appear (a child's "I am ready").
inline bool wait_for_file(const std::string& path, double seconds = 20) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Points kplay's cache folder (XDG_CACHE_HOME) at `dir` for this process while it lives, and
// gives the default database's path there: the one file kplay salvages whatever is in it.
class OwnCacheFolder {
 public:
  explicit OwnCacheFolder(const std::string& dir) {
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_ = old, had_ = true;
    setenv("XDG_CACHE_HOME", dir.c_str(), 1);
    std::filesystem::create_directories(dir + "/kplay");
    std::filesystem::permissions(dir + "/kplay", std::filesystem::perms::owner_all);
    path_ = dir + "/kplay/kernels.db";
  }
  ~OwnCacheFolder() {
    if (had_)
      setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    else
      unsetenv("XDG_CACHE_HOME");
  }
  OwnCacheFolder(const OwnCacheFolder&) = delete;
  OwnCacheFolder& operator=(const OwnCacheFolder&) = delete;
  const std::string& database() const { return path_; }

 private:
  std::string old_, path_;
  bool had_ = false;
};

}  // namespace kplay::test
