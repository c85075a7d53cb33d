// A thin RAII layer over the SQLite C API for the kernel database: a connection, prepared
// statements with typed binds and columns, and an IMMEDIATE transaction that rolls back unless
// committed. Failures throw kplay::Error(io_failed); a damaged file throws CorruptDatabase so the
// database can move it aside and start over.
#pragma once
#include <cstdint>
#include <string>

#include "kplay/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace kplay::db {

// SQLITE_CORRUPT or SQLITE_NOTADB: the file is damaged or not a database at all.
class CorruptDatabase : public Error {
 public:
  explicit CorruptDatabase(const std::string& message) : Error(ErrorCode::io_failed, message) {}
};

class Connection {
 public:
  Connection() = default;
  // Opens read-write, creating the file; ":memory:" for an in-memory database. Throws.
  explicit Connection(const std::string& path);
  // Opens an existing file read-only. `immutable`: without locks, the -shm or the WAL (for a
  // file where even those cannot be created: a full disk); a WAL's unsaved pages are not seen.
  static Connection read_only(const std::string& path, bool immutable);
  ~Connection();
  Connection(Connection&& o) noexcept;
  Connection& operator=(Connection&& o) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  bool is_open() const { return db_ != nullptr; }
  void close() noexcept;

  void exec(const std::string& sql);               // statements without results
  std::int64_t query_int(const std::string& sql);  // first column of the first row, 0 if none
  std::string query_text(const std::string& sql);  // same, as text
  bool read_only() const;
  std::int64_t last_insert_rowid() const;
  std::int64_t changes() const;  // rows changed by the last statement

 private:
  Connection(const std::string& name, int flags);
  sqlite3* db_ = nullptr;
};

class Statement {
 public:
  Statement(Connection& connection, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1 (?1, ?2, ...).
  Statement& bind(int i, const std::string& text);
  Statement& bind(int i, const char* text) { return bind(i, std::string(text)); }
  Statement& bind(int i, std::int64_t value);
  Statement& bind(int i, int value) { return bind(i, static_cast<std::int64_t>(value)); }
  Statement& bind(int i, std::uint64_t value) { return bind(i, static_cast<std::int64_t>(value)); }
  Statement& bind(int i, double value);
  Statement& bind(int i, bool value) { return bind(i, static_cast<std::int64_t>(value ? 1 : 0)); }
  Statement& bind_blob(int i, const std::string& bytes);
  Statement& bind_null(int i);

  bool step();  // true: a row is ready; false: done
  void run();   // steps to the end
  void reset();

  // Columns are numbered from 0.
  std::int64_t column_int(int i) const;
  double column_double(int i) const;
  std::string column_text(int i) const;
  std::string column_blob(int i) const;
  bool column_is_null(int i) const;

 private:
  Connection& connection_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

// BEGIN IMMEDIATE: takes the write lock up front, so concurrent writers wait in the busy handler
// instead of failing when a read transaction cannot be upgraded.
class Transaction {
 public:
  explicit Transaction(Connection& connection);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool open_ = true;
};

// Copies every page of `from` into `to` (SQLite's online backup), replacing what `to` held: an
// older file is upgraded in a copy in memory by a command that must not write it.
void copy_database(Connection& from, Connection& to);

// Throws CorruptDatabase or Error(io_failed) for result code `rc` of a call on `db`.
[[noreturn]] void fail(sqlite3* db, int rc, const std::string& what);

}  // namespace kplay::db
