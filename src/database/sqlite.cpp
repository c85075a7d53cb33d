// The SQLite RAII layer; see sqlite.hpp.
#include "sqlite.hpp"

#include <sqlite3.h>

#include <cctype>
#include <utility>

namespace kplay::db {
namespace {
// Concurrent processes wait this long for the write lock before giving up.
constexpr int kBusyTimeoutMs = 10000;
}  // namespace

void fail(sqlite3* db, int rc, const std::string& what) {
  const int primary = rc & 0xff;
  std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if (message.empty() || message == "not an error") message = sqlite3_errstr(rc);
  const std::string text = what + ": " + message;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) throw CorruptDatabase(text);
  throw Error(ErrorCode::io_failed, text);
}

Connection::Connection(const std::string& path)
    : Connection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX) {}

Connection::Connection(const std::string& name, int flags) {
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    close();
    if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) throw CorruptDatabase("open: " + message);
    throw Error(ErrorCode::io_failed, "cannot open: " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
}

Connection Connection::read_only(const std::string& path, bool immutable) {
  // A URI, so the path's own '?', '#' and '%' are escaped.
  std::string uri = "file:";
  for (const char ch : path) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) || ch == '/' || ch == '.' || ch == '-' || ch == '_' || ch == '~') {
      uri += ch;
    } else {
      static const char* hex = "0123456789ABCDEF";
      uri += '%';
      uri += hex[u >> 4];
      uri += hex[u & 15];
    }
  }
  uri += immutable ? "?mode=ro&immutable=1" : "?mode=ro";
  return Connection(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX);
}

Connection::~Connection() { close(); }

Connection::Connection(Connection&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}

Connection& Connection::operator=(Connection&& o) noexcept {
  if (this != &o) {
    close();
    db_ = std::exchange(o.db_, nullptr);
  }
  return *this;
}

void Connection::close() noexcept {
  if (db_) sqlite3_close_v2(db_);  // statements are RAII-scoped, so none is left open
  db_ = nullptr;
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  if (rc != SQLITE_OK) fail(db_, rc, sql.substr(0, 60));
}

std::int64_t Connection::query_int(const std::string& sql) {
  Statement s(*this, sql);
  return s.step() ? s.column_int(0) : 0;
}

std::string Connection::query_text(const std::string& sql) {
  Statement s(*this, sql);
  return s.step() ? s.column_text(0) : std::string();
}

bool Connection::read_only() const { return sqlite3_db_readonly(db_, "main") == 1; }

std::int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

std::int64_t Connection::changes() const { return sqlite3_changes64(db_); }

Statement::Statement(Connection& connection, const std::string& sql) : connection_(connection), sql_(sql) {
  const int rc = sqlite3_prepare_v2(connection_.get(), sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) fail(connection_.get(), rc, "prepare '" + sql.substr(0, 60) + "'");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int i, const std::string& text) {
  const int rc = sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(connection_.get(), rc, "bind");
  return *this;
}

Statement& Statement::bind(int i, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, i, value);
  if (rc != SQLITE_OK) fail(connection_.get(), rc, "bind");
  return *this;
}

Statement& Statement::bind(int i, double value) {
  const int rc = sqlite3_bind_double(stmt_, i, value);
  if (rc != SQLITE_OK) fail(connection_.get(), rc, "bind");
  return *this;
}

Statement& Statement::bind_blob(int i, const std::string& bytes) {
  const int rc = sqlite3_bind_blob64(stmt_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(connection_.get(), rc, "bind");
  return *this;
}

Statement& Statement::bind_null(int i) {
  const int rc = sqlite3_bind_null(stmt_, i);
  if (rc != SQLITE_OK) fail(connection_.get(), rc, "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(connection_.get(), rc, "'" + sql_.substr(0, 60) + "'");
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::int64_t Statement::column_int(int i) const { return sqlite3_column_int64(stmt_, i); }

double Statement::column_double(int i) const { return sqlite3_column_double(stmt_, i); }

std::string Statement::column_text(int i) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i))) : std::string();
}

std::string Statement::column_blob(int i) const {
  const void* p = sqlite3_column_blob(stmt_, i);
  const int n = sqlite3_column_bytes(stmt_, i);
  return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

bool Statement::column_is_null(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

Transaction::Transaction(Connection& connection) : connection_(connection) { connection_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (!open_) return;
  char* err = nullptr;
  sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, &err);  // best effort; never throws
  if (err) sqlite3_free(err);
}

void Transaction::commit() {
  connection_.exec("COMMIT");
  open_ = false;
}

void copy_database(Connection& from, Connection& to) {
  sqlite3_backup* backup = sqlite3_backup_init(to.get(), "main", from.get(), "main");
  if (!backup) fail(to.get(), sqlite3_errcode(to.get()), "backup");
  const int rc = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) fail(to.get(), rc, "backup");
}

}  // namespace kplay::db
