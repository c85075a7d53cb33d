// Page-by-page salvage of a damaged database; see salvage.hpp. The file format is SQLite's
// (https://www.sqlite.org/fileformat2.html): a header, b-tree pages (table interior 0x05, table
// leaf 0x0D, index 0x02/0x0A), overflow chains, the freelist, and in a WAL file frames that
// replace pages up to the last commit whose checksums hold.
#include "salvage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "database_impl.hpp"
#include "kplay/error.hpp"
#include "schema.hpp"
#include "tuning_json.hpp"

namespace kplay::db {
namespace {

std::uint32_t be16(const std::string& p, std::size_t at) {
  return (std::uint32_t{static_cast<unsigned char>(p[at])} << 8) | static_cast<unsigned char>(p[at + 1]);
}
std::uint32_t be32(const std::string& p, std::size_t at) { return (be16(p, at) << 16) | be16(p, at + 2); }

// A file opened for reading; throws on failure. Reads return fewer bytes at its end.
class Reader {
 public:
  explicit Reader(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~Reader() {
    if (fd_ >= 0) ::close(fd_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  bool is_open() const { return fd_ >= 0; }
  std::uint64_t size() const {
    struct stat st {};
    return fd_ >= 0 && ::fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  }
  std::string read(std::uint64_t offset, std::size_t n) const {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd_, &out[got], n - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;  // an unreadable sector reads as the end
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
  }

 private:
  int fd_;
};

// The pages of the database as the last commit left them: the file, with the WAL's committed
// frames on top.
class Pages {
 public:
  explicit Pages(const std::string& path) : file_(path), wal_(path + "-wal") {
    if (!file_.is_open()) throw Error(ErrorCode::io_failed, "cannot read " + path + ": " + std::strerror(errno));
    const std::string header = file_.read(0, 100);
    header_ok_ = header.size() == 100 && header.compare(0, 16, std::string("SQLite format 3\0", 16)) == 0;
    std::uint32_t size = 0;
    if (header_ok_) {
      size = be16(header, 16) == 1 ? 65536 : be16(header, 16);
      reserved_ = static_cast<unsigned char>(header[20]);
      free_trunk_ = be32(header, 32);
      free_count_ = be32(header, 36);
      auto_vacuum_ = be32(header, 52) != 0;
    }
    const std::uint32_t wal_size = read_wal();
    if (!valid_size(size)) size = valid_size(wal_size) ? wal_size : 4096;  // kplay keeps SQLite's default
    if (wal_size != 0 && wal_size != size) wal_frames_.clear();  // a WAL of another page size is not this file's
    page_size_ = size;
    if (reserved_ >= page_size_ - 480) reserved_ = 0;  // damaged: SQLite needs 480 usable bytes
    usable_ = page_size_ - reserved_;
    count_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(file_.size() / page_size_, 0x7fffffff));
    if (wal_commit_pages_ != 0 && !wal_frames_.empty()) count_ = wal_commit_pages_;
  }

  std::uint32_t count() const { return count_; }
  std::uint32_t usable() const { return usable_; }
  bool header_ok() const { return header_ok_; }
  bool auto_vacuum() const { return auto_vacuum_; }
  std::uint32_t free_trunk() const { return free_trunk_; }
  std::uint32_t free_count() const { return free_count_; }
  std::uint32_t page_size() const { return page_size_; }

  // Page `n` (1-based), page_size() bytes, or "" when it cannot be read.
  std::string page(std::uint32_t n) const {
    if (n < 1 || n > count_) return {};
    std::string p;
    if (const auto it = wal_frames_.find(n); it != wal_frames_.end())
      p = wal_.read(it->second, page_size_);
    else
      p = file_.read(std::uint64_t{n - 1} * page_size_, page_size_);
    return p.size() == page_size_ ? p : std::string();
  }

 private:
  static bool valid_size(std::uint32_t s) { return s >= 512 && s <= 65536 && (s & (s - 1)) == 0; }

  // Indexes the WAL's committed frames; returns its page size, 0 when there is no usable WAL.
  std::uint32_t read_wal() {
    if (!wal_.is_open()) return 0;
    const std::string h = wal_.read(0, 32);
    if (h.size() != 32) return 0;
    const std::uint32_t magic = be32(h, 0);
    if ((magic & 0xfffffffe) != 0x377f0682 || be32(h, 4) != 3007000) return 0;
    const std::uint32_t size = be32(h, 8);
    if (!valid_size(size)) return 0;
    const bool big_endian = magic & 1;
    std::uint32_t s0 = 0, s1 = 0;
    auto checksum = [&](const std::string& data, std::size_t from, std::size_t n) {
      for (std::size_t i = from; i + 8 <= from + n; i += 8) {
        std::uint32_t x0 = be32(data, i), x1 = be32(data, i + 4);
        if (!big_endian) {
          x0 = __builtin_bswap32(x0);
          x1 = __builtin_bswap32(x1);
        }
        s0 += x0 + s1;
        s1 += x1 + s0;
      }
    };
    checksum(h, 0, 24);
    if (s0 != be32(h, 24) || s1 != be32(h, 28)) return 0;
    const std::uint32_t salt0 = be32(h, 16), salt1 = be32(h, 20);
    std::map<std::uint32_t, std::uint64_t> pending;
    for (std::uint64_t at = 32;; at += 24 + size) {
      const std::string frame = wal_.read(at, 24 + size);
      if (frame.size() != 24 + size || be32(frame, 8) != salt0 || be32(frame, 12) != salt1) break;
      checksum(frame, 0, 8);
      checksum(frame, 24, size);
      if (s0 != be32(frame, 16) || s1 != be32(frame, 20)) break;
      const std::uint32_t page = be32(frame, 0);
      if (page == 0) break;
      pending[page] = at + 24;
      if (const std::uint32_t commit = be32(frame, 4); commit != 0) {  // a commit: everything so far counts
        for (const auto& [n, offset] : pending) wal_frames_[n] = offset;
        pending.clear();
        wal_commit_pages_ = commit;
      }
    }
    return size;
  }

  Reader file_, wal_;
  bool header_ok_ = false, auto_vacuum_ = false;
  std::uint32_t page_size_ = 4096, reserved_ = 0, usable_ = 4096, count_ = 0;
  std::uint32_t free_trunk_ = 0, free_count_ = 0, wal_commit_pages_ = 0;
  std::unordered_map<std::uint32_t, std::uint64_t> wal_frames_;  // page -> offset of its data in the WAL
};

// SQLite's variable-length integer; false when it runs past `end`.
bool varint(const std::string& p, std::size_t& at, std::size_t end, std::uint64_t& out) {
  out = 0;
  for (int i = 0; i < 9; ++i) {
    if (at >= end) return false;
    const auto b = static_cast<unsigned char>(p[at++]);
    if (i == 8) {
      out = (out << 8) | b;
      return true;
    }
    out = (out << 7) | (b & 0x7f);
    if (!(b & 0x80)) return true;
  }
  return true;
}

struct Value {
  enum Kind { null, integer, real, text, blob } kind = null;
  std::int64_t i = 0;
  double r = 0;
  std::string s;
};

// A record (header of serial types, then the values); false unless it accounts for every byte.
bool decode_record(const std::string& payload, std::vector<Value>& out) {
  out.clear();
  std::size_t at = 0;
  std::uint64_t header_size = 0;
  if (!varint(payload, at, payload.size(), header_size) || header_size < at || header_size > payload.size())
    return false;
  std::vector<std::uint64_t> types;
  while (at < header_size) {
    std::uint64_t t = 0;
    if (!varint(payload, at, header_size, t) || t == 10 || t == 11) return false;
    types.push_back(t);
  }
  if (at != header_size || types.empty()) return false;
  std::size_t data = header_size;
  for (const std::uint64_t t : types) {
    static const std::size_t int_sizes[] = {0, 1, 2, 3, 4, 6, 8};
    Value v;
    std::size_t n = 0;
    if (t == 0) {
      v.kind = Value::null;
    } else if (t <= 6 || t == 8 || t == 9) {
      v.kind = Value::integer;
      n = t <= 6 ? int_sizes[t] : 0;
      if (data + n > payload.size()) return false;
      if (t == 8 || t == 9) {
        v.i = t == 9;
      } else {
        std::uint64_t x = static_cast<unsigned char>(payload[data]) & 0x80 ? ~std::uint64_t{0} : 0;  // sign
        for (std::size_t k = 0; k < n; ++k) x = (x << 8) | static_cast<unsigned char>(payload[data + k]);
        v.i = static_cast<std::int64_t>(x);
      }
    } else if (t == 7) {
      v.kind = Value::real;
      n = 8;
      if (data + n > payload.size()) return false;
      std::uint64_t x = 0;
      for (std::size_t k = 0; k < 8; ++k) x = (x << 8) | static_cast<unsigned char>(payload[data + k]);
      std::memcpy(&v.r, &x, sizeof x);
    } else {
      v.kind = t % 2 == 0 ? Value::blob : Value::text;
      const std::uint64_t len = (t - (t % 2 == 0 ? 12 : 13)) / 2;
      if (len > payload.size() - data) return false;
      n = static_cast<std::size_t>(len);
      v.s = payload.substr(data, n);
    }
    data += n;
    out.push_back(std::move(v));
  }
  return data == payload.size();
}

// What each page turned out to be.
enum Role : std::uint8_t { unknown, table_page, index_page, overflow_page, free_page, map_page };

struct Cell {
  std::int64_t rowid = 0;
  std::vector<Value> fields;
  std::vector<std::uint32_t> overflow;  // the chain, marked once the record is taken
  bool broken = false;                  // the page points to it, but it cannot be read whole
};

class Salvager {
 public:
  Salvager(const Pages& pages, Connection& out, SalvageReport& report)
      : pages_(pages), out_(out), report_(report), roles_(pages.count() + 1, unknown) {
    for (const TableShape& t : expected_tables()) report_.tables.push_back({t.name, 0, 0});
  }

  // Thrown by take() once a record with kplay's checks is kept, when stop_at_first() was asked.
  struct Found {};
  void stop_at_first() { stop_at_first_ = true; }

  void run() {
    report_.pages = pages_.count();
    mark_structure();
    // The tables as the schema finds them: each table's tree from its root, as far as it is intact.
    std::map<std::string, std::uint32_t> roots;
    walk_tree(1, [&](std::uint32_t, std::vector<Cell>& cells) {
      for (const Cell& c : cells)
        if (!c.broken && c.fields.size() == 5 && c.fields[0].kind == Value::text && c.fields[0].s == "table" &&
            c.fields[1].kind == Value::text && c.fields[3].kind == Value::integer && c.fields[3].i > 1 &&
            c.fields[3].i <= pages_.count())
          roots[c.fields[1].s] = static_cast<std::uint32_t>(c.fields[3].i);
      return true;
    });
    const auto& tables = expected_tables();
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const auto root = roots.find(tables[t].name);
      if (root == roots.end()) continue;
      walk_tree(root->second, [&](std::uint32_t, std::vector<Cell>& cells) {
        for (const Cell& c : cells)
          if (!c.broken && !fits(tables[t], c)) return false;  // not this table's page after all: left for the scan
        for (Cell& c : cells)
          if (c.broken)
            drop(t, tables[t].name + " record " + std::to_string(c.rowid) + ": its overflow pages are damaged");
          else
            take(t, c);
        return true;
      });
    }
    // Every page no tree reached: leaves whose parent was damaged, placed record by record.
    for (std::uint32_t n = 2; n <= pages_.count(); ++n) {
      if (roles_[n] != unknown) continue;
      const std::string p = pages_.page(n);
      if (p.empty()) continue;
      const auto type = static_cast<unsigned char>(p[0]);
      std::vector<Cell> cells;
      if (type == 0x0D && leaf_cells(n, p, cells)) {
        roles_[n] = table_page;
        for (Cell& c : cells) {
          const std::optional<std::size_t> t = c.broken ? std::nullopt : table_of(c);
          if (t)
            take(*t, c);
          else
            ++report_.unrecognized;
        }
      } else if ((type == 0x05 || type == 0x02 || type == 0x0A) && well_formed(n, p)) {
        roles_[n] = type == 0x05 ? table_page : index_page;  // interior pages hold no records; indexes are rebuilt
      }
    }
    for (std::uint32_t n = 1; n <= pages_.count(); ++n) report_.unreadable += roles_[n] == unknown;
  }

 private:
  // The freelist, pointer-map pages and the lock-byte page: pages that hold no records.
  void mark_structure() {
    const std::uint32_t count = pages_.count();
    const std::uint64_t lock_byte_page = (1ull << 30) / pages_.page_size() + 1;
    if (lock_byte_page <= count) roles_[lock_byte_page] = map_page;
    if (!pages_.header_ok()) return;
    if (pages_.auto_vacuum()) {
      const std::uint32_t per_map = pages_.usable() / 5 + 1;
      for (std::uint64_t n = 2; n <= count; n += per_map) roles_[n] = map_page;
    }
    std::uint32_t trunk = pages_.free_trunk();
    for (std::uint32_t seen = 0; trunk >= 2 && trunk <= count && roles_[trunk] == unknown && seen <= count; ++seen) {
      const std::string p = pages_.page(trunk);
      if (p.empty()) break;
      const std::uint32_t leaves = be32(p, 4);
      if (leaves > pages_.usable() / 4 - 2) break;  // not a trunk page: damaged
      bool plausible = true;
      for (std::uint32_t k = 0; k < leaves && plausible; ++k) {
        const std::uint32_t leaf = be32(p, 8 + 4 * k);
        plausible = leaf >= 2 && leaf <= count;
      }
      if (!plausible) break;
      roles_[trunk] = free_page;
      for (std::uint32_t k = 0; k < leaves; ++k)
        if (roles_[be32(p, 8 + 4 * k)] == unknown) roles_[be32(p, 8 + 4 * k)] = free_page;
      trunk = be32(p, 0);
    }
  }

  // A b-tree page's header and cell pointers are in bounds: the page can be parsed.
  bool well_formed(std::uint32_t n, const std::string& p) const {
    const std::size_t h = n == 1 ? 100 : 0;
    const auto type = static_cast<unsigned char>(p[h]);
    const std::size_t header = type == 0x05 || type == 0x02 ? 12 : 8;
    const std::uint32_t usable = pages_.usable();
    const std::uint32_t cells = be16(p, h + 3);
    if (h + header + 2 * std::size_t{cells} > usable) return false;
    for (std::uint32_t k = 0; k < cells; ++k) {
      const std::uint32_t at = be16(p, h + header + 2 * std::size_t{k});
      // A cell takes at least 4 bytes (an interior cell's child pointer, a leaf's padded minimum).
      if (at < h + header + 2 * std::size_t{cells} || at + 4 > usable) return false;
    }
    return true;
  }

  // The cells of a table leaf page, each a whole record with its overflow chain; false when the
  // page is not a well-formed table leaf. Cells that cannot be read are marked broken.
  bool leaf_cells(std::uint32_t n, const std::string& p, std::vector<Cell>& out) {
    const std::size_t h = n == 1 ? 100 : 0;
    if (static_cast<unsigned char>(p[h]) != 0x0D || !well_formed(n, p)) return false;
    const std::uint32_t usable = pages_.usable(), cells = be16(p, h + 3);
    for (std::uint32_t k = 0; k < cells; ++k) {
      std::size_t at = be16(p, h + 8 + 2 * std::size_t{k});
      std::uint64_t size = 0, rowid = 0;
      Cell c;
      c.broken = true;
      if (!varint(p, at, usable, size) || !varint(p, at, usable, rowid)) {
        out.push_back(std::move(c));
        continue;
      }
      c.rowid = static_cast<std::int64_t>(rowid);
      // How much of the payload the page holds (fileformat2, "Cell Payload Overflow Pages").
      const std::uint64_t max_local = usable - 35, min_local = (usable - 12) * 32 / 255 - 23;
      std::uint64_t local = size;
      if (size > max_local) {
        const std::uint64_t k2 = min_local + (size - min_local) % (usable - 4);
        local = k2 <= max_local ? k2 : min_local;
      }
      if (size <= (std::uint64_t{1} << 30) && at + local + (size > local ? 4 : 0) <= usable) {
        std::string payload = p.substr(at, static_cast<std::size_t>(local));
        c.broken = (size > local && !follow_overflow(be32(p, at + local), size - local, payload, c.overflow)) ||
                   !decode_record(payload, c.fields);
      }
      out.push_back(std::move(c));
    }
    return true;
  }

  bool follow_overflow(std::uint32_t page, std::uint64_t left, std::string& payload,
                       std::vector<std::uint32_t>& chain) {
    const std::uint32_t usable = pages_.usable();
    while (left > 0) {
      if (page < 2 || page > pages_.count() || roles_[page] != unknown) return false;
      for (const std::uint32_t seen : chain)
        if (seen == page) return false;
      const std::string p = pages_.page(page);
      if (p.empty()) return false;
      const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left, usable - 4));
      payload.append(p, 4, take);
      chain.push_back(page);
      left -= take;
      page = be32(p, 0);
    }
    return page == 0;  // the last page of a chain points nowhere
  }

  // Walks a table b-tree from `root`; `leaf` gets each leaf's cells and says whether the page
  // belongs to the tree. Damaged pages end their branch; their leaves are left for the scan.
  template <class F>
  void walk_tree(std::uint32_t root, F&& leaf) {
    std::vector<std::uint32_t> stack = {root};
    while (!stack.empty()) {
      const std::uint32_t n = stack.back();
      stack.pop_back();
      if (n < 1 || n > pages_.count() || roles_[n] != unknown) continue;
      const std::string p = pages_.page(n);
      if (p.empty()) continue;
      const std::size_t h = n == 1 ? 100 : 0;
      const auto type = static_cast<unsigned char>(p[h]);
      if (type == 0x05 && well_formed(n, p)) {
        roles_[n] = table_page;
        const std::uint32_t cells = be16(p, h + 3);
        stack.push_back(be32(p, h + 8));  // the right-most child
        for (std::uint32_t k = cells; k-- > 0;) stack.push_back(be32(p, be16(p, h + 12 + 2 * std::size_t{k})));
      } else if (type == 0x0D) {
        std::vector<Cell> cells;
        if (!leaf_cells(n, p, cells)) continue;
        roles_[n] = table_page;  // taken now, so the callback's overflow chains cannot claim it
        if (!leaf(n, cells)) roles_[n] = unknown;
      }
    }
  }

  // Whether a record has the fields of a table: as many as its columns (or fewer, when the rest
  // were added later and may be NULL or have a default), each of its column's type.
  static bool fits(const TableShape& t, const Cell& c) {
    if (c.fields.size() > t.columns.size()) return false;
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      const TableShape::Column& col = t.columns[i];
      if (i >= c.fields.size()) {
        if (col.not_null && !col.has_default) return false;
        continue;
      }
      const Value& v = c.fields[i];
      if (col.rowid) {
        if (v.kind != Value::null) return false;
        continue;
      }
      if (v.kind == Value::null) {
        if (col.not_null) return false;
        continue;
      }
      const bool ok = (col.type == "TEXT" && v.kind == Value::text) || (col.type == "BLOB" && v.kind == Value::blob) ||
                      (col.type == "INTEGER" && v.kind == Value::integer) ||
                      (col.type == "REAL" && (v.kind == Value::real || v.kind == Value::integer));
      if (!ok) return false;
    }
    return true;
  }

  // The one table a record fits, if exactly one.
  static std::optional<std::size_t> table_of(const Cell& c) {
    std::optional<std::size_t> found;
    const auto& tables = expected_tables();
    for (std::size_t t = 0; t < tables.size(); ++t)
      if (fits(tables[t], c)) {
        if (found) return std::nullopt;
        found = t;
      }
    return found;
  }

  const Value* field(std::size_t table, const Cell& c, const char* column) const {
    const auto& cols = expected_tables()[table].columns;
    for (std::size_t i = 0; i < cols.size() && i < c.fields.size(); ++i)
      if (cols[i].name == column) return &c.fields[i];
    return nullptr;
  }
  std::string text(std::size_t table, const Cell& c, const char* column) const {
    const Value* v = field(table, c, column);
    return v && (v->kind == Value::text || v->kind == Value::blob) ? v->s : std::string();
  }

  // The checks kplay makes when it uses a record; "" when it passes.
  std::string check(std::size_t table, const Cell& c) const {
    const std::string& name = expected_tables()[table].name;
    try {
      if (name == "binaries") {
        const std::string key = text(table, c, "key"), bytes = text(table, c, "bytes");
        const Value* size = field(table, c, "size");
        if (text(table, c, "checksum") != checksum(bytes) || !size ||
            size->i != static_cast<std::int64_t>(bytes.size()))
          return "binary " + key.substr(0, 40) + ": its bytes do not match its checksum";
        const Value* hash = field(table, c, "content_hash");
        if (hash && hash->kind != Value::null && hash->s != content_hash(key, text(table, c, "format"), bytes))
          return "binary " + key.substr(0, 40) + ": its bytes do not match its content hash";
      } else if (name == "tunings") {
        parse_direction(text(table, c, "direction"));
        parse_dtype(text(table, c, "dtype"));
        parse_saved(text(table, c, "saved"));
        config_from_text(text(table, c, "best_config"));
      } else if (name == "candidates" || name == "progress") {
        config_from_text(text(table, c, "config"));
      }
    } catch (const Error& e) {
      return name + " record " + std::to_string(c.rowid) + ": " + e.what();
    }
    return {};
  }

  void drop(std::size_t table, const std::string& why) {
    ++report_.tables[table].dropped;
    if (report_.reasons.size() < 8) report_.reasons.push_back(why);
  }

  // Checks a record and writes it into the new file; a record already there (the same row found
  // twice) is not counted again.
  void take(std::size_t table, Cell& c) {
    if (const std::string why = check(table, c); !why.empty()) {
      drop(table, why);  // its chain stays unclaimed: a damaged pointer may have led into another page
      return;
    }
    for (const std::uint32_t page : c.overflow) roles_[page] = overflow_page;
    const TableShape& t = expected_tables()[table];
    std::string columns, values;
    for (std::size_t i = 0; i < t.columns.size() && i < c.fields.size(); ++i) {
      columns += (i ? ", " : "") + t.columns[i].name;
      values += (i ? ", ?" : "?") + std::to_string(i + 1);
    }
    Statement s(out_, "INSERT OR IGNORE INTO " + t.name + " (" + columns + ") VALUES (" + values + ")");
    for (std::size_t i = 0; i < t.columns.size() && i < c.fields.size(); ++i) {
      const Value& v = c.fields[i];
      const int k = static_cast<int>(i + 1);
      if (t.columns[i].rowid)
        s.bind(k, c.rowid);
      else if (v.kind == Value::integer && t.columns[i].type == "REAL")
        s.bind(k, static_cast<double>(v.i));
      else if (v.kind == Value::integer)
        s.bind(k, v.i);
      else if (v.kind == Value::real)
        s.bind(k, v.r);
      else if (v.kind == Value::text)
        s.bind(k, v.s);
      else if (v.kind == Value::blob)
        s.bind_blob(k, v.s);
      else
        s.bind_null(k);
    }
    s.run();
    report_.tables[table].kept += out_.changes() > 0;
    if (stop_at_first_ && t.name != "devices") throw Found{};  // devices carry no check of kplay's
  }

  const Pages& pages_;
  Connection& out_;
  SalvageReport& report_;
  std::vector<Role> roles_;
  bool stop_at_first_ = false;
};

std::string plural(std::uint64_t n, const std::string& table) {
  static const std::map<std::string, std::pair<const char*, const char*>> words = {
      {"binaries", {"binary", "binaries"}},
      {"devices", {"device", "devices"}},
      {"tunings", {"tuning record", "tuning records"}},
      {"candidates", {"candidate", "candidates"}},
      {"progress", {"progress entry", "progress entries"}}};
  const auto it = words.find(table);
  const std::string word = it == words.end() ? table : n == 1 ? it->second.first : it->second.second;
  return std::to_string(n) + " " + word;
}

}  // namespace

std::uint64_t SalvageReport::kept() const {
  std::uint64_t n = 0;
  for (const auto& t : tables) n += t.kept;
  return n;
}

std::uint64_t SalvageReport::dropped() const {
  std::uint64_t n = 0;
  for (const auto& t : tables) n += t.dropped + t.orphaned;
  return n;
}

std::string SalvageReport::summary() const {
  std::string kept_text, dropped_text;
  for (const auto& t : tables) {
    kept_text += (kept_text.empty() ? "" : ", ") + plural(t.kept, t.name);
    if (t.dropped)
      dropped_text += (dropped_text.empty() ? "" : ", ") + plural(t.dropped, t.name) +
                      (t.dropped == 1 ? " that failed its checks" : " that failed their checks");
    if (t.orphaned)
      dropped_text += (dropped_text.empty() ? "" : ", ") + plural(t.orphaned, t.name) +
                      (t.orphaned == 1 ? " whose tuning record was lost" : " whose tuning records were lost");
  }
  std::string out = "kept " + kept_text;
  out += dropped_text.empty() ? "; dropped none" : "; dropped " + dropped_text;
  if (!reasons.empty()) out += " (" + reasons.front() + (reasons.size() > 1 ? ", ..." : "") + ")";
  if (unrecognized) out += "; " + std::to_string(unrecognized) + " more records could not be read or placed in a table";
  out += "; " + std::to_string(unreadable) + " of " + std::to_string(pages) +
         " pages could not be used (damaged, or part of a damaged record)";
  return out;
}

SalvageReport salvage(const std::string& damaged, const std::string& fresh) {
  Connection out(fresh);
  out.exec("PRAGMA auto_vacuum = INCREMENTAL");
  return salvage_into(damaged, out);
}

bool holds_kplay_records(const std::string& path) {
  const Pages pages(path);
  SalvageReport report;
  Connection out(":memory:");
  migrate(out);
  Transaction t(out);
  Salvager salvager(pages, out, report);
  salvager.stop_at_first();
  try {
    salvager.run();
  } catch (const Salvager::Found&) {
    return true;
  }
  return false;
}

SalvageReport salvage_into(const std::string& damaged, Connection& out) {
  const Pages pages(damaged);
  SalvageReport report;
  migrate(out);
  {
    Transaction t(out);
    Salvager(pages, out, report).run();
    // Candidates of a tuning record that was lost cannot be used: dropped with it.
    const std::int64_t orphans =
        out.query_int("SELECT COUNT(*) FROM candidates WHERE tuning_id NOT IN (SELECT id FROM tunings)");
    if (orphans > 0) {
      out.exec("DELETE FROM candidates WHERE tuning_id NOT IN (SELECT id FROM tunings)");
      for (auto& table : report.tables)
        if (table.name == "candidates") {
          table.kept -= static_cast<std::uint64_t>(orphans);
          table.orphaned += static_cast<std::uint64_t>(orphans);
        }
    }
    t.commit();
  }
  return report;
}

}  // namespace kplay::db
