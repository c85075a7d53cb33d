// The kernel database when writing fails, and its messages: a full disk (a full tmpfs where the
// test may mount one, else a file-size limit that makes every write fail) still lets kplay read
// and serve what is stored, and `kplay db clear` says it cleared nothing; a kplay file without its
// tunings table or with its schema version lost is repaired rather than failing with raw SQL; an
// import cannot claim impossible bandwidths or rewrite what was measured about a device here.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "database/sqlite.hpp"
#include "database/tuning_json.hpp"
#include "db_test_support.hpp"
#include "engine/device_fingerprint.hpp"

using namespace kplay;
using kplay::test::open_db;
using kplay::test::TempDir;
using kplay::test::Warnings;

namespace {

rt::DeviceInfo device() {
  rt::DeviceInfo d = test::test_cpu_device();
  d.note = "measured here";
  return d;
}

TuningRecord tuning(const std::string& fingerprint) {
  TuningRecord r;
  r.fingerprint = fingerprint;
  r.backend = "opencl";
  r.device_name = "Test CPU";
  r.arch = "cpu";
  r.spec.activation = "relu";
  r.n = 1 << 20;
  r.best.block = 128;
  r.best_ms = 0.5;
  r.best_gbps = 42.5;
  r.copy_gbps = 50;
  r.strategy = "exhaustive";
  return r;
}

// A database with one device, one tuning record and one binary.
std::string seed(const TempDir& dir) {
  const std::string path = dir.file("kernels.db");
  auto db = open_db(path);
  REQUIRE(db->persistent());
  const std::string fp = device_fingerprint(device());
  db->put_device(fp, device());
  db->save_tuning(tuning(fp));
  db->put("stored-key", test::make_binary("stored", 3000));
  return path;
}

test::CliResult db_cli(const std::string& args) { return test::run_cli("db " + args, "env -u KPLAY_DB"); }

using test::run_shell;

// Runs `kplay db list` and `kplay db clear` on `path` with every write failing; checks both.
void check_full_disk(const test::CliResult& r) {
  INFO(r.output);
  CHECK(r.has("list-status=0"));
  CHECK(r.has("Test CPU"));  // the stored record is still listed
  CHECK(r.has("reading it as it is"));
  CHECK(r.has("clear-status=1"));
  CHECK_FALSE(r.has("cleared"));
  CHECK(r.has("not clearing"));
}

}  // namespace

TEST_CASE("full disk: a database that cannot be written is read as it is, and clear clears nothing") {
  TempDir dir;
  const std::string path = seed(dir);
  const std::string kplay = test::cli_path();
  // kplay db list and clear on $1, each followed by its exit status.
  const std::string list_and_clear = dir.file("list_and_clear.sh");
  test::write_file(list_and_clear, "unset KPLAY_DB\n\"" + kplay +
                                       "\" db list --db \"$1\" 2>&1; echo list-status=$?\n\"" + kplay +
                                       "\" db clear --db \"$1\" 2>&1; echo clear-status=$?\n");
  SUBCASE("every write past 1 KiB fails (a file-size limit)") {
    test::write_file(dir.file("limit.sh"), "trap '' XFSZ\nulimit -f 1\nsh \"$1\" \"$2\"\n");
    check_full_disk(run_shell("bash " + dir.file("limit.sh") + " " + list_and_clear + " " + path));
  }
  SUBCASE("a full tmpfs") {
    const std::string mnt = dir.file("mnt");
    std::filesystem::create_directory(mnt);
    test::write_file(dir.file("tmpfs.sh"),
                     "mount -t tmpfs -o size=1m,mode=0700 tmpfs \"$2\" || exit 90\n"
                     "cp \"$3\" \"$2/k.db\"\n"
                     "dd if=/dev/zero of=\"$2/fill\" bs=4k >/dev/null 2>&1\n"
                     "sh \"$1\" \"$2/k.db\"\n");
    const auto r = run_shell("unshare -m sh " + dir.file("tmpfs.sh") + " " + list_and_clear + " " + mnt + " " + path +
                             "; echo unshare-status=$?");
    if (!r.has("list-status=")) {
      MESSAGE("skipped: cannot mount a tmpfs here (needs root in a mount namespace): " << r.output);
      return;
    }
    check_full_disk(r);
  }
  CHECK(test::read_file(path).size() > 0);
}

TEST_CASE("full disk: in the library, stored binaries and tunings are served and nothing new is kept") {
  TempDir dir;
  const std::string path = seed(dir);
  const pid_t child = test::spawn_stress({"read-only", path, "stored-key"});
  CHECK(test::wait_child(child) == 0);  // the codes are in tests/db_stress_main.cpp
  auto db = open_db(path);              // and the file is as it was
  CHECK(db->list_tuning().size() == 1);
  rt::Binary out;
  CHECK_FALSE(db->get("not-kept", out));
}

TEST_CASE("messages: db clear on a database it cannot use exits 1 and does not say cleared") {
  TempDir dir;
  test::write_file(dir.file("file.txt"), "a regular file\n");
  const auto r = db_cli("clear --db " + dir.file("file.txt/sub/kernels.db"));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK_FALSE(r.has("cleared"));
  CHECK(r.has("not clearing " + dir.file("file.txt/sub/kernels.db")));
}

TEST_CASE("messages: a kplay database without its tunings table is repaired, not an SQL error") {
  TempDir dir;
  const std::string path = seed(dir);
  {
    db::Connection c(path);
    c.exec("DROP TABLE tunings");
  }
  const std::string damaged = test::read_file(path);
  const auto list = db_cli("list --db " + path);
  INFO(list.output);
  CHECK(list.status == 0);
  CHECK_FALSE(list.has("no such table"));
  CHECK(list.has("its table tunings is missing"));
  CHECK(list.has("no tuning records"));
  CHECK(test::read_file(path) == damaged);  // a command that only reads repairs nothing
  {
    Warnings w;
    auto db = open_db(path, &w);  // opening to write repairs it, with one warning
    CHECK(db->persistent());
    CHECK(w.all().find("its table tunings is missing") != std::string::npos);
  }
  Warnings w;
  auto db = open_db(path, &w);
  CHECK(db->persistent());
  CHECK(w.size() == 0);  // repaired once, for good
  rt::Binary out;
  CHECK(db->get("stored-key", out));  // the other tables came through
  const TuningRecord r = tuning(device_fingerprint(device()));
  CHECK_FALSE(db->find_tuning(r.fingerprint, "cpu", "opencl", r.spec, r.n));
  db->save_tuning(r);  // and the table is back
  CHECK(db->find_tuning(r.fingerprint, "cpu", "opencl", r.spec, r.n));
}

TEST_CASE("messages: a kplay database whose schema version was lost is handled with a clear message") {
  TempDir dir;
  const std::string path = seed(dir);
  {
    db::Connection c(path);
    c.exec("PRAGMA user_version = 0");
  }
  const auto list = db_cli("list --db " + path);
  INFO(list.output);
  CHECK(list.status == 0);
  CHECK_FALSE(list.has("already exists"));
  CHECK(list.has("no schema version"));
  CHECK(list.has("Test CPU"));  // its records were kept
}

TEST_CASE("messages: import refuses impossible bandwidths and keeps the device row measured here") {
  TempDir dir;
  const std::string path = seed(dir);
  const std::string fp = device_fingerprint(device());
  auto document = [&](double best_gbps, const rt::DeviceInfo& d) {
    TuningDocument doc;
    doc.devices.emplace_back(device_fingerprint(d), d);
    TuningRecord r = tuning(device_fingerprint(d));
    r.device_name = d.name;
    r.n = 1 << 24;
    r.best_gbps = best_gbps;
    doc.tunings.push_back(r);
    const std::string file = dir.file("doc.json");
    test::write_file(file, document_to_json(doc).dump());
    return file;
  };
  for (const double gbps : {1e308, 2e6}) {
    CAPTURE(gbps);
    const auto r = db_cli("import --db " + path + " " + document(gbps, device()));
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(r.has("tunings[0].best_gbps: expected at most 1e6 GB/s"));
  }
  // The same device (its fingerprint's fields), with everything else rewritten.
  rt::DeviceInfo forged = device();
  forged.memory_bytes = 1;
  forged.compute_units = 9999;
  forged.note = "imported";
  rt::DeviceInfo other = device();
  other.name = "Another CPU";
  {
    const auto r = db_cli("import --db " + path + " " + document(40, forged));
    INFO(r.output);
    CHECK(r.status == 0);
  }
  {
    const auto r = db_cli("import --db " + path + " " + document(40, other));
    INFO(r.output);
    CHECK(r.status == 0);  // a new device is added
  }
  auto db = open_db(path);
  const nlohmann::json exported = db->export_json();
  bool found = false, added = false;
  for (const auto& d : exported.at("devices")) {
    if (d.at("fingerprint") == fp) {
      found = true;
      CHECK(d.at("memory_bytes") == device().memory_bytes);
      CHECK(d.at("compute_units") == 16);
      CHECK(d.at("note") == "measured here");
    }
    added = added || d.at("name") == "Another CPU";
  }
  CHECK(found);
  CHECK(added);
}

TEST_SUITE("opencl") {
  TEST_CASE("messages: kplay run falls back when the database has no tunings table") {
    TempDir dir;
    const std::string path = dir.file("kernels.db");
    {
      auto db = open_db(path);
      REQUIRE(db->persistent());
    }
    {
      db::Connection c(path);
      c.exec("DROP TABLE tunings");
    }
    const auto r = test::run_cli("run --backend opencl --act relu --n 4096 --seed 1 --db " + path);
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK_FALSE(r.has("no such table"));
  }
}
