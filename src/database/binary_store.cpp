// KernelDatabase as the Engine's BinaryStore: compiled programs with a checksum and a content
// hash bound to their key, read back only when both match, bounded by LRU eviction, and the
// per-key cross-process compile lock. These calls never throw: the store is a cache, so any
// failure is one warning and a miss.
#include <chrono>

#include "database_impl.hpp"
#include "util/file_lock.hpp"
#include "util/hash.hpp"
#include "util/sha256.hpp"

namespace kplay {

namespace db {
std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string checksum(const std::string& bytes) { return Hasher().add(bytes).hex(); }

std::string content_hash(const std::string& key, const std::string& format, const std::string& bytes) {
  return Sha256().add("kplay binary").add(key).add(format).add(bytes).hex();
}

std::uint64_t evict_lru(Connection& c, std::uint64_t bound, const std::string& keep) {
  Statement total_q(c, "SELECT COALESCE(SUM(size), 0) FROM binaries");
  total_q.step();
  auto total = static_cast<std::uint64_t>(total_q.column_int(0));
  if (total <= bound) return 0;
  std::vector<std::string> victims;
  {
    Statement s(c, "SELECT key, size FROM binaries ORDER BY last_used_ms, key");
    while (total > bound && s.step()) {
      std::string key = s.column_text(0);
      if (key == keep) continue;  // the binary just stored stays even if it alone is too big
      total -= std::min<std::uint64_t>(total, static_cast<std::uint64_t>(s.column_int(1)));
      victims.push_back(std::move(key));
    }
  }
  Statement del(c, "DELETE FROM binaries WHERE key = ?1");
  for (const auto& key : victims) {
    del.reset();
    del.bind(1, key).run();
  }
  return victims.size();
}

void shrink(Connection& c) {
  try {
    c.exec("PRAGMA incremental_vacuum");
    c.query_int("PRAGMA wal_checkpoint(TRUNCATE)");  // busy readers just leave it for later
  } catch (const CorruptDatabase&) {
    throw;
  } catch (const Error&) {
  }
}
}  // namespace db

namespace {
// A use stamp: wall-clock milliseconds, but strictly after every earlier use in this database.
const char* kNextUse = "MAX(?9, (SELECT COALESCE(MAX(last_used_ms), 0) + 1 FROM binaries))";
}  // namespace

bool KernelDatabase::get(const std::string& key, rt::Binary& out) {
  try {
    return impl_->with_db([&] {
      rt::Binary b;
      std::string sum, hash;
      std::uint64_t size = 0;
      bool hashed = false;
      {  // finished before writing: a read left open could not be upgraded once another writer commits
        db::Statement s(impl_->conn,
                        "SELECT format, bytes, checksum, size, log, content_hash FROM binaries WHERE key = ?1");
        s.bind(1, key);
        if (!s.step()) return false;
        b.format = s.column_text(0);
        b.bytes = s.column_blob(1);
        sum = s.column_text(2);
        size = static_cast<std::uint64_t>(s.column_int(3));
        b.log = s.column_text(4);
        hashed = !s.column_is_null(5);
        hash = s.column_text(5);
      }
      // Code is loaded only when its bytes are those stored under this key: a row without a
      // content hash (an older kplay's) or with one that does not match is dropped and recompiled.
      const char* failed = nullptr;
      if (sum != db::checksum(b.bytes) || size != b.bytes.size())
        failed = "failed its checksum";
      else if (!hashed)
        failed = "has no content hash (stored by an older kplay)";
      else if (hash != db::content_hash(key, b.format, b.bytes))
        failed = "does not match its content hash";
      if (failed) {
        if (impl_->writable) db::Statement(impl_->conn, "DELETE FROM binaries WHERE key = ?1").bind(1, key).run();
        impl_->warn(std::string("checksum:") + failed, "a cached kernel binary in " + impl_->path + " " + failed +
                                                           " and was not loaded; it will be recompiled");
        return false;
      }
      if (!impl_->writable) {  // read as it is: recency cannot be recorded
        out = std::move(b);
        return true;
      }
      try {  // recency is best effort: a busy database must not turn a good binary into a miss
        db::Statement u(impl_->conn, std::string("UPDATE binaries SET last_used_ms = ") + kNextUse + " WHERE key = ?1");
        u.bind(1, key).bind(9, db::now_ms()).run();
      } catch (const db::CorruptDatabase&) {
        throw;
      } catch (const Error& e) {
        impl_->warn("recency", std::string("cannot record the use of a cached kernel: ") + e.what());
      }
      out = std::move(b);
      return true;
    });
  } catch (const std::exception& e) {
    impl_->warn("read", std::string("cannot read the kernel database: ") + e.what());
    return false;
  }
}

void KernelDatabase::put(const std::string& key, const rt::Binary& binary) {
  try {
    impl_->with_db([&] {
      if (impl_->persistent && !impl_->writable) return;  // read-only: said once on opening
      db::Transaction t(impl_->conn);
      db::Statement s(impl_->conn,
                      std::string("INSERT OR REPLACE INTO binaries (key, format, bytes, checksum, size, log, "
                                  "created_ms, content_hash, last_used_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ") +
                          kNextUse + ")");
      s.bind(1, key).bind(2, binary.format).bind_blob(3, binary.bytes).bind(4, db::checksum(binary.bytes));
      s.bind(5, static_cast<std::uint64_t>(binary.bytes.size())).bind(6, binary.log);
      s.bind(7, db::now_ms()).bind(8, db::content_hash(key, binary.format, binary.bytes)).bind(9, db::now_ms()).run();
      db::evict_lru(impl_->conn, impl_->options.max_binary_bytes, key);
      t.commit();
    });
  } catch (const std::exception& e) {
    impl_->warn("write", std::string("cannot write to the kernel database: ") + e.what());
  }
}

void KernelDatabase::drop(const std::string& key) {
  try {
    impl_->with_db([&] {
      if (!impl_->writable && impl_->persistent) return;  // read-only: it stays, and is not served again here
      db::Statement(impl_->conn, "DELETE FROM binaries WHERE key = ?1").bind(1, key).run();
    });
  } catch (const std::exception& e) {
    impl_->warn("write", std::string("cannot write to the kernel database: ") + e.what());
  }
}

std::unique_ptr<BinaryStore::KeyLock> KernelDatabase::lock(const std::string& key) {
  std::string dir;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);  // not held while waiting for the lock
    if (!impl_->writable) return nullptr;             // nothing compiled here is stored: nobody waits for it
    dir = impl_->lock_dir;
  }
  try {
    return acquire_file_lock(dir, key);
  } catch (const std::exception& e) {
    impl_->warn("lock", std::string("cannot lock a kernel for compiling (others may compile it too): ") + e.what());
    return nullptr;
  }
}

std::uint64_t KernelDatabase::prune(std::uint64_t max_binary_bytes) {
  return impl_->with_db([&] {
    impl_->require_writable("prune", false);
    db::Transaction t(impl_->conn);
    const std::uint64_t removed = db::evict_lru(impl_->conn, max_binary_bytes, "");
    t.commit();
    if (removed > 0) db::shrink(impl_->conn);
    return removed;
  });
}

}  // namespace kplay
