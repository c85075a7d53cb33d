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
      {
          // 1 -> 2
          // content_hash: SHA-256 of the key, the format and the bytes (binary_store.cpp),
          // recorded when the binary is stored and checked whenever it is loaded. Rows of older
          // versions have none and are never loaded: their kernels are compiled again.
          "ALTER TABLE binaries ADD COLUMN content_hash TEXT",
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

std::string lost_version_message() {
  return "it has kplay's tables but no schema version (PRAGMA user_version is 0), so it cannot be upgraded in "
         "place";
}

void migrate(Connection& c) {
  if (c.read_only()) throw Error(ErrorCode::io_failed, "the file is read-only");
  Transaction t(c);
  const SchemaProbe p = probe_schema(c);  // again, now under the write lock
  const std::string refusal = schema_refusal(p);
  if (!refusal.empty()) throw Error(ErrorCode::io_failed, refusal);
  if (p.version == kSchemaVersion) return;  // rolled back: nothing was written
  if (p.ours && p.version == 0 && !p.empty) throw CorruptDatabase(lost_version_message());
  if (migrations().size() != static_cast<std::size_t>(kSchemaVersion))
    throw Error(ErrorCode::io_failed, "internal: kSchemaVersion does not match the migration steps");
  for (auto v = static_cast<std::size_t>(p.version); v < migrations().size(); ++v)
    for (const char* sql : migrations()[v]) try {
        c.exec(sql);
      } catch (const CorruptDatabase&) {
        throw;
      } catch (const Error& e) {  // "no such table": not the schema its version promises
        if (p.empty) throw;
        throw CorruptDatabase("cannot upgrade it from schema version " + std::to_string(p.version) + ": " + e.what());
      }
  c.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  c.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  t.commit();
}

const std::vector<TableShape>& expected_tables() {
  static const std::vector<TableShape> tables = [] {
    Connection c(":memory:");
    migrate(c);
    std::vector<TableShape> out;
    Statement names(c, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid");
    while (names.step()) {
      TableShape t;
      t.name = names.column_text(0);
      Statement info(c, "SELECT name, type, \"notnull\", dflt_value IS NOT NULL, pk FROM pragma_table_info(?1)");
      info.bind(1, t.name);
      int primary_keys = 0;
      while (info.step()) {
        TableShape::Column col;
        col.name = info.column_text(0);
        col.type = info.column_text(1);
        col.not_null = info.column_int(2) != 0;
        col.has_default = info.column_int(3) != 0;
        col.rowid = info.column_int(4) != 0 && col.type == "INTEGER";
        primary_keys += info.column_int(4) != 0;
        t.columns.push_back(col);
      }
      // INTEGER PRIMARY KEY alone is the rowid; as part of a composite key it is a column.
      if (primary_keys != 1)
        for (auto& col : t.columns) col.rowid = false;
      out.push_back(std::move(t));
    }
    return out;
  }();
  return tables;
}

std::string schema_problem(Connection& c) {
  for (const TableShape& t : expected_tables()) {
    Statement info(c, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)");
    info.bind(1, t.name);
    std::size_t i = 0;
    bool same = true;
    while (info.step()) {
      if (i >= t.columns.size() || info.column_text(0) != t.columns[i].name ||
          info.column_text(1) != t.columns[i].type || (info.column_int(2) != 0) != t.columns[i].not_null)
        same = false;
      ++i;
    }
    if (i == 0) return "its table " + t.name + " is missing";
    if (!same || i != t.columns.size()) return "its table " + t.name + " does not have kplay's columns";
  }
  return {};
}

std::string schema_hash(Connection& c) {
  Statement s(c, "SELECT type, name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name");
  Hasher h;
  while (s.step()) h.add(s.column_text(0)).add(s.column_text(1)).add(s.column_text(2));
  return h.hex();
}

}  // namespace kplay::db
