// Where the kernel database lives and how it is opened: the default path, creating the cache
// directory, WAL and the busy timeout, the schema check, and the fallbacks that keep a caller
// running: a damaged file is moved aside for a new one; an unusable directory, a read-only file
// or a newer/foreign database means running in memory. Each with one warning.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "database_impl.hpp"
#include "schema.hpp"
#include "util/file_lock.hpp"
#include "util/private_dir.hpp"

namespace kplay {
namespace fs = std::filesystem;

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A name beside `path` that does not exist yet: path.corrupt-<unix time>[-k].
std::string aside_name(const std::string& path) {
  const std::string base = path + ".corrupt-" + std::to_string(db::now_unix());
  std::string name = base;
  std::error_code ec;
  for (int k = 1; fs::exists(name, ec) || fs::exists(name + "-wal", ec); ++k) name = base + "-" + std::to_string(k);
  return name;
}
}  // namespace

std::string KernelDatabase::default_path() {
  if (std::string p = env("KPLAY_DB"); !p.empty()) return p;
  return user_cache_directory() + "/kernels.db";
}

KernelDatabase::KernelDatabase(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (!impl_->options.warn)
    impl_->options.warn = [](const std::string& m) { std::fprintf(stderr, "kplay: warning: %s\n", m.c_str()); };
  impl_->path = impl_->options.path.empty() ? default_path() : impl_->options.path;
  if (impl_->path != ":memory:") {  // absolute, so messages and `kplay db path` are unambiguous
    std::error_code ec;
    const fs::path absolute = fs::absolute(impl_->path, ec);
    if (!ec) impl_->path = absolute.lexically_normal().string();
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->open();
}

KernelDatabase::~KernelDatabase() = default;

const std::string& KernelDatabase::path() const { return impl_->path; }

bool KernelDatabase::persistent() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->persistent;
}

void KernelDatabase::Impl::warn(const std::string& problem, const std::string& message) {
  std::lock_guard<std::mutex> lock(warn_mutex);
  if (!warned.insert(problem).second) return;
  try {
    options.warn(message);
  } catch (...) {  // a warning must never become a failure
  }
}

void KernelDatabase::Impl::open() {
  if (path == ":memory:") {
    open_memory();
    return;
  }
  std::string why;
  try {
    open_file();
    return;
  } catch (const db::CorruptDatabase& e) {
    recover(e.what());  // moves it aside and opens a new file, or falls back to memory itself
    return;
  } catch (const std::exception& e) {
    why = e.what();
  }
  conn.close();
  warn("fallback", "cannot use the kernel database " + path + ": " + why +
                       "; running without persistence (compiled kernels and tunings are not kept)");
  open_memory();
}

void KernelDatabase::Impl::open_file() {
  persistent = false;
  conn.close();
  const fs::path file(path);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  ensure_private_directory(dir.string(), "directory", false);
  if (access(dir.c_str(), W_OK) != 0)  // WAL needs to create files beside the database
    throw Error(ErrorCode::io_failed, "the directory " + dir.string() + " is not writable");

  conn = db::Connection(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {  // the file this connection has open, for recover()
    inode = st.st_ino;
    device = st.st_dev;
  }
  // Look before touching anything: a newer or foreign file must stay exactly as it is.
  const std::string refusal = db::schema_refusal(db::probe_schema(conn));
  if (!refusal.empty()) throw Error(ErrorCode::io_failed, refusal);
  if (conn.read_only()) throw Error(ErrorCode::io_failed, "the file is read-only");
  conn.exec("PRAGMA auto_vacuum = INCREMENTAL");  // takes effect only on a new file
  try {
    conn.exec("PRAGMA journal_mode = WAL");
  } catch (const db::CorruptDatabase&) {
    throw;
  } catch (const Error&) {
    // Busy: another process is switching the same file to WAL right now, and WAL is persistent.
    // Anything else: the rollback journal is slower but just as safe.
  }
  conn.exec("PRAGMA synchronous = NORMAL");  // with WAL: durable across a crash of the process
  conn.exec("PRAGMA foreign_keys = ON");
  db::migrate(conn);
  conn.exec("SELECT COUNT(*) FROM binaries");  // a truncated file fails here rather than later
  lock_dir = (dir / "locks").string();
  persistent = true;
}

void KernelDatabase::Impl::open_memory() {
  persistent = false;
  lock_dir.clear();
  try {
    conn = db::Connection(":memory:");
    conn.exec("PRAGMA foreign_keys = ON");
    db::migrate(conn);
  } catch (const std::exception& e) {  // out of memory at start-up: nothing sensible remains
    warn("memory", std::string("cannot create an in-memory kernel database: ") + e.what());
  }
}

void KernelDatabase::Impl::recover(const std::string& why) {
  conn.close();
  std::string moved;
  {
    // Two processes may find the same damage; the lock and the inode check make sure only the
    // first moves the file, and the second simply opens the new one.
    std::unique_ptr<BinaryStore::KeyLock> guard;
    const fs::path file(path);
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    try {
      guard = acquire_file_lock((dir / "locks").string(), file.filename().string() + ".recover");
    } catch (const std::exception&) {
      // no lock directory: move it anyway
    }
    struct stat st {};
    const bool same = ::stat(path.c_str(), &st) == 0 && st.st_ino == inode && st.st_dev == device;
    if (same) {
      moved = aside_name(path);
      std::error_code ec;
      fs::rename(path, moved, ec);
      if (ec) {
        conn.close();
        warn("fallback", "the kernel database " + path + " is damaged (" + why + ") and cannot be moved aside (" +
                             ec.message() + "); running without persistence");
        open_memory();
        return;
      }
      fs::rename(path + "-wal", moved + "-wal", ec);  // an old WAL must never replay into a new file
      fs::remove(path + "-shm", ec);
      fs::remove(path + "-journal", ec);
    }
    inode = 0;
    try {
      open_file();
    } catch (const std::exception& e) {
      conn.close();
      warn("fallback", "cannot use the kernel database " + path + " after moving a damaged one aside: " + e.what() +
                           "; running without persistence");
      open_memory();
      return;
    }
  }
  if (!moved.empty())
    warn("corrupt",
         "the kernel database " + path + " was damaged (" + why + "); moved it to " + moved + " and started a new one");
}

}  // namespace kplay
