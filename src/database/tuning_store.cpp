// Devices and tuning records in the kernel database: saving a tuner's result with all its
// candidates, finding the best known config for a request (this device's nearest size bucket,
// else the same architecture on another device), and the progress of unfinished runs.
#include <cmath>

#include "database_impl.hpp"
#include "tuning_json.hpp"

namespace kplay {

int size_bucket(std::uint64_t n) { return static_cast<int>(std::lround(std::log2(static_cast<double>(n ? n : 1)))); }

namespace db {

KernelSpec canonical(const KernelSpec& spec) {
  KernelSpec s = spec;
  if (s.direction == Direction::forward) s.saved = Saved::input;
  return s;
}

namespace {
void insert_device(Connection& c, const char* verb, const std::string& fingerprint, const rt::DeviceInfo& d) {
  Statement s(
      c, std::string(verb) +
             " INTO devices (fingerprint, backend, device_index, name, platform, arch, "
             "driver_version, compiler_version, memory_bytes, compute_units, max_threads_per_unit, max_block, "
             "compile_target, note, last_seen_unix, l2_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
             "?12, ?13, ?14, ?15, ?16)");
  s.bind(1, fingerprint).bind(2, d.backend).bind(3, d.index).bind(4, d.name).bind(5, d.platform).bind(6, d.arch);
  s.bind(7, d.driver_version).bind(8, d.compiler_version).bind(9, d.memory_bytes).bind(10, d.compute_units);
  s.bind(11, d.max_threads_per_unit).bind(12, d.max_block).bind(13, d.compile_target).bind(14, d.note);
  s.bind(15, now_unix()).bind(16, d.l2_bytes).run();
}
}  // namespace

void write_device(Connection& c, const std::string& fingerprint, const rt::DeviceInfo& d) {
  insert_device(c, "INSERT OR REPLACE", fingerprint, d);
}

void add_device(Connection& c, const std::string& fingerprint, const rt::DeviceInfo& d) {
  insert_device(c, "INSERT OR IGNORE", fingerprint, d);
}

// Binds ?1..?6 to a record's key: fingerprint, canonical spec and size bucket.
void bind_tuning_key(Statement& s, const TuningRecord& r) {
  const KernelSpec spec = canonical(r.spec);
  const int bucket = r.n > 0 ? size_bucket(r.n) : r.size_bucket;
  s.bind(1, r.fingerprint).bind(2, spec.activation).bind(3, to_string(spec.direction));
  s.bind(4, to_string(spec.dtype)).bind(5, to_string(spec.saved)).bind(6, bucket);
}

// Deletes the record with r's key and its candidates.
void delete_tuning(Connection& c, const TuningRecord& r) {
  const char* where =
      "fingerprint = ?1 AND activation = ?2 AND direction = ?3 AND dtype = ?4 AND saved = ?5 AND "
      "size_bucket = ?6";
  // candidates explicitly, so the result does not depend on PRAGMA foreign_keys
  Statement del(c,
                std::string("DELETE FROM candidates WHERE tuning_id IN (SELECT id FROM tunings WHERE ") + where + ")");
  bind_tuning_key(del, r);
  del.run();
  Statement del_t(c, std::string("DELETE FROM tunings WHERE ") + where);
  bind_tuning_key(del_t, r);
  del_t.run();
}

void write_tuning(Connection& c, const TuningRecord& r) {
  delete_tuning(c, r);
  Statement ins(c,
                "INSERT INTO tunings (fingerprint, activation, direction, dtype, saved, size_bucket, backend, "
                "device_name, arch, n, best_config, best_ms, best_gbps, copy_gbps, strategy, created_unix) VALUES "
                "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
  bind_tuning_key(ins, r);
  ins.bind(7, r.backend).bind(8, r.device_name).bind(9, r.arch).bind(10, r.n).bind(11, config_text(r.best));
  ins.bind(12, r.best_ms).bind(13, r.best_gbps).bind(14, r.copy_gbps).bind(15, r.strategy);
  ins.bind(16, r.created_unix ? r.created_unix : now_unix()).run();
  const std::int64_t id = c.last_insert_rowid();
  Statement cand(c,
                 "INSERT INTO candidates (tuning_id, ordinal, config, ok, median_ms, spread_ms, gbps, rejection) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& k = r.candidates[i];
    cand.reset();
    cand.bind(1, id).bind(2, static_cast<std::int64_t>(i)).bind(3, config_text(k.config)).bind(4, k.ok);
    cand.bind(5, k.median_ms).bind(6, k.spread_ms).bind(7, k.gbps).bind(8, k.rejection).run();
  }
}

}  // namespace db

namespace db {

const char* const kTuningColumns =
    "id, fingerprint, backend, device_name, arch, activation, direction, dtype, saved, n, size_bucket, "
    "best_config, best_ms, best_gbps, copy_gbps, strategy, created_unix";

TuningRecord read_tuning(Connection& c, Statement& s) {
  TuningRecord r;
  const std::int64_t id = s.column_int(0);
  r.fingerprint = s.column_text(1);
  r.backend = s.column_text(2);
  r.device_name = s.column_text(3);
  r.arch = s.column_text(4);
  r.spec.activation = s.column_text(5);
  r.spec.direction = parse_direction(s.column_text(6));
  r.spec.dtype = parse_dtype(s.column_text(7));
  r.spec.saved = parse_saved(s.column_text(8));
  r.n = static_cast<std::uint64_t>(s.column_int(9));
  r.size_bucket = static_cast<int>(s.column_int(10));
  r.best = config_from_text(s.column_text(11));
  r.best_ms = s.column_double(12);
  r.best_gbps = s.column_double(13);
  r.copy_gbps = s.column_double(14);
  r.strategy = s.column_text(15);
  r.created_unix = s.column_int(16);
  db::Statement q(c,
                  "SELECT config, ok, median_ms, spread_ms, gbps, rejection FROM candidates WHERE tuning_id = ?1 "
                  "ORDER BY ordinal");
  q.bind(1, id);
  while (q.step()) {
    CandidateResult k;
    k.config = config_from_text(q.column_text(0));
    k.ok = q.column_int(1) != 0;
    k.median_ms = q.column_double(2);
    k.spread_ms = q.column_double(3);
    k.gbps = q.column_double(4);
    k.rejection = q.column_text(5);
    r.candidates.push_back(std::move(k));
  }
  return r;
}

}  // namespace db

namespace {

using db::kTuningColumns;
using db::read_tuning;

CandidateResult read_progress(db::Statement& s) {
  CandidateResult k;
  k.config = config_from_text(s.column_text(0));
  k.ok = s.column_int(1) != 0;
  k.median_ms = s.column_double(2);
  k.spread_ms = s.column_double(3);
  k.gbps = s.column_double(4);
  k.rejection = s.column_text(5);
  return k;
}

}  // namespace

void KernelDatabase::put_device(const std::string& fingerprint, const rt::DeviceInfo& info) {
  impl_->with_db([&] {
    impl_->require_writable("record a device in", true);
    db::write_device(impl_->conn, fingerprint, info);
  });
}

void KernelDatabase::save_tuning(const TuningRecord& record) {
  impl_->with_db([&] {
    impl_->require_writable("save a tuning in", true);
    db::Transaction t(impl_->conn);
    db::write_tuning(impl_->conn, record);
    t.commit();
  });
}

void KernelDatabase::remove_tuning(const TuningRecord& record) {
  impl_->with_db([&] {
    impl_->require_writable("remove a tuning from", true);
    db::Transaction t(impl_->conn);
    db::delete_tuning(impl_->conn, record);
    t.commit();
  });
}

std::optional<TuningRecord> KernelDatabase::find_tuning(const std::string& fingerprint, const std::string& arch,
                                                        const std::string& backend, const KernelSpec& spec,
                                                        std::uint64_t n) {
  const KernelSpec k = db::canonical(spec);
  const int bucket = size_bucket(n);
  return impl_->with_db([&]() -> std::optional<TuningRecord> {
    // Nearest bucket first; between equally near ones the larger, then the newest.
    const std::string spec_match =
        "activation = ?3 AND direction = ?4 AND dtype = ?5 AND saved = ?6 ORDER BY ABS(size_bucket - ?7), "
        "size_bucket DESC, created_unix DESC LIMIT 8";
    const std::pair<const char*, std::string> levels[] = {
        {"device", "fingerprint = ?1 AND "},  // ?2 (arch) unused here
        {"architecture", "backend = ?1 AND arch = ?2 AND "},
    };
    for (const auto& [match, where] : levels) {
      std::string sql = std::string("SELECT ") + kTuningColumns + " FROM tunings WHERE ";
      sql += where;
      sql += spec_match;
      db::Statement s(impl_->conn, sql);
      s.bind(1, match == std::string("device") ? fingerprint : backend).bind(2, arch);
      s.bind(3, k.activation).bind(4, to_string(k.direction)).bind(5, to_string(k.dtype)).bind(6, to_string(k.saved));
      s.bind(7, bucket);
      while (s.step()) {
        try {
          TuningRecord r = read_tuning(impl_->conn, s);
          r.match = match;
          return r;
        } catch (const db::CorruptDatabase&) {
          throw;
        } catch (const Error& e) {  // a damaged record is skipped; `kplay db verify` reports it
          impl_->warn("bad-tuning", std::string("skipping a damaged tuning record: ") + e.what());
        }
      }
    }
    return std::nullopt;
  });
}

std::vector<TuningRecord> KernelDatabase::list_tuning() {
  return impl_->with_db([&] {
    std::vector<TuningRecord> out;
    db::Statement s(impl_->conn, std::string("SELECT ") + kTuningColumns +
                                     " FROM tunings ORDER BY backend, device_name, fingerprint, activation, "
                                     "direction, dtype, saved, size_bucket");
    while (s.step()) {
      try {
        out.push_back(read_tuning(impl_->conn, s));
      } catch (const db::CorruptDatabase&) {
        throw;
      } catch (const Error& e) {
        impl_->warn("bad-tuning", std::string("skipping a damaged tuning record: ") + e.what());
      }
    }
    return out;
  });
}

void KernelDatabase::save_progress(const std::string& run_key, const CandidateResult& c) {
  impl_->with_db([&] {
    if (impl_->persistent && !impl_->writable) return;  // read-only: a run cannot resume, but it runs
    db::Statement s(impl_->conn,
                    "INSERT OR REPLACE INTO progress (run_key, config, ok, median_ms, spread_ms, gbps, rejection) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    s.bind(1, run_key).bind(2, config_text(c.config)).bind(3, c.ok).bind(4, c.median_ms).bind(5, c.spread_ms);
    s.bind(6, c.gbps).bind(7, c.rejection).run();
  });
}

std::vector<CandidateResult> KernelDatabase::load_progress(const std::string& run_key) {
  return impl_->with_db([&] {
    std::vector<CandidateResult> out;
    db::Statement s(impl_->conn,
                    "SELECT config, ok, median_ms, spread_ms, gbps, rejection FROM progress WHERE run_key = ?1 "
                    "ORDER BY id");
    s.bind(1, run_key);
    while (s.step()) {
      try {
        out.push_back(read_progress(s));
      } catch (const db::CorruptDatabase&) {
        throw;
      } catch (const Error&) {  // a damaged entry is simply measured again
      }
    }
    return out;
  });
}

void KernelDatabase::clear_progress(const std::string& run_key) {
  impl_->with_db([&] {
    if (impl_->persistent && !impl_->writable) return;
    db::Statement(impl_->conn, "DELETE FROM progress WHERE run_key = ?1").bind(1, run_key).run();
  });
}

}  // namespace kplay
