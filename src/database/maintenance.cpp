// Looking after the kernel database: verify (SQLite's integrity check, every binary's checksum,
// every stored config), clear, statistics, and moving tuning records between machines as JSON.
#include "database_impl.hpp"
#include "import_validation.hpp"
#include "tuning_json.hpp"

namespace kplay {

KernelDatabase::VerifyReport KernelDatabase::verify(bool remove_bad) {
  std::lock_guard<std::mutex> lock(impl_->mutex);  // no automatic recovery: verify reports
  db::Connection& c = impl_->conn;
  VerifyReport r;
  try {
    {
      db::Statement s(c, "PRAGMA integrity_check(20)");
      while (s.step()) {
        const std::string line = s.column_text(0);
        if (line == "ok") continue;
        r.integrity_ok = false;
        r.problems.push_back("integrity: " + line);
      }
    }
    std::vector<std::string> bad_binaries;
    {
      db::Statement s(c, "SELECT key, bytes, checksum, size FROM binaries ORDER BY key");
      while (s.step()) {
        ++r.binaries;
        const std::string key = s.column_text(0), bytes = s.column_blob(1);
        if (s.column_text(2) == db::checksum(bytes) && static_cast<std::uint64_t>(s.column_int(3)) == bytes.size())
          continue;
        bad_binaries.push_back(key);
        r.problems.push_back("binary " + key + ": checksum or size does not match its bytes");
      }
    }
    std::vector<std::int64_t> bad_tunings;
    {
      db::Statement s(c,
                      "SELECT t.id, t.activation, t.direction, t.dtype, t.saved, t.best_config, "
                      "(SELECT group_concat(config, char(10)) FROM candidates WHERE tuning_id = t.id) FROM tunings t");
      while (s.step()) {
        ++r.tunings;
        try {
          parse_direction(s.column_text(2));
          parse_dtype(s.column_text(3));
          parse_saved(s.column_text(4));
          config_from_text(s.column_text(5));
          const std::string candidates = s.column_text(6);
          for (std::size_t at = 0; at < candidates.size();) {
            std::size_t end = candidates.find('\n', at);
            if (end == std::string::npos) end = candidates.size();
            config_from_text(candidates.substr(at, end - at));
            at = end + 1;
          }
        } catch (const Error& e) {
          bad_tunings.push_back(s.column_int(0));
          r.problems.push_back("tuning record " + std::to_string(s.column_int(0)) + " (" + s.column_text(1) +
                               "): " + e.what());
        }
      }
    }
    r.bad = bad_binaries.size() + bad_tunings.size();
    if (remove_bad && r.bad > 0) {
      db::Transaction t(c);
      for (const auto& key : bad_binaries) db::Statement(c, "DELETE FROM binaries WHERE key = ?1").bind(1, key).run();
      for (auto id : bad_tunings) {
        db::Statement(c, "DELETE FROM candidates WHERE tuning_id = ?1").bind(1, id).run();
        db::Statement(c, "DELETE FROM tunings WHERE id = ?1").bind(1, id).run();
      }
      t.commit();
    }
    if (remove_bad && !r.integrity_ok) c.exec("REINDEX");  // repairs damaged indexes, the common case
  } catch (const db::CorruptDatabase& e) {
    r.integrity_ok = false;
    r.problems.push_back(std::string("the database file is damaged: ") + e.what());
    if (remove_bad && impl_->persistent) impl_->recover(e.what());  // moved aside; a new, empty one replaces it
  }
  return r;
}

void KernelDatabase::clear() {
  impl_->with_db([&] {
    db::Transaction t(impl_->conn);
    for (const char* table : {"candidates", "tunings", "progress", "devices", "binaries"})
      impl_->conn.exec(std::string("DELETE FROM ") + table);
    t.commit();
    db::shrink(impl_->conn);
  });
}

KernelDatabase::Stats KernelDatabase::stats() {
  return impl_->with_db([&] {
    Stats s;
    db::Statement b(impl_->conn, "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM binaries");
    b.step();
    s.binaries = static_cast<std::uint64_t>(b.column_int(0));
    s.binary_bytes = static_cast<std::uint64_t>(b.column_int(1));
    s.tunings = static_cast<std::uint64_t>(impl_->conn.query_int("SELECT COUNT(*) FROM tunings"));
    s.devices = static_cast<std::uint64_t>(impl_->conn.query_int("SELECT COUNT(*) FROM devices"));
    return s;
  });
}

nlohmann::json KernelDatabase::export_json() {
  TuningDocument doc;
  doc.tunings = list_tuning();
  impl_->with_db([&] {
    db::Statement s(impl_->conn,
                    "SELECT fingerprint, backend, device_index, name, platform, arch, driver_version, "
                    "compiler_version, memory_bytes, compute_units, max_threads_per_unit, max_block, "
                    "compile_target, note, l2_bytes FROM devices ORDER BY backend, name, fingerprint");
    while (s.step()) {
      rt::DeviceInfo d;
      d.backend = s.column_text(1);
      d.index = static_cast<int>(s.column_int(2));
      d.name = s.column_text(3);
      d.platform = s.column_text(4);
      d.arch = s.column_text(5);
      d.driver_version = s.column_text(6);
      d.compiler_version = s.column_text(7);
      d.memory_bytes = static_cast<std::uint64_t>(s.column_int(8));
      d.compute_units = static_cast<int>(s.column_int(9));
      d.max_threads_per_unit = static_cast<int>(s.column_int(10));
      d.max_block = static_cast<int>(s.column_int(11));
      d.compile_target = s.column_text(12);
      d.note = s.column_text(13);
      d.l2_bytes = static_cast<std::uint64_t>(s.column_int(14));
      doc.devices.emplace_back(s.column_text(0), std::move(d));
    }
  });
  nlohmann::json j = document_to_json(doc);
  j["exported_unix"] = db::now_unix();
  return j;
}

std::size_t KernelDatabase::import_json(const nlohmann::json& doc) {
  TuningDocument parsed = document_from_json(doc);  // all or nothing: check before writing
  validate_import(parsed);
  impl_->with_db([&] {
    db::Transaction t(impl_->conn);
    for (const auto& [fingerprint, info] : parsed.devices) db::write_device(impl_->conn, fingerprint, info);
    for (const auto& r : parsed.tunings) db::write_tuning(impl_->conn, r);
    t.commit();
  });
  return parsed.tunings.size();
}

}  // namespace kplay
