// The kernel database's schema and its versions. PRAGMA user_version records the version and
// PRAGMA application_id marks the file as kplay's. Opening a file of an older known version runs
// the migration steps up to kSchemaVersion; a newer or foreign file is left untouched.
//
// Changing the schema: bump kSchemaVersion, append a migration step from the old version, and
// update the golden hash in tests/test_database.cpp (it fails until you do, on purpose).
#pragma once
#include <cstdint>
#include <string>

#include "sqlite.hpp"

namespace kplay::db {

constexpr int kSchemaVersion = 1;
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
// opening a new file create the schema once). Throws if the file is newer or foreign.
void migrate(Connection& c);

// Hash of the schema as SQLite stores it (sqlite_master), for the golden test.
std::string schema_hash(Connection& c);

}  // namespace kplay::db
