// The kernel database's schema and its versions. PRAGMA user_version records the version and
// PRAGMA application_id marks the file as kplay's. Opening a file of an older known version runs
// the migration steps up to kSchemaVersion; a newer or foreign file is left untouched.
//
// Changing the schema: bump kSchemaVersion, append a migration step from the old version, and
// update the golden hash in tests/test_database.cpp (it fails until you do, on purpose).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sqlite.hpp"

namespace kplay::db {

constexpr int kSchemaVersion = 2;
constexpr std::int64_t kApplicationId = 0x6B504C59;  // "kPLY"

struct SchemaProbe {
  std::int64_t version = 0;  // PRAGMA user_version
  bool empty = true;         // no tables at all: a new file
  bool ours = false;         // application_id is kplay's
};

// Reads only, from one consistent snapshot (a schema another process is creating is either not
// there yet or complete); throws CorruptDatabase for a file that is not a database.
SchemaProbe probe_schema(Connection& c);

// Whether migrate() may touch the file, and if not, why (empty when it may).
std::string schema_refusal(const SchemaProbe& p);

// Brings the database to kSchemaVersion inside one IMMEDIATE transaction (so two processes
// opening a new file create the schema once). Throws if the file is newer or foreign, and
// CorruptDatabase for a kplay file with tables but version 0 (its version was lost: only a
// salvage into a new file can bring it up to date).
void migrate(Connection& c);
std::string lost_version_message();

// The tables of the current schema, as SQLite describes them (pragma table_info), in order of
// creation: what a salvage (salvage.hpp) reads records into and checks their shapes against.
struct TableShape {
  struct Column {
    std::string name, type;  // type as declared: TEXT, BLOB, INTEGER, REAL
    bool not_null = false, has_default = false;
    bool rowid = false;  // INTEGER PRIMARY KEY: an alias of the rowid, stored as NULL in records
  };
  std::string name;
  std::vector<Column> columns;
};
const std::vector<TableShape>& expected_tables();

// Why the open database does not have the current schema's tables and columns ("its table
// tunings is missing"), or "" when it does.
std::string schema_problem(Connection& c);

// Hash of the schema as SQLite stores it (sqlite_master), for the golden test.
std::string schema_hash(Connection& c);

}  // namespace kplay::db
