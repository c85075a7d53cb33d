// The per-device kernel database: one SQLite file (WAL mode) that keeps compiled binaries for the
// Engine (BinaryStore) and the autotuner's results per device, kernel and problem size, so a
// later process neither recompiles nor retunes. It is a cache, never a failure of the caller,
// each with one warning: a file in a place another user could have written is not touched (an
// in-memory database instead); a damaged file is salvaged record by record into a new one and
// kept beside it; a file that cannot be written (a full disk, read-only) is read as it is. Only a
// file that is recognisably kplay's is ever salvaged (database_open.cpp): anything else given as
// the database is left exactly as it is.
//
// Thread-safe: one connection guarded by a mutex. Several processes may share the file; SQLite
// serializes writers (busy timeout 10 s) and lock() serializes compiles of one key.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/binary_store.hpp"
#include "kplay/types.hpp"

namespace kplay {

struct CandidateResult {  // one configuration the tuner tried
  KernelConfig config;
  bool ok = false;  // false: rejected (did not compile, wrong output, ...)
  double median_ms = 0, spread_ms = 0, gbps = 0;
  std::string rejection;  // why, when !ok
};

// Where a shipped tuning came from (docs/design.md, "Shipped tunings"): written by `kplay db export
// --ship`, read with the shipped files; empty for the user's own records.
struct Provenance {
  std::string gpu;       // the device name it was measured on
  std::string driver;    // its driver version
  std::string compiler;  // "NVRTC 13.0"; OpenCL: the OpenCL C version
  std::string kplay;     // the kplay version that measured it
  std::string date;      // UTC, "2026-11-28"
  std::string command;   // the command that measured it ("kplay autotune --act all ...")
  bool empty() const { return gpu.empty() && command.empty(); }
};

struct TuningRecord {
  std::string fingerprint;  // Engine::fingerprint(): device + driver + compiler
  std::string backend, device_name, arch;
  KernelSpec spec;
  std::uint64_t n = 0;  // problem size tuned
  int size_bucket = 0;  // size_bucket(n); save_tuning recomputes it when n > 0
  KernelConfig best;
  double best_ms = 0, best_gbps = 0, copy_gbps = 0;  // copy measured in the same run
  std::string strategy;
  std::int64_t created_unix = 0;
  std::vector<CandidateResult> candidates;
  std::string match;      // filled by find_tuning: "device" or "architecture"
  Provenance provenance;  // shipped records only
};

// round(log2(max(n,1))), so 2^20 and 2^20+5 share a bucket.
int size_bucket(std::uint64_t n);

class KernelDatabase : public BinaryStore {
 public:
  struct Options {
    std::string path;  // "" = default_path(); ":memory:" = in memory on purpose (no warning)
    std::uint64_t max_binary_bytes = 256ull << 20;  // LRU bound on cached binaries
    std::function<void(const std::string&)> warn;   // once per problem; default: stderr
    // A damaged file is salvaged when found. Off (`kplay db verify`): it is reported by verify()
    // and left as it is until verify(true).
    bool repair = true;
    // For commands that only read (`kplay db list`): nothing is created, written or moved. A
    // missing file is an empty database in memory; a file of an older schema is upgraded in a
    // copy in memory; a damaged one is salvaged into memory (one warning) and left as it is.
    // Every write then throws.
    bool read_only = false;
    // A file that is not a kplay database (or a newer kplay's) makes the constructor throw
    // Error(invalid_argument) instead of warning and running in memory (`kplay db`: exit 2).
    bool strict = false;
  };

  // $KPLAY_DB, else $XDG_CACHE_HOME/kplay/kernels.db, else $HOME/.cache/kplay/kernels.db.
  static std::string default_path();

  // Never throws for an unusable file or directory (unless options.strict, for a file that is
  // not kplay's): it warns and runs in memory instead.
  explicit KernelDatabase(Options options);
  ~KernelDatabase() override;
  KernelDatabase(const KernelDatabase&) = delete;
  KernelDatabase& operator=(const KernelDatabase&) = delete;

  const std::string& path() const;
  bool persistent() const;      // false when running in memory
  bool writable() const;        // false in memory, and for a file opened read-only
  std::string problem() const;  // why the file is not used or only read; "" when neither

  // BinaryStore. These never throw: a database problem is a warning and a cache miss.
  bool get(const std::string& key, rt::Binary& out) override;           // checksum mismatch: row dropped, false
  void put(const std::string& key, const rt::Binary& binary) override;  // then LRU eviction
  void drop(const std::string& key) override;
  // flock() on <db dir>/locks/<key>.lock, released when the holder exits or dies; nullptr in memory.
  std::unique_ptr<KeyLock> lock(const std::string& key) override;

  // Devices and tuning. These throw Error(io_failed) when the database cannot be written (a
  // read-only file included; in memory by fallback they are kept in memory).
  void put_device(const std::string& fingerprint, const rt::DeviceInfo& info);
  // Replaces the record for (fingerprint, spec, size bucket), candidates included.
  void save_tuning(const TuningRecord& record);
  void remove_tuning(const TuningRecord& record);  // the record with its key (fingerprint, spec, size bucket)
  // Nearest size bucket on this device (match "device"), else on any device of the same backend
  // and arch (match "architecture"), else nullopt.
  std::optional<TuningRecord> find_tuning(const std::string& fingerprint, const std::string& arch,
                                          const std::string& backend, const KernelSpec& spec, std::uint64_t n);
  std::vector<TuningRecord> list_tuning();  // by device, spec and size, candidates included

  // Resumable tuning: candidates saved as they finish under a run key chosen by the tuner. On a
  // read-only file nothing is saved (a run cannot resume), and these do not throw for it.
  void save_progress(const std::string& run_key, const CandidateResult& c);  // same config: replaced
  std::vector<CandidateResult> load_progress(const std::string& run_key);    // in the order saved
  void clear_progress(const std::string& run_key);

  // Maintenance. These throw Error(io_failed) when the database cannot be written (in memory
  // by fallback, or read-only), rather than act on nothing.
  struct VerifyReport {
    std::uint64_t binaries = 0, bad = 0, tunings = 0;
    std::uint64_t unhashed = 0;  // binaries without a content hash (an older kplay's): never loaded
    std::vector<std::string> problems;
    bool integrity_ok = true;
    bool checked = true;  // false: the file is not in use (problems say why); the rest is of memory
    std::string salvage;  // remove_bad rebuilt a damaged file: what it kept and dropped, where the old one is
  };
  // PRAGMA integrity_check, every binary's checksum and content hash, and every device and
  // tuning record as `kplay db import` would read it from `kplay db export` (import_validation.hpp),
  // so export then import takes everything verify accepts. remove_bad: a damaged file (also one
  // found damaged on opening) is salvaged into a new one (salvage.hpp); otherwise bad entries
  // (and binaries without a content hash) are deleted.
  VerifyReport verify(bool remove_bad);
  std::uint64_t prune(std::uint64_t max_binary_bytes);  // LRU eviction to the bound; rows removed
  void clear();                                         // everything but the schema
  // Tuning records with candidates, and devices (no binaries), with a format version.
  nlohmann::json export_json();
  // Validates the whole document first; throws Error(invalid_argument) naming the bad field.
  // Returns the number of tuning records it leaves in the database: each replaces its counterpart,
  // and records of one key (fingerprint, spec, size bucket) in the document replace each other,
  // the last one kept. A device already recorded keeps its row: only a new fingerprint adds one.
  std::size_t import_json(const nlohmann::json& doc);

  struct Stats {
    std::uint64_t binaries = 0, binary_bytes = 0, tunings = 0, devices = 0;
  };
  Stats stats();

  struct Impl;  // src/database/database_impl.hpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplay
