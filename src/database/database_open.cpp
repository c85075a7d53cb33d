// Where the kernel database lives and how it is opened: the default path, creating the cache
// directory, the ownership of every component of the path, WAL and the busy timeout, the schema
// check, and the fallbacks that keep a caller running: a damaged file is salvaged into a new one
// and kept beside it; a file that cannot be written is read as it is; a path another user could
// have written, an unusable directory or a newer/foreign database means running in memory. Each
// with one warning.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "database_impl.hpp"
#include "salvage.hpp"
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

// The file exists and has something in it to read.
bool has_content(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

// Why writing failed, for a message: the file system's state where it says (full, read-only),
// else SQLite's words without the statement they came from.
std::string write_failure(const std::string& dir, const std::string& error) {
  struct statvfs fs_state {};
  if (::statvfs(dir.c_str(), &fs_state) == 0) {
    if (fs_state.f_flag & ST_RDONLY) return "the file system is read-only";
    if (fs_state.f_bavail == 0) return "the disk is full";
  }
  const std::size_t at = error.rfind("': ");
  return at == std::string::npos ? error : error.substr(at + 3);
}

// A newer or foreign file: left exactly as it is, neither written nor read.
class Refused : public Error {
 public:
  explicit Refused(const std::string& why) : Error(ErrorCode::io_failed, why) {}
};
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

bool KernelDatabase::writable() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->writable;
}

std::string KernelDatabase::problem() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->problem;
}

void KernelDatabase::Impl::require_writable(const std::string& what, bool memory_ok) const {
  if (writable || path == ":memory:" || (memory_ok && !persistent)) return;
  if (persistent)
    throw Error(ErrorCode::io_failed,
                "cannot " + what + " the kernel database " + path + ": it is read-only here (" + problem + ")");
  throw Error(ErrorCode::io_failed, "cannot " + what + " the kernel database " + path + ": it is not in use (" +
                                        (problem.empty() ? std::string("running in memory") : problem) + ")");
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
    if (options.repair) {
      recover(e.what());  // salvages it into a new file, or falls back to memory itself
      return;
    }
    conn.close();
    damage = e.what();  // verify() reports it; verify(true) salvages it
    problem = "it is damaged: " + damage;
    open_memory();
    return;
  } catch (const std::exception& e) {
    why = e.what();
  }
  conn.close();
  problem = why;
  warn("fallback", "cannot use the kernel database " + path + ": " + why +
                       "; running without persistence (compiled kernels and tunings are not kept)");
  open_memory();
}

void KernelDatabase::Impl::open_file() {
  persistent = false;
  writable = false;
  conn.close();
  const fs::path file(path);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  // Nothing is read from, or written to, a place another user could have written (the
  // directory's components are checked as it is made).
  ensure_private_directory(dir.string(), "directory", false);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    if (const std::string why = untrusted_path_reason(path + suffix); !why.empty())
      throw Error(ErrorCode::io_failed, "refusing it: " + why);
  struct stat st {};
  inode = 0;
  if (::stat(path.c_str(), &st) == 0) {  // the file about to be opened, for recover()
    inode = st.st_ino;
    device = st.st_dev;
  }
  try {
    open_writable(dir.string());
  } catch (const db::CorruptDatabase&) {
    throw;
  } catch (const Refused&) {
    throw;
  } catch (const Error& e) {
    // Writing fails (a full disk, a read-only file or directory): what is stored can still be read.
    if (!has_content(path)) throw;
    open_read_only(write_failure(dir.string(), e.what()));
  }
}

void KernelDatabase::Impl::open_writable(const std::string& dir) {
  if (access(dir.c_str(), W_OK) != 0)  // WAL needs to create files beside the database
    throw Error(ErrorCode::io_failed, "the directory " + dir + " is not writable");
  conn = db::Connection(path);
  // Look before touching anything: a newer or foreign file must stay exactly as it is.
  const db::SchemaProbe probe = db::probe_schema(conn);
  if (const std::string refusal = db::schema_refusal(probe); !refusal.empty()) throw Refused(refusal);
  if (probe.ours && probe.version == 0 && !probe.empty) throw db::CorruptDatabase(db::lost_version_message());
  if (conn.read_only()) throw Error(ErrorCode::io_failed, "the file is read-only");
  // Only on a new file: on an existing one the pragma rewrites page 1 on every open.
  if (probe.empty) conn.exec("PRAGMA auto_vacuum = INCREMENTAL");
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
  // A kplay file without one of its tables or columns is damaged: salvaged like one.
  if (const std::string problem_text = db::schema_problem(conn); !problem_text.empty())
    throw db::CorruptDatabase(problem_text);
  conn.exec("SELECT COUNT(*) FROM binaries");  // a truncated file fails here rather than later
  lock_dir = (fs::path(dir) / "locks").string();
  persistent = true;
  writable = true;
  problem.clear();
}

void KernelDatabase::Impl::open_read_only(const std::string& why_not_writable) {
  std::string why;
  // Read-only with the usual locking first (it sees the WAL); then, where even the -shm cannot
  // be created (a full disk), as an immutable file: its WAL, if any, is not seen.
  for (const bool immutable : {false, true}) {
    conn.close();
    try {
      conn = db::Connection::read_only(path, immutable);
      const db::SchemaProbe probe = db::probe_schema(conn);
      if (const std::string refusal = db::schema_refusal(probe); !refusal.empty()) throw Refused(refusal);
      if (probe.version != db::kSchemaVersion)
        throw Error(ErrorCode::io_failed, "it has schema version " + std::to_string(probe.version) +
                                              " and needs an upgrade to " + std::to_string(db::kSchemaVersion) +
                                              ", which cannot be written");
      if (const std::string problem_text = db::schema_problem(conn); !problem_text.empty())
        throw Error(ErrorCode::io_failed, problem_text + ", and it cannot be repaired without writing");
      conn.exec("SELECT COUNT(*) FROM binaries");
      persistent = true;
      writable = false;
      lock_dir.clear();
      problem = "it cannot be written: " + why_not_writable;
      warn("read-only", "cannot write to the kernel database " + path + " (" + why_not_writable +
                            "); reading it as it is: stored kernels and tunings are used, new ones are not kept");
      return;
    } catch (const Refused&) {
      throw;
    } catch (const std::exception& e) {  // damage seen read-only is not repaired: nothing can be written
      why = e.what();
    }
  }
  conn.close();
  throw Error(ErrorCode::io_failed, why_not_writable + "; reading it failed too: " + why);
}

void KernelDatabase::Impl::open_memory() {
  persistent = false;
  writable = false;
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
  db::SalvageReport report;
  {
    // Two processes may find the same damage; the lock and the inode check make sure only the
    // first salvages the file, and the second simply opens the new one.
    std::unique_ptr<BinaryStore::KeyLock> guard;
    const fs::path file(path);
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    try {
      guard = acquire_file_lock((dir / "locks").string(), file.filename().string() + ".recover");
    } catch (const std::exception&) {
      // no lock directory: salvage it anyway
    }
    struct stat st {};
    const bool same = ::stat(path.c_str(), &st) == 0 && st.st_ino == inode && st.st_dev == device;
    if (same) {
      const std::string fresh = path + ".salvage-" + std::to_string(::getpid());
      std::error_code ec;
      auto discard_fresh = [&] {
        fs::remove(fresh, ec);
        fs::remove(fresh + "-journal", ec);
      };
      discard_fresh();
      try {
        report = db::salvage(path, fresh);
      } catch (const std::exception& e) {
        discard_fresh();
        problem = "it is damaged (" + why + ") and could not be salvaged (" + e.what() + ")";
        warn("fallback", "the kernel database " + path + " is damaged (" + why + ") and cannot be salvaged (" +
                             e.what() + "); it is left as it is; running without persistence");
        open_memory();
        return;
      }
      // The damaged file stays beside the new one, which takes its name in one step (a link
      // first, so the name never points nowhere); a rename where links are not possible.
      moved = aside_name(path);
      if (::link(path.c_str(), moved.c_str()) != 0) {
        fs::rename(path, moved, ec);
        if (ec) {
          discard_fresh();
          problem = "it is damaged (" + why + ") and cannot be moved aside (" + ec.message() + ")";
          warn("fallback", "the kernel database " + path + " is damaged (" + why + ") and cannot be moved aside (" +
                               ec.message() + "); running without persistence");
          open_memory();
          return;
        }
      }
      fs::rename(path + "-wal", moved + "-wal", ec);  // an old WAL must never replay into the new file
      fs::remove(path + "-shm", ec);
      fs::remove(path + "-journal", ec);
      fs::rename(fresh, path, ec);
      if (ec) {
        discard_fresh();
        problem = "it is damaged (" + why + "); the salvaged copy cannot take its place (" + ec.message() + ")";
        warn("fallback", "the kernel database " + path + " is damaged (" + why +
                             "); the salvaged copy cannot take its place (" + ec.message() +
                             "); running without persistence");
        open_memory();
        return;
      }
    }
    try {
      open_file();
    } catch (const std::exception& e) {
      conn.close();
      problem = e.what();
      warn("fallback", "cannot use the kernel database " + path + " after salvaging a damaged one: " + e.what() +
                           "; running without persistence");
      open_memory();
      return;
    }
  }
  if (!moved.empty()) {
    salvaged = report.summary() + "; the damaged file is kept as " + moved;
    warn("corrupt", "the kernel database " + path + " was damaged (" + why + "); moved it to " + moved +
                        " and started a new one with what could be read: " + report.summary());
  }
}

}  // namespace kplay
