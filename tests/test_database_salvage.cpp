// A damaged kernel database loses only what was on its damaged pages: the rest is salvaged record
// by record into a new file, and the damaged one is kept beside it. Before the damage, SQLite's
// dbstat table says which pages each record lives on (its leaf and overflow pages), so the test
// knows which records sit on pages the damage left intact: every one of those must come back,
// byte for byte, and nothing may come back that was not there. A candidate counts as intact only
// with its tuning record: without it, it is never used.
#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "cli_runner.hpp"
#include "database/salvage.hpp"
#include "database/schema.hpp"
#include "database/sqlite.hpp"
#include "db_test_support.hpp"
#include "engine/device_fingerprint.hpp"

using namespace kplay;
using kplay::test::open_db;
using kplay::test::TempDir;
using kplay::test::Warnings;

namespace {

constexpr std::size_t kPage = 4096;  // SQLite's default, which kplay keeps

// Binaries of `binary_bytes` (1700: two to a page; 64 KiB: 16 overflow pages each), devices,
// tunings with candidates, and progress.
void fill(const std::string& path, int binaries, int tunings, std::size_t binary_bytes = 1700) {
  auto db = open_db(path);
  REQUIRE(db->persistent());
  std::mt19937 rng(5);
  for (int i = 0; i < binaries; ++i) {
    rt::Binary b;
    b.format = "opencl-binary";
    b.bytes.resize(binary_bytes + i % 50);
    for (char& ch : b.bytes) ch = static_cast<char>(rng());
    db->put("key-" + std::to_string(i), b);
  }
  std::vector<std::string> fingerprints;  // real ones: `db verify` checks records as an import would
  for (int d = 0; d < 8; ++d) {
    rt::DeviceInfo info;
    info.backend = "opencl";
    info.name = "Device " + std::to_string(d);
    info.arch = "cpu";
    info.note = "device " + std::to_string(d);
    fingerprints.push_back(device_fingerprint(info));
    db->put_device(fingerprints.back(), info);
  }
  for (int i = 0; i < tunings; ++i) {
    TuningRecord r;
    r.fingerprint = fingerprints[static_cast<std::size_t>(i % 8)];
    r.backend = "opencl";
    r.device_name = "Device " + std::to_string(i % 8);
    r.arch = "cpu";
    r.spec.activation = i / 8 % 2 ? "relu" : "silu";
    r.n = 1ull << (4 + i / 16);  // with device and activation: one key each (i < 640)
    r.best.block = 64;
    r.best_ms = 0.5 + i;
    r.best_gbps = 10 + i;
    r.strategy = "exhaustive";
    for (int k = 0; k < 3; ++k) {
      CandidateResult c;
      c.config.block = 32 << k;
      c.ok = k != 2;
      c.median_ms = 0.25 * k + i;
      c.rejection = c.ok ? "" : "wrong output";
      r.candidates.push_back(c);
    }
    db->save_tuning(r);
  }
  for (int i = 0; i < 20; ++i) {
    CandidateResult c;
    c.config.block = 32 << (i % 5);
    c.rejection = "run " + std::to_string(i);
    db->save_progress("run-" + std::to_string(i / 5), c);
  }
}

// Each table's rows as text (every column quoted, the rowid alias included), in rowid order, and
// the pages each lives on: its leaf and its overflow pages, as SQLite's dbstat table lays them
// out in the undamaged file (the cells of the leaves, in tree order, are the rows in rowid order).
struct Row {
  std::string text;
  std::set<std::size_t> pages;
  std::int64_t tuning = -1;  // a candidate's tuning record: it is only usable with it
};
std::map<std::string, std::vector<Row>> rows_of(const std::string& path, bool with_pages) {
  std::map<std::string, std::vector<Row>> out;
  db::Connection c(path);
  for (const auto& t : db::expected_tables()) {
    std::string columns;
    for (const auto& col : t.columns) columns += (columns.empty() ? "" : " || '|' || ") + ("quote(" + col.name + ")");
    const std::string tuning = t.name == "candidates" ? "tuning_id" : std::string("-1");
    db::Statement s(c, "SELECT " + columns + ", " + tuning + " FROM " + t.name + " ORDER BY rowid");
    auto& rows = out[t.name];
    while (s.step()) rows.push_back({s.column_text(0), {}, s.column_int(1)});
    if (!with_pages) continue;
    std::map<std::string, std::size_t> first_row;  // leaf path -> index of its first cell's row
    std::size_t next = 0;
    db::Statement pages(c, "SELECT path, pageno, pagetype, ncell FROM dbstat WHERE name = ?1");
    pages.bind(1, t.name);
    while (pages.step()) {
      const std::string where = pages.column_text(0), type = pages.column_text(2);
      const auto page = static_cast<std::size_t>(pages.column_int(1));
      if (type == "leaf") {
        first_row[where] = next;
        for (std::int64_t k = 0; k < pages.column_int(3); ++k) {
          REQUIRE(next < rows.size());
          rows[next++].pages.insert(page);
        }
      } else if (type == "overflow") {  // "<leaf path><cell, 3 hex digits>+<index>"
        const std::size_t slash = where.rfind('/');
        const std::size_t cell = std::stoul(where.substr(slash + 1, where.find('+') - slash - 1), nullptr, 16);
        rows.at(first_row.at(where.substr(0, slash + 1)) + cell).pages.insert(page);
      }
    }
    REQUIRE(next == rows.size());
  }
  return out;
}

struct Outcome {
  std::size_t total = 0, on_intact = 0, kept = 0, kept_of_intact = 0, invented = 0;
};

// Salvages `path` after `damage` (which returns the pages it touched) and checks the result
// against the file's records before it.
Outcome damage_and_salvage(const std::string& path, const std::function<std::set<std::size_t>(std::string&)>& damage) {
  REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));  // closed: everything is in the file
  const auto before = rows_of(path, true);
  std::string bytes = test::read_file(path);
  const std::set<std::size_t> damaged = damage(bytes);
  test::write_file(path, bytes);

  Warnings w;
  auto db = open_db(path, &w);  // damage found on opening is salvaged right away
  CHECK(db->persistent());
  const auto report = db->verify(true);  // as `kplay db verify --fix`: damage anywhere is salvaged now
  db.reset();
  INFO(w.all());
  MESSAGE("salvage: " << (report.salvage.empty() ? w.all() : report.salvage));
  const auto after = rows_of(path, false);
  std::map<std::string, std::set<std::string>> kept, original;
  for (const auto& [table, rows] : after)
    for (const Row& r : rows) kept[table].insert(r.text);
  auto untouched = [&](const Row& r) {
    for (const std::size_t p : r.pages)
      if (damaged.count(p)) return false;
    return true;
  };
  std::map<std::int64_t, bool> tuning_intact;  // by id: the first field of a tunings row
  for (const Row& r : before.at("tunings")) tuning_intact[std::stoll(r.text)] = untouched(r);
  Outcome o;
  for (const auto& [table, rows] : before) {
    for (const Row& r : rows) {
      original[table].insert(r.text);
      ++o.total;
      const bool intact = untouched(r) && (r.tuning < 0 || tuning_intact[r.tuning]);
      const bool survived = kept[table].count(r.text) > 0;
      o.kept += survived;
      if (!intact) continue;
      ++o.on_intact;
      o.kept_of_intact += survived;
      if (!survived) FAIL_CHECK(table << " record on intact pages was lost: " << r.text.substr(0, 200));
    }
    for (const std::string& text : kept[table])
      if (!original[table].count(text)) {
        ++o.invented;
        FAIL_CHECK(table << ": a salvaged record that was not in the file: " << text.substr(0, 200));
      }
  }
  // A candidate is usable only with its tuning record: every kept one has its record.
  db::Connection c(path);
  CHECK(c.query_int("SELECT COUNT(*) FROM candidates WHERE tuning_id NOT IN (SELECT id FROM tunings)") == 0);
  CHECK(c.query_text("PRAGMA integrity_check") == "ok");
  return o;
}

std::string outcome_text(const Outcome& o) {
  return std::to_string(o.kept) + " of " + std::to_string(o.total) + " records kept; " +
         std::to_string(o.kept_of_intact) + " of the " + std::to_string(o.on_intact) +
         " on intact pages (must be all), " + std::to_string(o.invented) + " invented";
}

std::vector<std::string> moved_aside(const std::string& path) {
  std::vector<std::string> out;
  const std::filesystem::path p(path);
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path())) {
    const std::string f = e.path().filename().string();
    if (f.rfind(p.filename().string() + ".corrupt-", 0) == 0 && f.find("-wal") == std::string::npos)
      out.push_back(e.path().string());
  }
  return out;
}

// The root page of a table, as SQLite's schema records it.
std::size_t root_page(const std::string& path, const std::string& table) {
  db::Connection c(path);
  db::Statement s(c, "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1");
  s.bind(1, table);
  REQUIRE(s.step());
  return static_cast<std::size_t>(s.column_int(0));
}

void overwrite_page(std::string& bytes, std::size_t page, std::mt19937& rng) {
  for (std::size_t i = 0; i < kPage && (page - 1) * kPage + i < bytes.size(); ++i)
    bytes[(page - 1) * kPage + i] = static_cast<char>(rng());
}

}  // namespace

TEST_CASE("salvage: 64 KB of random bytes in the middle keep every record outside them") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  fill(path, 300, 60);
  std::string damaged_copy;
  const Outcome o = damage_and_salvage(path, [&](std::string& bytes) {
    std::mt19937 rng(43);
    const std::size_t from = bytes.size() / 2 - 32768 + 1000;  // not page-aligned: 17 pages touched
    std::set<std::size_t> pages;
    for (std::size_t i = from; i < from + 65536 && i < bytes.size(); ++i) {
      bytes[i] = static_cast<char>(rng());
      pages.insert(i / kPage + 1);
    }
    damaged_copy = bytes;
    return pages;
  });
  MESSAGE("64 KB of random bytes: " << outcome_text(o));
  CHECK(o.kept_of_intact == o.on_intact);
  CHECK(o.invented == 0);
  const auto aside = moved_aside(path);  // the damaged file is kept as it was
  REQUIRE(aside.size() == 1);
  CHECK(test::read_file(aside[0]) == damaged_copy);
}

TEST_CASE("salvage: 1 % of the pages overwritten keeps every record on an intact page") {
  for (const unsigned seed : {1u, 2u, 3u, 4u}) {
    CAPTURE(seed);
    TempDir dir;
    const std::string path = dir.file("kernels.db");
    fill(path, 800, 200);
    const Outcome o = damage_and_salvage(path, [&](std::string& bytes) {
      std::mt19937 rng(seed);
      const std::size_t pages = bytes.size() / kPage;
      std::set<std::size_t> hit;
      while (hit.size() < std::max<std::size_t>(1, pages / 100)) hit.insert(rng() % pages + 1);
      for (const std::size_t p : hit) overwrite_page(bytes, p, rng);
      std::string list;
      for (const std::size_t p : hit) list += " " + std::to_string(p);
      MESSAGE("seed " << seed << ": overwrote " << hit.size() << " of " << pages << " pages:" << list);
      return hit;
    });
    MESSAGE("1 % of pages, seed " << seed << ": " << outcome_text(o));
    CHECK(o.kept_of_intact == o.on_intact);
    CHECK(o.invented == 0);
  }
}

// The case: 4 tuning records and 66 binaries of 64 KiB, 64 KiB of random bytes in the
// middle of the file.
TEST_CASE("salvage: 4 tunings and 66 binaries of 64 KiB keep every record the random bytes missed") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  fill(path, 66, 4, 64 << 10);
  const Outcome o = damage_and_salvage(path, [&](std::string& bytes) {
    std::mt19937 rng(64);
    const std::size_t from = bytes.size() / 2;
    std::set<std::size_t> pages;
    for (std::size_t i = from; i < from + 65536 && i < bytes.size(); ++i) {
      bytes[i] = static_cast<char>(rng());
      pages.insert(i / kPage + 1);
    }
    return pages;
  });
  MESSAGE("66 binaries of 64 KiB, 64 KiB of random bytes: " << outcome_text(o));
  CHECK(o.kept_of_intact == o.on_intact);
  CHECK(o.invented == 0);
}

// The root page of one table (an interior page once the table spans several) destroyed: the other
// tables come through whole, and the table's own leaves are found by the scan.
TEST_CASE("salvage: a damaged root page of binaries, tunings or candidates loses no other table") {
  for (const std::string table : {"binaries", "tunings", "candidates", "sqlite_master"}) {
    CAPTURE(table);
    TempDir dir;
    const std::string path = dir.file("kernels.db");
    fill(path, 300, 120);
    const std::size_t root = table == "sqlite_master" ? 1 : root_page(path, table);
    const Outcome o = damage_and_salvage(path, [&](std::string& bytes) {
      std::mt19937 rng(7);
      overwrite_page(bytes, root, rng);
      return std::set<std::size_t>{root};
    });
    MESSAGE("root page " << root << " of " << table << " overwritten: " << outcome_text(o));
    CHECK(o.kept_of_intact == o.on_intact);
    CHECK(o.invented == 0);
  }
}

// Records committed to the WAL but not yet copied into the file are salvaged from the WAL.
TEST_CASE("salvage: records still in the WAL are read from it") {
  TempDir dir;
  const std::string live = dir.file("live.db"), copy = dir.file("copy.db");
  fill(live, 40, 10);
  auto db = open_db(live);  // kept open: its WAL is not checkpointed away
  TuningRecord r;
  r.fingerprint = "fp-wal";
  r.backend = "opencl";
  r.arch = "cpu";
  r.n = 1 << 30;
  r.strategy = "only in the WAL";
  db->save_tuning(r);
  db->put("wal-key", test::make_binary("wal"));
  REQUIRE(std::filesystem::file_size(live + "-wal") > 0);
  std::filesystem::copy_file(live, copy);
  std::filesystem::copy_file(live + "-wal", copy + "-wal");
  {  // the file's header page destroyed: SQLite cannot open it at all
    std::string bytes = test::read_file(copy);
    std::mt19937 rng(3);
    overwrite_page(bytes, 1, rng);
    test::write_file(copy, bytes);
  }
  const auto report = db::salvage(copy, dir.file("fresh.db"));
  MESSAGE("header page destroyed, WAL intact: " << report.summary());
  auto salvaged = open_db(dir.file("fresh.db"));
  CHECK(salvaged->find_tuning("fp-wal", "cpu", "opencl", KernelSpec{}, 1 << 30));
  rt::Binary out;
  CHECK(salvaged->get("wal-key", out));
  CHECK(salvaged->get("key-39", out));
}

TEST_CASE("salvage: kplay db verify reports a damaged file; --fix says what it kept and dropped") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  fill(path, 200, 40);
  const std::size_t root = root_page(path, "tunings");
  {
    std::string bytes = test::read_file(path);
    std::mt19937 rng(11);
    overwrite_page(bytes, root, rng);
    overwrite_page(bytes, bytes.size() / kPage / 2, rng);  // and a page of binaries
    test::write_file(path, bytes);
  }
  const std::string damaged = test::read_file(path);
  const auto check = test::run_cli("db verify --db " + path, "env -u KPLAY_DB");
  INFO(check.output);
  CHECK(check.status == 1);
  CHECK_FALSE(check.has("clean"));
  CHECK(check.has("FAILED"));
  CHECK(test::read_file(path) == damaged);  // verify alone changes nothing
  CHECK(moved_aside(path).empty());

  const auto fix = test::run_cli("db verify --fix --db " + path, "env -u KPLAY_DB");
  INFO(fix.output);
  CHECK(fix.has("salvaged into a new file: kept "));
  CHECK(fix.has(" tuning records, "));
  CHECK(fix.has(" pages could not be used"));
  CHECK(fix.has("the damaged file is kept as " + path + ".corrupt-"));
  CHECK_FALSE(fix.has("clean now"));
  CHECK(fix.status == 0);  // the new file is clean
  REQUIRE(moved_aside(path).size() == 1);
  CHECK(test::read_file(moved_aside(path)[0]) == damaged);
  const auto list = test::run_cli("db list --db " + path, "env -u KPLAY_DB");
  INFO(list.output);
  CHECK(list.status == 0);
  CHECK(list.has("Device 3"));  // the tuning records outlived their table's root page
  const auto again = test::run_cli("db verify --db " + path, "env -u KPLAY_DB");
  CHECK(again.status == 0);
}

TEST_CASE("salvage: kplay db list on a file whose tunings root page is damaged lists what can be read, moves nothing") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  fill(path, 100, 40);
  const std::size_t root = root_page(path, "tunings");
  {
    std::string bytes = test::read_file(path);
    std::mt19937 rng(13);
    overwrite_page(bytes, root, rng);
    test::write_file(path, bytes);
  }
  const std::string damaged = test::read_file(path);
  const auto list = test::run_cli("db list --db " + path, "env -u KPLAY_DB");
  INFO(list.output);
  CHECK(list.status == 0);
  CHECK(list.has("is damaged"));
  CHECK(list.has("it is left as it is"));
  CHECK(list.has("`kplay db verify --fix` salvages it"));
  for (int d = 0; d < 8; ++d) CHECK(list.has("Device " + std::to_string(d)));
  CHECK(test::read_file(path) == damaged);  // a command that only reads moves and writes nothing
  CHECK(moved_aside(path).empty());
}

// Damage of every shape the reader may meet: random bytes, zeroed pages, and pages that pass for
// b-tree pages (a leaf's or an interior page's type byte over random cell pointers), on random
// pages and on the header page. Nothing on an intact page is lost and nothing is made up.
TEST_CASE("salvage: pages that look like b-tree pages but hold random cells are survived") {
  for (const unsigned seed : {21u, 22u, 23u, 24u, 25u, 26u}) {
    CAPTURE(seed);
    TempDir dir;
    const std::string path = dir.file("kernels.db");
    fill(path, 150, 40);
    const Outcome o = damage_and_salvage(path, [&](std::string& bytes) {
      std::mt19937 rng(seed);
      const std::size_t pages = bytes.size() / kPage;
      std::set<std::size_t> hit = {seed % 3 == 0 ? std::size_t{1} : rng() % pages + 1};
      while (hit.size() < 6) hit.insert(rng() % pages + 1);
      for (const std::size_t p : hit) {
        overwrite_page(bytes, p, rng);
        const std::size_t at = (p - 1) * kPage + (p == 1 ? 100 : 0);
        switch (rng() % 3) {
          case 0: break;  // random bytes
          case 1: std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>((p - 1) * kPage), kPage, '\0'); break;
          default:  // a b-tree page's type and a plausible cell count over random pointers
            bytes[at] = rng() % 2 ? '\x0D' : '\x05';
            bytes[at + 3] = 0;
            bytes[at + 4] = static_cast<char>(rng() % 40);
        }
      }
      return hit;
    });
    MESSAGE("seed " << seed << ": " << outcome_text(o));
    CHECK(o.kept_of_intact == o.on_intact);
    CHECK(o.invented == 0);
  }
}
