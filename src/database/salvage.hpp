// Salvage of a damaged kernel database: its records are read page by page from the file (and the
// committed frames of its WAL) with SQLite's file format, not through SQLite's b-tree descent, so
// a damaged page costs only the records on it: a damaged root or interior page of one table
// leaves that table's intact leaf pages to be found by a scan of every page, each record placed
// in its table by the shape of its fields. Every record read is checked as kplay checks it on
// use (a binary against its checksums, a tuning's config by parsing it) and written into a new
// file with the current schema. The damaged file is only read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sqlite.hpp"

namespace kplay::db {

struct SalvageReport {
  struct Table {
    std::string name;
    std::uint64_t kept = 0;      // written into the new file
    std::uint64_t dropped = 0;   // read, but failed its checks
    std::uint64_t orphaned = 0;  // read, but its tuning record was lost (candidates)
  };
  std::vector<Table> tables;         // in the schema's order
  std::uint64_t pages = 0;           // pages of the damaged file (its WAL's committed view)
  std::uint64_t unreadable = 0;      // pages that were no readable part of the file's structure
  std::uint64_t unrecognized = 0;    // records outside any table's tree that could not be read or placed
  std::vector<std::string> reasons;  // why records were dropped, a few examples

  std::uint64_t kept() const;
  std::uint64_t dropped() const;  // both kinds
  // "kept 60 binaries, 1 device, 4 tuning records, 12 candidates, 0 progress entries; dropped 6
  // binaries that failed their checks, 3 candidates whose tuning record was lost; 17 of 210 pages
  // could not be read"
  std::string summary() const;
};

// Reads what it can of `damaged` into a new database at `fresh` (which must not exist). Throws
// Error(io_failed) when `damaged` cannot be opened or `fresh` cannot be written.
SalvageReport salvage(const std::string& damaged, const std::string& fresh);
// The same into an open, empty database (in memory, for a command that only reads).
SalvageReport salvage_into(const std::string& damaged, Connection& out);

// Whether a file without kplay's mark in its header still holds a record of kplay's: one with
// the shape of a binary, tuning, candidate or progress row that passes kplay's own checks (a
// binary's checksum, a config that parses), found as a salvage finds records. Stops at the first.
// Only reads; throws Error(io_failed) when the file cannot be read.
bool holds_kplay_records(const std::string& path);

}  // namespace kplay::db
