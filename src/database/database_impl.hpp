// Private state of KernelDatabase, shared by its .cpp files: the connection, its mutex, the
// once-per-problem warnings, and with_db(), which turns a corruption found mid-operation into
// "move the file aside, start a new one, try again once".
#pragma once
#include <sys/types.h>
#include <mutex>
#include <set>
#include <string>

#include "kernel_database.hpp"
#include "sqlite.hpp"

namespace kplay {

struct KernelDatabase::Impl {
  Options options;
  std::string path;         // as resolved from the options
  bool persistent = false;  // guarded by mutex (recovery may fall back to memory)
  bool writable = false;    // false: in memory, or the file opened read-only
  std::string problem;      // why the file is not used, or used read-only; "" when neither
  std::string damage;       // found damaged on open with options.repair off: why
  std::string salvaged;     // what the last salvage kept and dropped, and where the damaged file went
  std::string refused;      // why the file is not taken for kplay's at all (foreign, newer); "" otherwise
  std::string lock_dir;     // <db dir>/locks
  ino_t inode = 0;          // of the file opened, to tell whether another process replaced it
  dev_t device = 0;
  db::Connection conn;
  std::mutex mutex;
  std::mutex warn_mutex;  // warn() is also called outside `mutex` (after a failed operation)
  std::set<std::string> warned;

  // Each problem (a short tag) is reported once per database object.
  void warn(const std::string& problem, const std::string& message);

  void open();  // the file (read-write, else read-only), or memory with a warning; never throws
  void open_file();
  void open_writable(const std::string& dir);
  void open_read_only(const std::string& why_not_writable);
  void open_memory();
  // options.read_only: the file as it is, without creating or writing anything (see Options).
  void open_for_reading();
  // options.read_only and the file is damaged: what can be read of it, in memory, one warning.
  void salvage_in_memory(const std::string& why);
  // The open file is damaged: unless another process already did, salvage what can be read into
  // a new file (salvage.hpp), keep the damaged one (and its WAL) beside it, and put the new one
  // in its place; then open it. Never throws.
  void recover(const std::string& why);
  // Throws Error(io_failed) saying why the file cannot be written: it is read-only, or (unless
  // `memory_ok`) it is not in use and an in-memory database stands in; `what` is the operation
  // ("clear"). An in-memory database asked for (":memory:") is always writable.
  void require_writable(const std::string& what, bool memory_ok) const;

  // Runs f under the mutex; after a corruption, recovers and runs it once more.
  template <class F>
  auto with_db(F&& f) -> decltype(f()) {
    std::lock_guard<std::mutex> lock(mutex);
    try {
      return f();
    } catch (const db::CorruptDatabase& e) {
      if (!options.repair) throw;
      if (persistent && writable)
        recover(e.what());
      else if (persistent && options.read_only)
        salvage_in_memory(e.what());
      else
        open_memory();
    }
    return f();
  }
};

namespace db {
std::int64_t now_unix();
std::int64_t now_ms();
std::string checksum(const std::string& bytes);  // FNV-1a 64 hex (hash.hpp)
// SHA-256 of a binary's key, format and bytes (sha256.hpp): recorded when it is stored, checked
// whenever it is loaded, so a binary is only ever served for the key it was stored under.
std::string content_hash(const std::string& key, const std::string& format, const std::string& bytes);
// Deletes least recently used binaries (never `keep`) until at most `bound` bytes remain;
// returns the rows removed. Call inside a transaction.
std::uint64_t evict_lru(Connection& c, std::uint64_t bound, const std::string& keep);
// Inserts or replaces; call inside a transaction. Shared by save_tuning and import_json.
void write_tuning(Connection& c, const TuningRecord& record);   // replaces the record with its key
void delete_tuning(Connection& c, const TuningRecord& record);  // key: fingerprint, spec, size bucket
void write_device(Connection& c, const std::string& fingerprint, const rt::DeviceInfo& info);
void add_device(Connection& c, const std::string& fingerprint, const rt::DeviceInfo& info);  // unless known
// The canonical spec as stored: forward kernels ignore `saved`, so it is always "input" there.
KernelSpec canonical(const KernelSpec& spec);
// Frees the pages of deleted rows and truncates the WAL; best effort.
void shrink(Connection& c);
// The columns read_tuning() takes, in its order (a SELECT of the tunings table).
extern const char* const kTuningColumns;
// A row of `SELECT kTuningColumns FROM tunings` back into a record, with its candidates; throws
// Error(invalid_argument) for a field that does not parse.
TuningRecord read_tuning(Connection& c, Statement& s);
// Every row of the devices table, by backend, name and fingerprint.
std::vector<std::pair<std::string, rt::DeviceInfo>> read_devices(Connection& c);
}  // namespace db

}  // namespace kplay
