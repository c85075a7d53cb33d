// Where the kernel database lives and how it is opened: the default path, creating the cache
// directory, the ownership of every component of the path, WAL and the busy timeout, the schema
// check, and the fallbacks that keep a caller running: a damaged file is salvaged into a new one
// and kept beside it; a file that cannot be written is read as it is; a path another user could
// have written, an unusable directory or a newer/foreign database means running in memory. Each
// with one warning. A file is salvaged (moved aside and replaced) only when it is recognisably
// kplay's (foreign_reason); commands that only read never create, write or move anything.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

// The first bytes of a file, fewer at its end; "" when it cannot be opened (O_NONBLOCK: a FIFO
// put there since it was examined does not wait for a writer).
std::string file_head(const std::string& path, std::size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  std::string out(n, '\0');
  const ssize_t got = ::pread(fd, out.data(), n, 0);
  ::close(fd);
  out.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return out;
}

std::uint32_t be32(const std::string& p, std::size_t at) {
  std::uint32_t x = 0;
  for (std::size_t k = 0; k < 4; ++k) x = (x << 8) | static_cast<unsigned char>(p[at + k]);
  return x;
}

// The database kplay uses when told nothing: kernels.db in its own cache folder, which only kplay
// writes to.
bool own_default_file(const std::string& path) {
  std::error_code ec;
  const fs::path own = fs::absolute(user_cache_directory() + "/kernels.db", ec).lexically_normal();
  return !ec && own == fs::path(path);
}

// A connection that reads without creating anything: immutable (no -shm, no locks) unless a
// writer's WAL and -shm are already there, whose pages it must see.
db::Connection reading_connection(const std::string& path) {
  std::error_code ec;
  const bool live = fs::exists(path + "-wal", ec) && fs::exists(path + "-shm", ec);
  return db::Connection::read_only(path, !live);
}

// Whether the file at `path` may be used as kplay's database: "" when it may (absent, empty, or
// recognisably kplay's, damaged or not), else why not. Only reads. Recognisably kplay's: SQLite's
// header with kplay's application id; or, where the header carries no mark (damaged, or another
// program's), records of kplay's tables that pass kplay's own checks (salvage.hpp); or kplay's
// default file in its own folder, whatever is in it.
std::string foreign_reason(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};  // nothing there: a new database (or an error later)
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (st.st_size == 0) return {};
  const std::string head = file_head(path, 100);
  const bool sqlite = head.size() >= 72 && head.compare(0, 16, std::string("SQLite format 3\0", 16)) == 0;
  if (sqlite && be32(head, 68) == static_cast<std::uint32_t>(db::kApplicationId)) return {};
  if (sqlite && be32(head, 68) != 0)
    return "it is another program's SQLite database (its application id is not kplay's)";
  if (sqlite) {
    try {
      db::Connection c = reading_connection(path);
      const db::SchemaProbe probe = db::probe_schema(c);
      // No table: a new database. Kplay's mark in the schema as read (the header in the file
      // may lag behind a WAL that already holds it: another process creating the database).
      if (probe.empty || probe.ours) return {};
      return "it is not a kplay database (another program's SQLite file?)";
    } catch (const db::CorruptDatabase&) {  // damaged: its pages decide
    } catch (const std::exception& e) {
      return std::string("it cannot be read: ") + e.what();
    }
  }
  if (own_default_file(path)) return {};
  try {
    if (db::holds_kplay_records(path)) return {};
  } catch (const std::exception& e) {
    return std::string("it cannot be read: ") + e.what();
  }
  return sqlite ? "it is a damaged SQLite file without kplay's mark or any record of kplay's (another program's?)"
                : "it is not a kplay database (no SQLite header, and no record of kplay's in it)";
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
  if (impl_->options.strict && !impl_->refused.empty())
    throw Error(ErrorCode::invalid_argument, "not using " + impl_->path + " as the kernel database: " + impl_->refused +
                                                 "; it is left exactly as it is");
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
    if (options.read_only)
      open_for_reading();
    else
      open_file();
    return;
  } catch (const db::CorruptDatabase& e) {
    if (options.repair && options.read_only) {
      salvage_in_memory(e.what());
      return;
    }
    if (options.repair) {
      recover(e.what());  // salvages it into a new file, or falls back to memory itself
      return;
    }
    conn.close();
    damage = e.what();  // verify() reports it; verify(true) salvages it
    problem = "it is damaged: " + damage;
    open_memory();
    return;
  } catch (const Refused& e) {
    why = e.what();
    refused = why;
  } catch (const std::exception& e) {
    why = e.what();
  }
  conn.close();
  problem = why;
  if (!(options.strict && !refused.empty()))  // strict: the constructor throws instead
    warn("fallback", "cannot use the kernel database " + path + ": " + why +
                         (refused.empty() ? "" : "; it is left as it is") +
                         "; running without persistence (compiled kernels and tunings are not kept)");
  open_memory();
}

void KernelDatabase::Impl::open_for_reading() {
  persistent = false;
  writable = false;
  lock_dir.clear();
  conn.close();
  const fs::path file(path);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    if (const std::string why = untrusted_path_reason(path + suffix); !why.empty())
      throw Error(ErrorCode::io_failed, "refusing it: " + why);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) throw Error(ErrorCode::io_failed, std::string("cannot examine it: ") + std::strerror(errno));
    problem = "it does not exist yet (a command that stores something creates it)";
    open_memory();
    return;
  }
  if (const std::string why = foreign_reason(path); !why.empty()) throw Refused(why);
  inode = st.st_ino;
  device = st.st_dev;
  conn = reading_connection(path);
  const db::SchemaProbe probe = db::probe_schema(conn);
  if (const std::string refusal = db::schema_refusal(probe); !refusal.empty()) throw Refused(refusal);
  if (probe.empty) {
    problem = "it holds no kplay tables yet (a command that stores something creates them)";
    open_memory();
    return;
  }
  if (probe.ours && probe.version == 0) throw db::CorruptDatabase(db::lost_version_message());
  bool copied = false;
  if (probe.version < db::kSchemaVersion) {  // an older kplay's: upgraded in a copy, the file left as it is
    db::Connection copy(":memory:");
    db::copy_database(conn, copy);
    conn = std::move(copy);
    db::migrate(conn);
    copied = true;
  }
  if (const std::string problem_text = db::schema_problem(conn); !problem_text.empty())
    throw db::CorruptDatabase(problem_text);
  conn.exec("SELECT COUNT(*) FROM binaries");
  persistent = !copied;
  problem.clear();
  if (copied)
    problem = "it has schema version " + std::to_string(probe.version) +
              ", upgraded in memory for reading (a command that stores something upgrades the file)";
  else if (::access(path.c_str(), W_OK) != 0 || ::access(dir.c_str(), W_OK) != 0)
    problem = "the file or its folder cannot be written";
}

void KernelDatabase::Impl::salvage_in_memory(const std::string& why) {
  conn.close();
  persistent = false;
  writable = false;
  lock_dir.clear();
  damage = why;
  try {
    conn = db::Connection(":memory:");
    const db::SalvageReport report = db::salvage_into(path, conn);
    conn.exec("PRAGMA foreign_keys = ON");
    problem = "it is damaged (" + why + "); what could be read of it is used, in memory";
    warn("corrupt", "the kernel database " + path + " is damaged (" + why +
                        "); it is left as it is, and what could "
                        "be read of it is shown (" +
                        report.summary() + "); `kplay db verify --fix` salvages it into a new file");
  } catch (const std::exception& e) {
    problem = "it is damaged (" + why + ") and could not be read (" + e.what() + ")";
    warn("fallback", "the kernel database " + path + " is damaged (" + why + ") and cannot be read (" + e.what() +
                         "); it is left as it is");
    open_memory();
  }
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
  // Only a file that is recognisably kplay's is ever opened for writing, or salvaged.
  if (const std::string why = foreign_reason(path); !why.empty()) throw Refused(why);
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
