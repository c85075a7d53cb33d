// The kernel database under trouble: damaged and truncated files, unusable directories, newer or
// foreign files, concurrent processes, the cross-process compile lock, and SIGKILL mid-write.
// The second processes are tests/db_stress_main.cpp.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <atomic>
#include <cstdio>

#include "database/schema.hpp"
#include "db_test_support.hpp"

using namespace kplay;
using kplay::test::open_db;
using kplay::test::TempDir;
using kplay::test::Warnings;

namespace {
std::vector<std::string> moved_aside(const std::string& dir, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(name + ".corrupt-", 0) == 0 && f.find("-wal") == std::string::npos) out.push_back(e.path().string());
  }
  return out;
}

// Put, get, tune and look up: the database works, whatever happened before.
void check_works(KernelDatabase& db) {
  db.put("k", test::make_binary("works"));
  rt::Binary out;
  CHECK(db.get("k", out));
  CHECK(out.bytes == test::make_binary("works").bytes);
  TuningRecord r;
  r.fingerprint = "fp";
  r.backend = "cuda";
  r.arch = "sm_90";
  r.n = 1 << 20;
  db.save_tuning(r);
  CHECK(db.find_tuning("fp", "sm_90", "cuda", KernelSpec{}, 1 << 20));
  CHECK(db.verify(false).integrity_ok);
}

void fill(const std::string& path, int binaries) {
  auto db = open_db(path);
  for (int i = 0; i < binaries; ++i) db->put("key" + std::to_string(i), test::make_binary("fill", 20000));
}
}  // namespace

TEST_CASE("reliability: a file of garbage as kplay's own database is moved aside, a new one starts, one warning") {
  TempDir dir;
  const test::OwnCacheFolder own(dir.path());  // only kplay writes there: whatever is in it is kplay's
  const std::string path = own.database();
  const std::string folder = dir.file("kplay");
  std::string garbage(64 * 1024, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 2654435761u >> 13);
  test::write_file(path, garbage);
  Warnings w;
  auto db = open_db(path, &w);
  CHECK(db->persistent());
  check_works(*db);
  CHECK(w.size() == 1);
  CHECK(w.all().find("moved it to") != std::string::npos);
  const auto aside = moved_aside(folder, "kernels.db");
  REQUIRE(aside.size() == 1);
  CHECK(test::read_file(aside[0]) == garbage);
  db.reset();
  Warnings again;
  auto reopened = open_db(path, &again);  // the new file is fine: no more warnings
  rt::Binary out;
  CHECK(reopened->get("k", out));
  CHECK(again.size() == 0);
}

TEST_CASE("reliability: a truncated file is salvaged into a new one and moved aside, one warning") {
  for (std::uintmax_t keep : {50u, 4096u, 100000u}) {
    TempDir dir;
    // 50 bytes keep nothing of kplay's but the file's place: its own database folder.
    const test::OwnCacheFolder own(dir.path());
    const std::string path = own.database();
    const std::string folder = dir.file("kplay");
    fill(path, 20);
    REQUIRE(std::filesystem::file_size(path) > 200000);
    REQUIRE_FALSE(std::filesystem::exists(path + "-wal"));  // the last close checkpointed it
    std::filesystem::resize_file(path, keep);
    INFO("truncated to " << keep << " bytes");
    Warnings w;
    auto db = open_db(path, &w);
    CHECK(db->persistent());
    check_works(*db);
    rt::Binary out;
    CHECK_FALSE(db->get("key19", out));  // its pages were cut off
    for (int i = 0; i < 19; ++i)         // what the cut left whole may be salvaged, and only as it was
      if (db->get("key" + std::to_string(i), out)) CHECK(out.bytes == test::make_binary("fill", 20000).bytes);
    CHECK(w.size() == 1);
    CHECK(moved_aside(folder, "kernels.db").size() == 1);
  }
}

TEST_CASE("reliability: damage found while open is recovered from without a crash") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  fill(path, 20);
  Warnings w;
  auto db = open_db(path, &w);
  {  // another party scribbles over the middle of the file
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    REQUIRE(f);
    std::fseek(f, 8192, SEEK_SET);
    const std::string junk(64 * 1024, '\x5a');
    std::fwrite(junk.data(), 1, junk.size(), f);
    std::fclose(f);
  }
  rt::Binary out;
  for (int i = 0; i < 20; ++i) db->get("key" + std::to_string(i), out);  // misses or hits; never throws
  check_works(*db);
  CHECK(w.size() <= 2);
}

TEST_CASE("reliability: a directory that cannot be created means memory, one warning, still working") {
  TempDir dir;
  test::write_file(dir.file("file.txt"), "a regular file\n");
  std::vector<std::string> paths = {dir.file("file.txt/sub/kernels.db")};
  if (geteuid() != 0) {  // root writes through permissions, so only test chmod as a normal user
    std::filesystem::create_directory(dir.file("ro"));
    ::chmod(dir.file("ro").c_str(), 0555);
    paths.push_back(dir.file("ro/kernels.db"));
    paths.push_back(dir.file("ro/sub/kernels.db"));
  }
  for (const auto& path : paths) {
    INFO(path);
    Warnings w;
    auto db = open_db(path, &w);
    CHECK_FALSE(db->persistent());
    CHECK(db->path() == path);
    check_works(*db);
    CHECK(db->lock("k") == nullptr);
    db->put("k2", test::make_binary("again"));
    CHECK(w.size() == 1);
    CHECK(w.all().find("without persistence") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(path));
  }
}

TEST_CASE("reliability: an older schema version is upgraded; newer or foreign files are not touched") {
  TempDir dir;
  {  // version 0: a plain empty SQLite file
    db::Connection c(dir.file("old.db"));
    c.exec("PRAGMA user_version = 0");
  }
  Warnings w;
  {
    auto db = open_db(dir.file("old.db"), &w);
    CHECK(db->persistent());
    check_works(*db);
  }
  {
    db::Connection c(dir.file("old.db"));
    CHECK(c.query_int("PRAGMA user_version") == db::kSchemaVersion);
  }
  CHECK(w.size() == 0);

  const std::string newer = dir.file("newer.db"), foreign = dir.file("foreign.db");
  {
    db::Connection c(newer);
    db::migrate(c);
    c.exec("PRAGMA user_version = " + std::to_string(db::kSchemaVersion + 1));
    db::Connection f(foreign);
    f.exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)");
  }
  for (const auto& [path, message] : {std::pair{newer, "newer kplay"}, std::pair{foreign, "not a kplay database"}}) {
    const std::string before = test::read_file(path);
    Warnings ww;
    {
      auto db = open_db(path, &ww);
      CHECK_FALSE(db->persistent());
      check_works(*db);
    }
    CHECK(test::read_file(path) == before);
    CHECK(ww.size() == 1);
    CHECK(ww.all().find(message) != std::string::npos);
    CHECK(moved_aside(dir.path(), std::filesystem::path(path).filename().string()).empty());
  }
}

TEST_CASE("reliability: two processes writing the same keys both finish and leave a clean database") {
  TempDir dir;
  const std::string path = dir.file("shared/kernels.db");  // both create it at once
  const pid_t a = test::spawn_stress({"stress", path, "1", "200"});
  const pid_t b = test::spawn_stress({"stress", path, "2", "200"});
  CHECK(test::wait_child(a) == 0);
  CHECK(test::wait_child(b) == 0);
  Warnings w;
  auto db = open_db(path, &w);
  const auto report = db->verify(false);
  CHECK(report.integrity_ok);
  CHECK(report.bad == 0);
  CHECK(report.problems.empty());
  CHECK(report.binaries == 200);
  CHECK(report.tunings > 0);
  CHECK(w.size() == 0);
}

TEST_CASE("reliability: threads sharing one database object and a second object in one process") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  auto one = open_db(path), two = open_db(path);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      KernelDatabase& db = t % 2 ? *one : *two;
      for (int i = 0; i < 50; ++i) {
        const std::string key = "t" + std::to_string(i % 20);
        db.put(key, test::make_binary(key, 700));
        rt::Binary out;
        if (!db.get(key, out) || out.bytes != test::make_binary(key, 700).bytes) ++failures;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(one->verify(false).problems.empty());
}

TEST_CASE("reliability: lock(key) waits for another process's lock on the same key") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  auto db = open_db(path);
  const pid_t holder = test::spawn_stress({"hold-lock", path, "key-1", dir.file("ready"), "1500"});
  REQUIRE(test::wait_for_file(dir.file("ready")));
  {
    auto other = db->lock("key-2");  // other keys do not wait
    CHECK(other != nullptr);
  }
  const auto start = std::chrono::steady_clock::now();
  auto lock = db->lock("key-1");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(lock != nullptr);
  CHECK(waited > 0.3);
  CHECK(test::wait_child(holder) == 0);
  lock.reset();
  std::size_t left = 0;  // released locks leave no files behind
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.file("locks"))) ++left;
  CHECK(left == 0);
}

TEST_CASE("reliability: a process SIGKILLed while holding a lock releases it") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  auto db = open_db(path);
  const pid_t holder = test::spawn_stress({"hold-lock", path, "key", dir.file("ready"), "60000"});
  REQUIRE(test::wait_for_file(dir.file("ready")));
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto lock = db->lock("key");
    got = lock != nullptr;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(got.load());
  ::kill(holder, SIGKILL);
  CHECK(test::wait_child(holder) == 128 + SIGKILL);
  waiter.join();  // returns once the kernel released the dead holder's flock
  CHECK(got.load());
}

TEST_CASE("reliability: a process SIGKILLed in the middle of writes leaves a clean database") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  for (int round = 0; round < 3; ++round) {
    std::filesystem::remove(dir.file("ready"));
    const pid_t writer = test::spawn_stress({"write-forever", path, dir.file("ready")});
    REQUIRE(test::wait_for_file(dir.file("ready")));
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 70 * round));
    ::kill(writer, SIGKILL);
    CHECK(test::wait_child(writer) == 128 + SIGKILL);
  }
  Warnings w;
  auto db = open_db(path, &w);
  CHECK(db->persistent());
  const auto report = db->verify(false);
  CHECK(report.integrity_ok);
  CHECK(report.problems.empty());
  CHECK(report.binaries > 0);
  rt::Binary out;
  CHECK(db->get("forever-0", out));
  CHECK(w.size() == 0);
}

// 16 processes open one path at the same instant: a missing file (and directory), then an
// existing empty file. Every one must end on the same persistent database with the current
// schema; none may take a file another is creating for a foreign one. KPLAY_CREATE_ROUNDS sets
// the rounds (tools/db_create_stress.sh runs it many times under load).
TEST_CASE("reliability: 16 processes creating one new database at once all end on it") {
  const char* env_rounds = std::getenv("KPLAY_CREATE_ROUNDS");
  const int rounds = env_rounds && std::atoi(env_rounds) > 0 ? std::atoi(env_rounds) : 2;
  for (int round = 0; round < rounds; ++round)
    for (const bool empty_file_first : {false, true}) {
      CAPTURE(round);
      CAPTURE(empty_file_first);
      TempDir dir;
      const std::string path = dir.file(empty_file_first ? "kernels.db" : "new/dir/kernels.db");
      if (empty_file_first) test::write_file(path, "");
      const std::string go = dir.file("go");
      std::vector<pid_t> children;
      for (int i = 0; i < 16; ++i) children.push_back(test::spawn_stress({"create", path, go}));
      test::write_file(go, "go");
      int failed = 0;
      for (const pid_t child : children) failed += test::wait_child(child) != 0;
      CHECK(failed == 0);
      Warnings w;
      auto db = open_db(path, &w);
      CHECK(db->persistent());
      CHECK(db->verify(false).integrity_ok);
      CHECK(db->verify(false).binaries == 16);
      CHECK(w.size() == 0);
    }
}

// A shared temporary directory (world-writable, like /tmp) where someone planted a symlink in
// place of kplay's folder, or of its locks/ folder: kplay refuses to follow either.
TEST_CASE("reliability: folders are created private and a planted symlink is refused, not followed") {
  TempDir dir;
  const std::string shared = dir.file("shared"), target = dir.file("elsewhere");
  std::filesystem::create_directory(shared);
  std::filesystem::create_directory(target);
  ::chmod(shared.c_str(), 01777);
  {  // the database folder is the planted link: memory, one warning naming the reason
    std::filesystem::create_directory_symlink(target, shared + "/kplay");
    Warnings w;
    auto db = open_db(shared + "/kplay/kernels.db", &w);
    CHECK_FALSE(db->persistent());
    CHECK(w.all().find("symbolic link") != std::string::npos);
    CHECK(std::filesystem::is_empty(target));
  }
  {  // a new folder there is made with mode 0700
    Warnings w;
    auto db = open_db(shared + "/mine/kernels.db", &w);
    CHECK(db->persistent());
    struct stat st {};
    REQUIRE(::stat((shared + "/mine").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    auto lock = db->lock("k");
    CHECK(lock != nullptr);
    REQUIRE(::lstat((shared + "/mine/locks").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
  }
  {  // locks/ replaced by a link: the lock is refused with a warning, the database still works
    const std::string base = dir.file("own");
    Warnings w;
    auto db = open_db(base + "/kernels.db", &w);
    REQUIRE(db->persistent());
    std::filesystem::create_directory_symlink(target, base + "/locks");
    CHECK(db->lock("k") == nullptr);
    CHECK(w.all().find("symbolic link") != std::string::npos);
    CHECK(std::filesystem::is_empty(target));
    db->put("k", test::make_binary("k"));
    rt::Binary out;
    CHECK(db->get("k", out));
  }
}
