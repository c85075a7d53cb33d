// The kernel database's trust boundaries, as a careless user or an attacker meets them: a file
// that is not kplay's, given as the database, is refused by every `kplay db` command and left
// byte for byte as it was, while a damaged kplay file (its header page gone) is still found to be
// kplay's and salvaged; commands that only read create, write and move nothing; `db verify`
// checks every record as `db import` would take it from `db export`, so what it accepts
// round-trips; and `db export --ship` replaces its target only whole, never through a symlink,
// a FIFO or a directory, and never with a provenance the loader would refuse.
#include <doctest/doctest.h>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "database/shipped_tunings.hpp"
#include "db_test_support.hpp"
#include "engine/device_fingerprint.hpp"
#include "kplay/error.hpp"

using namespace kplay;
using kplay::test::TempDir;
using kplay::test::Warnings;

namespace {

rt::DeviceInfo device() { return test::test_cpu_device(); }

// A record as the tuner writes it: its best among its accepted candidates.
TuningRecord tuning(std::uint64_t n) {
  const rt::DeviceInfo d = device();
  TuningRecord r;
  r.fingerprint = device_fingerprint(d);
  r.backend = d.backend;
  r.device_name = d.name;
  r.arch = d.arch;
  r.spec.activation = "relu";
  r.n = n;
  r.best.block = 128;
  r.best_ms = 0.5;
  r.best_gbps = 42.5;
  r.copy_gbps = 50;
  r.strategy = "exhaustive";
  r.created_unix = 1700000000;
  CandidateResult ok, rejected;
  ok.config = r.best;
  ok.ok = true;
  ok.median_ms = 0.5;
  ok.gbps = 42.5;
  rejected.config.block = 256;
  rejected.rejection = "wrong output: 3 mismatches";
  r.candidates = {ok, rejected};
  return r;
}

// A kplay database with the device, tuning records of these sizes and a binary; closed, so
// everything is in the file (no -wal, no -shm).
void seed(const std::string& path, const std::vector<std::uint64_t>& sizes) {
  auto db = test::open_db(path);
  REQUIRE(db->persistent());
  db->put_device(device_fingerprint(device()), device());
  for (const auto n : sizes) db->save_tuning(tuning(n));
  db->put("binary-1", test::make_binary("b1", 3000));
}

test::CliResult db_cli(const std::string& args, const std::string& env = "env -u KPLAY_DB") {
  return test::run_cli("db " + args, env + " timeout -s KILL 60");
}

// Every file below `dir`, sorted: what a command created or moved shows up here.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// SQL straight through SQLite's C API, as another program (or a damaged disk) would write.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) == SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  INFO(sql << ": " << message);
  REQUIRE(rc == SQLITE_OK);
}

void zero_bytes(const std::string& path, std::size_t from, std::size_t count) {
  std::string bytes = test::read_file(path);
  REQUIRE(bytes.size() >= from + count);
  std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from),
            bytes.begin() + static_cast<std::ptrdiff_t>(from + count), '\0');
  test::write_file(path, bytes);
}

}  // namespace

TEST_CASE("boundaries: a file that is not kplay's is refused by every db command (exit 2) and left byte for byte") {
  TempDir dir;
  const std::string files = dir.file("files");
  std::filesystem::create_directory(files);
  seed(dir.file("kplay.db"), {1 << 20});
  REQUIRE(db_cli("export " + dir.file("good.json") + " --db " + dir.file("kplay.db")).status == 0);

  std::vector<std::string> victims;
  test::write_file(files + "/thesis.txt", "Chapter 1\n\nWhat this thesis is about.\n");
  test::write_file(files + "/tunings.json", test::read_file(dir.file("good.json")));
  raw_sql(files + "/notes.sqlite",
          "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')");
  // Another program's database with a damaged page past its header (SQLite still reads its
  // schema), and one whose header is gone (then only its pages could say whose it is).
  raw_sql(files + "/damaged.sqlite", "CREATE TABLE a (x TEXT); CREATE TABLE b (y BLOB); INSERT INTO a VALUES ('a')");
  zero_bytes(files + "/damaged.sqlite", 4096 + 100, 200);
  raw_sql(files + "/headless.sqlite", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, n INTEGER)");
  raw_sql(files + "/headless.sqlite", "INSERT INTO notes (body, n) VALUES ('row one', 1), ('row two', 2)");
  zero_bytes(files + "/headless.sqlite", 0, 100);
  for (const char* name : {"thesis.txt", "tunings.json", "notes.sqlite", "damaged.sqlite", "headless.sqlite"})
    victims.push_back(files + "/" + name);

  const std::vector<std::string> before = listing(files);
  for (const std::string& path : victims) {
    const std::string bytes = test::read_file(path);
    for (const std::string& command :
         std::vector<std::string>{"path", "list", "show", "export -", "verify", "verify --fix", "clear", "prune",
                                  "import " + dir.file("good.json")}) {
      const auto r = db_cli(command + " --db " + path);
      INFO("kplay db " << command << " --db " << path << "\n" << r.output);
      CHECK(r.status == 2);
      CHECK(r.has("not using " + path + " as the kernel database"));
      CHECK(r.has("it is left exactly as it is"));
      CHECK(test::read_file(path) == bytes);
      CHECK(listing(files) == before);  // nothing moved aside, no -wal, -shm or salvage file
    }
    const auto r = db_cli("path", "KPLAY_DB=" + path);
    CHECK(r.status == 2);
    // The library (kplay run, autotune, the Python API): one warning, memory, the file untouched.
    Warnings w;
    {
      auto db = test::open_db(path, &w);
      CHECK_FALSE(db->persistent());
      db->put("k", test::make_binary("memory"));
    }
    CHECK(w.size() == 1);
    CHECK(w.all().find("it is left as it is") != std::string::npos);
    CHECK(test::read_file(path) == bytes);
    CHECK(listing(files) == before);
  }
}

TEST_CASE("boundaries: a kplay database whose header page is gone is still kplay's and is salvaged") {
  TempDir dir;
  const std::string path = dir.file("k.db");
  seed(path, {1 << 10, 1 << 12, 1 << 14});
  zero_bytes(path, 0, 4096);  // the header page: SQLite's magic, kplay's application id, the schema
  const std::string damaged = test::read_file(path);

  const auto list = db_cli("list --db " + path);  // read-only: what can be read, in memory
  INFO(list.output);
  CHECK(list.status == 0);
  CHECK(list.has("is damaged"));
  CHECK(list.has("Test CPU"));  // the records, found on their own pages
  CHECK(test::read_file(path) == damaged);

  const auto fix = db_cli("verify --fix --db " + path);  // does what opening does: salvages
  INFO(fix.output);
  CHECK(fix.status == 0);
  CHECK(fix.has("salvaged into a new file: kept "));
  CHECK_FALSE(fix.has("cannot fix"));  // it once refused: "file is not a database"
  bool kept_aside = false;
  for (const auto& f : listing(dir.path()))
    if (f.rfind(path + ".corrupt-", 0) == 0 && f.find("-wal") == std::string::npos)
      kept_aside = test::read_file(f) == damaged;
  CHECK(kept_aside);
  const auto after = db_cli("list --db " + path);
  CHECK(after.status == 0);
  CHECK(after.has("Test CPU"));
  CHECK_FALSE(after.has("damaged"));
  CHECK(db_cli("verify --db " + path).status == 0);

  // The same damage to a kplay file that holds no record: nothing says it is kplay's, so it is
  // refused like any other file, unless it is kplay's own default file in kplay's own folder.
  const std::string empty = dir.file("empty.db");
  test::open_db(empty).reset();
  zero_bytes(empty, 0, 4096);
  const std::string empty_bytes = test::read_file(empty);
  const auto refused = db_cli("verify --fix --db " + empty);
  INFO(refused.output);
  CHECK(refused.status == 2);
  CHECK(test::read_file(empty) == empty_bytes);

  TempDir home;
  const test::OwnCacheFolder own(home.path());
  std::filesystem::copy_file(empty, own.database());
  Warnings w;
  auto db = test::open_db(own.database(), &w);
  CHECK(db->persistent());
  CHECK(w.all().find("moved it to " + own.database() + ".corrupt-") != std::string::npos);
}

TEST_CASE("boundaries: commands that only read create, write and move nothing") {
  TempDir dir;
  const std::vector<std::string> reading = {"path", "list", "show", "export -", "verify"};
  for (const std::string& path : {dir.file("new.db"), dir.file("missing/folder/new.db")}) {
    for (const auto& command : reading) {
      const auto r = db_cli(command + " --db " + path);
      INFO("kplay db " << command << " --db " << path << "\n" << r.output);
      CHECK(r.status != 2);
      CHECK(listing(dir.path()).empty());
    }
    CHECK(db_cli("path", "KPLAY_DB=" + path).has("does not exist yet"));
    CHECK(listing(dir.path()).empty());
  }
  const std::string path = dir.file("k.db");
  seed(path, {1 << 20});
  const std::vector<std::string> files = listing(dir.path());
  const std::string bytes = test::read_file(path);
  for (const auto& command : reading) {
    const auto r = db_cli(command + " --db " + path);
    INFO("kplay db " << command << "\n" << r.output);
    CHECK(r.status == 0);
    CHECK(listing(dir.path()) == files);
    CHECK(test::read_file(path) == bytes);
  }
  CHECK(db_cli("path --db " + path).has("persistent: yes"));
}

TEST_CASE("boundaries: db verify checks records as import does; --fix drops them; export then import takes the rest") {
  TempDir dir;
  const std::string path = dir.file("k.db");
  seed(path, {1 << 10, 1 << 12, 1 << 14});
  CHECK(db_cli("verify --db " + path).status == 0);
  // What targeted damage leaves: text that is not UTF-8, a bandwidth no import takes.
  raw_sql(path, "UPDATE tunings SET strategy = CAST(X'6578FF68' AS TEXT) WHERE n = 1024");
  raw_sql(path, "UPDATE candidates SET gbps = -8.1e267 WHERE tuning_id = (SELECT id FROM tunings WHERE n = 4096)");
  const std::string damaged = test::read_file(path);

  const auto verify = db_cli("verify --db " + path);
  INFO(verify.output);
  CHECK(verify.status == 1);
  CHECK(verify.has("integrity ok"));  // SQLite finds nothing wrong
  CHECK(verify.has("cannot be exported"));
  CHECK(verify.has("invalid UTF-8"));
  CHECK(verify.has(".gbps: expected a number >= 0"));
  CHECK(test::read_file(path) == damaged);

  const auto fix = db_cli("verify --fix --db " + path);
  INFO(fix.output);
  CHECK(fix.status == 0);
  CHECK(fix.has("clean now"));
  CHECK(db_cli("verify --db " + path).status == 0);

  const auto exported = db_cli("export " + dir.file("out.json") + " --db " + path);
  INFO(exported.output);
  CHECK(exported.status == 0);
  const auto imported = db_cli("import " + dir.file("out.json") + " --db " + dir.file("new.db"));
  INFO(imported.output);
  CHECK(imported.status == 0);
  const auto again = db_cli("export " + dir.file("again.json") + " --db " + dir.file("new.db"));
  CHECK(again.status == 0);
  auto first = nlohmann::json::parse(test::read_file(dir.file("out.json")));
  auto second = nlohmann::json::parse(test::read_file(dir.file("again.json")));
  first.erase("exported_unix");
  second.erase("exported_unix");
  CHECK(first == second);
  CHECK(first.dump().find("\"n\":16384") != std::string::npos);  // the intact record came through
}

TEST_CASE("boundaries: db export --ship replaces its target whole, or not at all") {
  TempDir dir;
  const std::string db = dir.file("k.db"), ship = dir.file("ship");
  seed(db, {1 << 10, 1 << 12, 1 << 14});
  std::filesystem::create_directory(ship);
  const std::string target = ship + "/" + shipped_file_name(device_class(device()));
  const std::string args = "export --ship " + ship + " --db " + db + " --command ";
  auto r = db_cli(args + "'kplay autotune --act relu'");
  INFO(r.output);
  REQUIRE(r.status == 0);
  const std::string good = test::read_file(target);
  CHECK_NOTHROW(read_shipped_file(target));
  REQUIRE(good.size() > 2048);  // larger than the write limit below

  SUBCASE("a write that fails part-way (a file-size limit; it binds root too) leaves the old file") {
    test::open_db(db)->save_tuning(tuning(1 << 16));  // so the new file differs
    test::write_file(dir.file("limited.sh"), "trap '' XFSZ\nulimit -f 1\nexec \"$@\"\n");
    r = test::run_shell("env -u KPLAY_DB bash " + dir.file("limited.sh") + " " + test::cli_path() + " db " + args +
                        "'kplay autotune --act relu'");
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.has("the file there is left as it was"));
    CHECK(test::read_file(target) == good);
    CHECK(listing(ship) == std::vector<std::string>{target});  // no temporary file left behind
  }
  SUBCASE("a --command the loader would refuse is refused before anything is written") {
    for (const std::string& command :
         {std::string("\"$(printf 'kplay\\001autotune')\""), std::string("\"$(printf 'kplay\\nautotune')\""),
          "'" + std::string(5000, 'a') + "'"}) {
      r = db_cli(args + command);
      INFO(r.output);
      CHECK(r.status == 2);
      CHECK(r.has("--command"));
      CHECK(test::read_file(target) == good);
    }
  }
  SUBCASE("a target that is not a regular file is refused, not followed or waited on") {
    std::filesystem::remove(target);
    test::write_file(dir.file("elsewhere.json"), "precious\n");
    REQUIRE(::symlink(dir.file("elsewhere.json").c_str(), target.c_str()) == 0);
    r = db_cli(args + "'kplay autotune'");
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(r.has("is a symbolic link"));
    CHECK(test::read_file(dir.file("elsewhere.json")) == "precious\n");
    CHECK(std::filesystem::is_symlink(target));
    std::filesystem::remove(target);
    REQUIRE(::mkfifo(target.c_str(), 0600) == 0);
    const auto start = std::chrono::steady_clock::now();
    r = db_cli(args + "'kplay autotune'");
    CHECK(r.status == 2);
    CHECK(r.has("is a FIFO"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(50));
    std::filesystem::remove(target);
    std::filesystem::create_directory(target);
    r = db_cli(args + "'kplay autotune'");
    CHECK(r.status == 2);
    CHECK(r.has("is a directory"));
  }
  SUBCASE("what is written is checked with the loader's rules first") {
    CHECK_THROWS_AS(write_shipped_file(target, "{\"format\": \"kplay-tuning\", \"version\": 1}"), Error);
    CHECK_THROWS_AS(write_shipped_file(target, "not json"), Error);
    CHECK(test::read_file(target) == good);
  }
}

TEST_CASE("boundaries: a CUDA row tuning across a cluster goes through db export --ship and db import") {
  // What kplay autotune stores for a softmax on an H200 (a cluster of two blocks a row): the
  // import's checks hold it to CUDA's limits, not to a device without clusters.
  TempDir dir;
  rt::DeviceInfo gpu = device();
  gpu.backend = "cuda";
  gpu.name = "NVIDIA H200";
  gpu.arch = "sm_90";
  TuningRecord r = tuning(1 << 28);
  r.fingerprint = device_fingerprint(gpu);
  r.backend = gpu.backend;
  r.device_name = gpu.name;
  r.arch = gpu.arch;
  r.spec.activation = "softmax";
  r.spec.dtype = Dtype::bf16;
  r.best.vec = 8;
  r.best.block = 256;
  r.best.per_thread = 4;
  r.best.row = RowStrategy::cluster;
  r.best.cluster = 2;
  r.candidates.resize(1);
  r.candidates[0].config = r.best;
  {
    auto db = test::open_db(dir.file("k.db"));
    db->put_device(device_fingerprint(gpu), gpu);
    db->save_tuning(r);
  }
  std::filesystem::create_directory(dir.file("ship"));
  auto out = db_cli("export --ship " + dir.file("ship") + " --db " + dir.file("k.db") + " --command 'kplay autotune'");
  INFO(out.output);
  REQUIRE(out.status == 0);
  const std::string file = dir.file("ship") + "/" + shipped_file_name(device_class(gpu));
  out = db_cli("import " + file + " --db " + dir.file("again.db"));
  INFO(out.output);
  CHECK(out.status == 0);
  const auto tunings = test::open_db(dir.file("again.db"))->list_tuning();
  REQUIRE(tunings.size() == 1);
  CHECK(tunings[0].best.cluster == 2);
  CHECK(tunings[0].best.row == RowStrategy::cluster);
}

TEST_CASE("boundaries: db import says how many records it kept when records of one key replace each other") {
  TempDir dir;
  seed(dir.file("k.db"), {1 << 10, 1 << 20});
  REQUIRE(db_cli("export " + dir.file("out.json") + " --db " + dir.file("k.db")).status == 0);
  auto doc = nlohmann::json::parse(test::read_file(dir.file("out.json")));
  const nlohmann::json first = doc.at("tunings").at(0);
  for (int copy = 0; copy < 5; ++copy) doc["tunings"].push_back(first);  // the same key again and again
  test::write_file(dir.file("copies.json"), doc.dump());
  const auto r = db_cli("import " + dir.file("copies.json") + " --db " + dir.file("new.db"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.has("imported 2 tuning records"));  // the two keys of the export
  CHECK(r.has("(the file holds 7: records for the same device, kernel and size bucket replace each other"));
  const auto list = db_cli("list --db " + dir.file("new.db"));
  CHECK(list.has("2^10"));
  CHECK(list.has("2^20"));
  CHECK_FALSE(list.has("\n3  "));  // a third line would be a third record
}
