// Looking after the kernel database: verify (SQLite's integrity check, every binary's checksum
// and content hash, every device and tuning record as `kplay db import` would take it from an
// export) and fix (delete bad entries, or salvage a damaged file),
// clear, statistics, and moving tuning records between machines as JSON.
#include <map>
#include <set>
#include <tuple>

#include "database_impl.hpp"
#include "import_validation.hpp"
#include "tuning_json.hpp"

namespace kplay {

std::vector<std::pair<std::string, rt::DeviceInfo>> db::read_devices(Connection& c) {
  std::vector<std::pair<std::string, rt::DeviceInfo>> out;
  Statement s(c,
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
    out.emplace_back(s.column_text(0), std::move(d));
  }
  return out;
}

namespace {
struct Findings {
  std::vector<std::string> bad_binaries, unhashed_binaries, bad_devices;
  std::vector<std::int64_t> bad_tunings;
};

// What `kplay db export` would write of `doc`, read back as `kplay db import` reads it: throws
// Error(invalid_argument) where the two disagree (text that is not UTF-8, a number import refuses).
void check_round_trip(const TuningDocument& doc) {
  std::string text;
  try {
    text = document_to_json(doc).dump();
  } catch (const nlohmann::json::exception& e) {  // invalid UTF-8: export itself would fail
    throw Error(ErrorCode::invalid_argument, std::string("cannot be exported: ") + e.what());
  }
  TuningDocument back = document_from_json(nlohmann::json::parse(text));
  validate_import(back);
}

// SQLite's integrity check, then every record as kplay would use it.
Findings check_contents(db::Connection& c, KernelDatabase::VerifyReport& r) {
  Findings f;
  {
    db::Statement s(c, "PRAGMA integrity_check(20)");
    while (s.step()) {
      const std::string line = s.column_text(0);
      if (line == "ok") continue;
      r.integrity_ok = false;
      r.problems.push_back("integrity: " + line);
    }
  }
  {
    db::Statement s(c, "SELECT key, format, bytes, checksum, size, content_hash FROM binaries ORDER BY key");
    while (s.step()) {
      ++r.binaries;
      const std::string key = s.column_text(0), bytes = s.column_blob(2);
      if (s.column_text(3) != db::checksum(bytes) || static_cast<std::uint64_t>(s.column_int(4)) != bytes.size()) {
        f.bad_binaries.push_back(key);
        r.problems.push_back("binary " + key + ": checksum or size does not match its bytes");
      } else if (s.column_is_null(5)) {
        f.unhashed_binaries.push_back(key);
      } else if (s.column_text(5) != db::content_hash(key, s.column_text(1), bytes)) {
        f.bad_binaries.push_back(key);
        r.problems.push_back("binary " + key + ": content hash does not match its key and bytes");
      }
    }
  }
  // Devices and tuning records as `kplay db import` would take them from an export, each alone
  // (a record with its device, when that passes), so that what verify accepts round-trips.
  std::map<std::string, rt::DeviceInfo> devices;
  for (auto& [fingerprint, info] : db::read_devices(c)) try {
      check_round_trip({{{fingerprint, info}}, {}});
      devices.emplace(fingerprint, std::move(info));
    } catch (const Error& e) {
      f.bad_devices.push_back(fingerprint);
      r.problems.push_back("device " + fingerprint.substr(0, 40) + ": " + e.what());
    }
  {
    db::Statement s(c, std::string("SELECT ") + db::kTuningColumns + " FROM tunings ORDER BY id");
    while (s.step()) {
      ++r.tunings;
      try {
        TuningDocument doc;
        doc.tunings.push_back(db::read_tuning(c, s));
        if (const auto it = devices.find(doc.tunings[0].fingerprint); it != devices.end())
          doc.devices.emplace_back(it->first, it->second);
        check_round_trip(doc);
      } catch (const db::CorruptDatabase&) {
        throw;
      } catch (const Error& e) {
        f.bad_tunings.push_back(s.column_int(0));
        r.problems.push_back("tuning record " + std::to_string(s.column_int(0)) + " (" + s.column_text(5) +
                             "): " + e.what());
      }
    }
  }
  r.bad = f.bad_binaries.size() + f.bad_tunings.size() + f.bad_devices.size();
  r.unhashed = f.unhashed_binaries.size();
  return f;
}
}  // namespace

KernelDatabase::VerifyReport KernelDatabase::verify(bool remove_bad) {
  std::lock_guard<std::mutex> lock(impl_->mutex);  // no automatic recovery: verify reports
  VerifyReport r;
  std::string damage = impl_->damage;  // found on opening (options.repair off)
  if (!damage.empty()) {
    r.integrity_ok = false;
    try {  // SQLite's own account of the damage, read-only
      db::Connection c = db::Connection::read_only(impl_->path, false);
      db::Statement s(c, "PRAGMA integrity_check(20)");
      while (s.step())
        if (s.column_text(0) != "ok") r.problems.push_back("integrity: " + s.column_text(0));
    } catch (const std::exception&) {
    }
    r.problems.push_back("the database file is damaged: " + damage);
  } else if (!impl_->persistent && impl_->path != ":memory:") {
    check_contents(impl_->conn, r);  // what this object serves instead: the database in memory
    r.checked = false;
    r.problems.push_back("the database file is not in use: " + impl_->problem);
    return r;
  } else {
    try {
      const Findings f = check_contents(impl_->conn, r);
      if (remove_bad && r.integrity_ok && (r.bad > 0 || r.unhashed > 0)) {
        impl_->require_writable("fix", false);
        db::Transaction t(impl_->conn);
        for (const auto* keys : {&f.bad_binaries, &f.unhashed_binaries})
          for (const auto& key : *keys)
            db::Statement(impl_->conn, "DELETE FROM binaries WHERE key = ?1").bind(1, key).run();
        for (auto id : f.bad_tunings) {
          db::Statement(impl_->conn, "DELETE FROM candidates WHERE tuning_id = ?1").bind(1, id).run();
          db::Statement(impl_->conn, "DELETE FROM tunings WHERE id = ?1").bind(1, id).run();
        }
        for (const auto& fingerprint : f.bad_devices)
          db::Statement(impl_->conn, "DELETE FROM devices WHERE fingerprint = ?1").bind(1, fingerprint).run();
        t.commit();
      }
      if (!r.integrity_ok) damage = r.problems.front();
    } catch (const db::CorruptDatabase& e) {
      r.integrity_ok = false;
      r.problems.push_back(std::string("the database file is damaged: ") + e.what());
      damage = e.what();
    }
  }
  // A damaged file: everything readable is carried into a new one, record by record, as opening
  // it would (a file found damaged on opening is not in use, yet salvaged all the same).
  if (remove_bad && !damage.empty()) {
    if (impl_->damage.empty() || impl_->options.read_only) impl_->require_writable("fix", false);
    impl_->salvaged.clear();
    impl_->damage.clear();
    impl_->recover(damage);
    r.salvage = impl_->salvaged;
    if (r.salvage.empty())  // another process salvaged it first, or it could not be
      r.problems.push_back(impl_->persistent ? "another process rebuilt the file meanwhile"
                                             : "it could not be salvaged: " + impl_->problem);
  }
  return r;
}

void KernelDatabase::clear() {
  impl_->with_db([&] {
    impl_->require_writable("clear", false);
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
  impl_->with_db([&] { doc.devices = db::read_devices(impl_->conn); });
  nlohmann::json j = document_to_json(doc);
  j["exported_unix"] = db::now_unix();
  return j;
}

std::size_t KernelDatabase::import_json(const nlohmann::json& doc) {
  TuningDocument parsed = document_from_json(doc);  // all or nothing: check before writing
  validate_import(parsed);
  impl_->with_db([&] {
    impl_->require_writable("import into", false);
    db::Transaction t(impl_->conn);
    // A device this database already knows keeps its row: the fingerprint covers what decides
    // whether binaries and timings carry over, and the rest (memory, units, notes) is what was
    // measured here, which a document must not rewrite.
    for (const auto& [fingerprint, info] : parsed.devices) db::add_device(impl_->conn, fingerprint, info);
    for (const auto& r : parsed.tunings) db::write_tuning(impl_->conn, r);
    t.commit();
  });
  // Records of one key replace each other: what the database holds now is one per key.
  std::set<std::tuple<std::string, std::string, Direction, Dtype, Saved, int>> keys;
  for (const auto& r : parsed.tunings) {
    const KernelSpec spec = db::canonical(r.spec);
    keys.emplace(r.fingerprint, spec.activation, spec.direction, spec.dtype, spec.saved, r.size_bucket);
  }
  return keys.size();
}

}  // namespace kplay
