// The schema text and the migration steps; see schema.hpp for the rules of changing them.
#include "schema.hpp"

#include <vector>

#include "util/hash.hpp"

namespace kplay::db {
namespace {

// Step i upgrades version i to i + 1. Version 0 is a new, empty file.
const std::vector<std::vector<const char*>>& migrations() {
  static const std::vector<std::vector<const char*>> steps = {
      {
          // 0 -> 1
          // Compiled programs keyed by the Engine's key (rendered kernel + device fingerprint).
          // checksum: FNV-1a 64 of bytes, checked on every read. Times in unix milliseconds;
          // last_used_ms is strictly increasing per use, so LRU order has no ties.
          R"(CREATE TABLE binaries (
  key TEXT PRIMARY KEY,
  format TEXT NOT NULL,
  bytes BLOB NOT NULL,
  checksum TEXT NOT NULL,
  size INTEGER NOT NULL,
  log TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL,
  last_used_ms INTEGER NOT NULL))",
          // Covers the LRU walk and the size sum without touching the blobs.
          "CREATE INDEX binaries_lru ON binaries (last_used_ms, size)",
          R"(CREATE TABLE devices (
  fingerprint TEXT PRIMARY KEY,
  backend TEXT NOT NULL,
  device_index INTEGER NOT NULL,
  name TEXT NOT NULL,
  platform TEXT NOT NULL,
  arch TEXT NOT NULL,
  driver_version TEXT NOT NULL,
  compiler_version TEXT NOT NULL,
  memory_bytes INTEGER NOT NULL,
  compute_units INTEGER NOT NULL,
  max_threads_per_unit INTEGER NOT NULL,
  max_block INTEGER NOT NULL,
  l2_bytes INTEGER NOT NULL,
  compile_target TEXT NOT NULL,
  note TEXT NOT NULL,
  last_seen_unix INTEGER NOT NULL))",
          // One record per device, kernel and size bucket; configs are JSON (tuning_json.hpp).
          R"(CREATE TABLE tunings (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  backend TEXT NOT NULL,
  device_name TEXT NOT NULL,
  arch TEXT NOT NULL,
  activation TEXT NOT NULL,
  direction TEXT NOT NULL,
  dtype TEXT NOT NULL,
  saved TEXT NOT NULL,
  n INTEGER NOT NULL,
  size_bucket INTEGER NOT NULL,
  best_config TEXT NOT NULL,
  best_ms REAL NOT NULL,
  best_gbps REAL NOT NULL,
  copy_gbps REAL NOT NULL,
  strategy TEXT NOT NULL,
  created_unix INTEGER NOT NULL,
  UNIQUE (fingerprint, activation, direction, dtype, saved, size_bucket)))",
          "CREATE INDEX tunings_arch ON tunings (backend, arch, activation, direction, dtype, saved)",
          R"(CREATE TABLE candidates (
  tuning_id INTEGER NOT NULL REFERENCES tunings (id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  config TEXT NOT NULL,
  ok INTEGER NOT NULL,
  median_ms REAL NOT NULL,
  spread_ms REAL NOT NULL,
  gbps REAL NOT NULL,
  rejection TEXT NOT NULL,
  PRIMARY KEY (tuning_id, ordinal)))",
          // Candidates of an unfinished tuning run, so a killed run resumes where it stopped.
          R"(CREATE TABLE progress (
  id INTEGER PRIMARY KEY,
  run_key TEXT NOT NULL,
  config TEXT NOT NULL,
  ok INTEGER NOT NULL,
  median_ms REAL NOT NULL,
  spread_ms REAL NOT NULL,
  gbps REAL NOT NULL,
  rejection TEXT NOT NULL,
  UNIQUE (run_key, config)))",
      },
  };
  return steps;
}

}  // namespace

SchemaProbe probe_schema(Connection& c) {
  // One statement, so one read snapshot: three separate reads could straddle another process's
  // commit of the new schema and see its tables without its application_id (a "foreign" file).
  Statement s(c,
              "SELECT (SELECT user_version FROM pragma_user_version), "
              "(SELECT application_id FROM pragma_application_id), (SELECT COUNT(*) FROM sqlite_master)");
  SchemaProbe p;
  if (!s.step()) return p;
  p.version = s.column_int(0);
  p.ours = s.column_int(1) == kApplicationId;
  p.empty = s.column_int(2) == 0;
  return p;
}

std::string schema_refusal(const SchemaProbe& p) {
  if (!p.ours && !p.empty) return "it is not a kplay database (another program's SQLite file?)";
  if (p.version > kSchemaVersion)
    return "it was written by a newer kplay (schema version " + std::to_string(p.version) +
           ", this kplay knows up to " + std::to_string(kSchemaVersion) + ")";
  return {};
}

void migrate(Connection& c) {
  if (c.read_only()) throw Error(ErrorCode::io_failed, "the file is read-only");
  Transaction t(c);
  const SchemaProbe p = probe_schema(c);  // again, now under the write lock
  const std::string refusal = schema_refusal(p);
  if (!refusal.empty()) throw Error(ErrorCode::io_failed, refusal);
  if (p.version == kSchemaVersion) return;  // rolled back: nothing was written
  if (migrations().size() != static_cast<std::size_t>(kSchemaVersion))
    throw Error(ErrorCode::io_failed, "internal: kSchemaVersion does not match the migration steps");
  for (auto v = static_cast<std::size_t>(p.version); v < migrations().size(); ++v)
    for (const char* sql : migrations()[v]) c.exec(sql);
  c.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  c.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  t.commit();
}

std::string schema_hash(Connection& c) {
  Statement s(c, "SELECT type, name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name");
  Hasher h;
  while (s.step()) h.add(s.column_text(0)).add(s.column_text(1)).add(s.column_text(2));
  return h.hex();
}

}  // namespace kplay::db
