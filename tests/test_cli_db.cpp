// `kplay db` end to end: path, list, show, export, import, verify, clear and prune on a temporary
// database, and bad imports refused with exit status 2 and the reason.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "database/sqlite.hpp"
#include "db_test_support.hpp"

using namespace kplay;
using kplay::test::TempDir;

namespace {
using Result = test::CliResult;

// `env` is prefixed to the command line, e.g. "KPLAY_DB=/tmp/x.db".
Result kplay_db(const std::string& args, const std::string& env = "env -u KPLAY_DB") {
  return test::run_cli("db " + args, env);
}

bool has(const Result& r, const std::string& text) { return r.has(text); }

void seed(const std::string& path) {
  auto db = test::open_db(path);
  TuningRecord r;
  r.fingerprint = "0123456789abcdef";
  r.backend = "cuda";
  r.device_name = "Test GPU";
  r.arch = "sm_90";
  r.n = (1ull << 20) + 5;
  r.best.block = 128;
  r.best_ms = 0.01;
  r.best_gbps = 850;
  r.copy_gbps = 1000;
  r.strategy = "exhaustive";
  r.created_unix = 1700000000;
  CandidateResult ok, rejected;
  ok.config = r.best;
  ok.ok = true;
  ok.median_ms = 0.01;
  ok.gbps = 850;
  rejected.config.block = 1024;
  rejected.rejection = "wrong output: 3 mismatches";
  r.candidates = {ok, rejected};
  db->save_tuning(r);
  db->put("binary-1", test::make_binary("b1", 3000));
  db->put("binary-2", test::make_binary("b2", 3000));
}
}  // namespace

TEST_CASE("kplay db path: the path, where it came from, and whether it is persistent") {
  TempDir dir;
  const std::string path = dir.file("k.db");
  Result r = kplay_db("path --db " + path);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(has(r, path));
  CHECK(has(r, "from: --db"));
  CHECK(has(r, "persistent: no (it does not exist yet"));  // and `db path` does not make it
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(kplay_db("clear --db " + path).status == 0);  // a command that writes does
  r = kplay_db("path --db " + path);
  CHECK(has(r, "persistent: yes"));
  r = kplay_db("path", "KPLAY_DB=" + dir.file("env.db"));
  CHECK(has(r, dir.file("env.db")));
  CHECK(has(r, "from: $KPLAY_DB"));
  r = kplay_db("path --db " + path, "KPLAY_DB=" + dir.file("env.db"));  // --db wins
  CHECK(has(r, "from: --db"));
  test::write_file(dir.file("file"), "x");
  r = kplay_db("path --db " + dir.file("file/k.db"));
  CHECK(r.status == 0);
  CHECK(has(r, "persistent: no"));
  CHECK(has(r, "kplay: warning:"));
  CHECK(kplay_db("verify --db " + dir.file("file/k.db")).status == 1);  // unusable is a problem
  r = kplay_db("--db " + path + " list");                               // --db also before the subcommand
  CHECK(r.status == 0);
  CHECK(has(r, "no tuning records"));
}

TEST_CASE("kplay db list and show print records, candidates and rejection reasons") {
  TempDir dir;
  const std::string path = dir.file("k.db");
  Result r = kplay_db("list --db " + path);
  CHECK(r.status == 0);
  CHECK(has(r, "no tuning records"));
  seed(path);
  r = kplay_db("list --db " + path);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(has(r, "Test GPU (cuda sm_90)"));
  CHECK(has(r, "selu forward f32"));
  CHECK(has(r, "2^20 (n=1048581)"));
  CHECK(has(r, "block=128"));
  CHECK(has(r, "850.0"));
  CHECK(has(r, "85.0 %"));
  r = kplay_db("show 1 --db " + path);
  CHECK(r.status == 0);
  CHECK(has(r, "wrong output: 3 mismatches"));
  CHECK(has(r, "2 tried, 1 rejected"));
  CHECK(has(r, "exhaustive"));
  CHECK(has(kplay_db("show --act relu --db " + path), "no matching tuning records"));
  CHECK(has(kplay_db("show --act selu --dtype f32 --db " + path), "wrong output"));
  r = kplay_db("show 7 --db " + path);
  CHECK(r.status == 2);
  CHECK(has(r, "no tuning record 7"));
  CHECK(kplay_db("show --dtype f8 --db " + path).status == 2);
}

TEST_CASE("kplay db export and import move records between databases") {
  TempDir dir;
  seed(dir.file("a.db"));
  Result r = kplay_db("export " + dir.file("out.json") + " --db " + dir.file("a.db"));
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(has(r, "exported 1 tuning records"));
  r = kplay_db("export --db " + dir.file("a.db"));  // stdout: JSON only
  CHECK(r.status == 0);
  const auto doc = nlohmann::json::parse(r.output, nullptr, false);
  REQUIRE_FALSE(doc.is_discarded());
  CHECK(doc.at("tunings").size() == 1);
  r = kplay_db("import " + dir.file("out.json") + " --db " + dir.file("b.db"));
  CHECK(r.status == 0);
  CHECK(has(r, "imported 1 tuning records"));
  r = kplay_db("list --db " + dir.file("b.db"));
  CHECK(has(r, "Test GPU"));
  CHECK(has(r, "block=128"));
}

TEST_CASE("kplay db import refuses a bad file with exit status 2 and the reason") {
  TempDir dir;
  test::write_file(dir.file("garbage.json"), "{\"format\": \"kplay-tuning\", ");
  test::write_file(dir.file("wrong.json"),
                   R"({"format": "kplay-tuning", "version": 1, "tunings": [{"fingerprint": "x"}]})");
  struct Case {
    std::string file;
    const char* message;
  } cases[] = {
      {dir.file("garbage.json"), "not valid JSON"},
      {dir.file("wrong.json"), "tunings[0]: missing field"},
      {dir.file("missing.json"), "cannot be opened (no such file)"},
      // A crafted export carrying code for a key: refused as a whole, nothing imported.
      {dir.file("binaries.json"), "document.binaries: binaries are never imported"},
      {dir.file("path.json"), "tunings[0].spec.activation: '../../x'"},
      {dir.file("huge.json"), "larger than 64 MiB"},
  };
  {
    seed(dir.file("a.db"));
    auto doc = nlohmann::json::parse(kplay_db("export --db " + dir.file("a.db")).output);
    doc["binaries"] = nlohmann::json::array({{{"key", "k"}, {"format", "cubin"}, {"bytes", "f00d"}}});
    test::write_file(dir.file("binaries.json"), doc.dump());
    doc.erase("binaries");
    doc["tunings"][0]["spec"]["activation"] = "../../x";
    test::write_file(dir.file("path.json"), doc.dump());
    test::write_file(dir.file("huge.json"), std::string((64u << 20) + 1, ' '));
  }
  for (const auto& c : cases) {
    const Result r = kplay_db("import " + c.file + " --db " + dir.file("k.db"));
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(has(r, c.message));
    CHECK(has(r, "kplay: error:"));
  }
  CHECK(has(kplay_db("list --db " + dir.file("k.db")), "no tuning records"));
}

TEST_CASE("kplay db verify finds a bad binary, --fix removes it; clear and prune empty the cache") {
  TempDir dir;
  const std::string path = dir.file("k.db");
  seed(path);
  Result r = kplay_db("verify --db " + path);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(has(r, "checked 2 binaries and 1 tuning records; integrity ok"));
  {
    db::Connection c(path);
    c.exec("UPDATE binaries SET checksum = '0000000000000000' WHERE key = 'binary-1'");
  }
  r = kplay_db("verify --db " + path);
  CHECK(r.status == 1);
  CHECK(has(r, "binary binary-1"));
  r = kplay_db("verify --fix --db " + path);
  CHECK(r.status == 0);
  CHECK(has(r, "clean now"));
  CHECK(kplay_db("verify --db " + path).status == 0);

  r = kplay_db("prune --max-mb 0 --db " + path);
  CHECK(r.status == 0);
  CHECK(has(r, "removed 1 binaries; 0 remain"));
  CHECK(kplay_db("prune --max-mb -1 --db " + path).status == 2);

  r = kplay_db("clear --db " + path);
  CHECK(r.status == 0);
  CHECK(has(r, "removed 1 tuning records"));
  CHECK(has(kplay_db("list --db " + path), "no tuning records"));
  CHECK(kplay_db("--db " + path).status == 2);  // a subcommand is required
}

TEST_SUITE("opencl") {
  TEST_CASE("kplay autotune takes an activation with parameters, and kplay run serves its tuning") {
    // autotune once parsed --act itself, by registry name only: "leaky_relu(negative_slope=0.2)"
    // was an unknown activation there while run, check and bench accepted it.
    TempDir dir;
    const std::string db = " --backend opencl --db " + dir.file("k.db");
    const std::string act = " --act 'leaky_relu(negative_slope=0.2)' --n 2^12";
    Result r = test::run_cli("autotune" + db + act + " --strategy random --budget 2");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(has(r, "leaky_relu"));
    r = test::run_cli("run" + db + act + " --repeat 1");
    CHECK(r.status == 0);
    CHECK(has(r, "tuned on this device"));
  }

  TEST_CASE("kplay autotune --device 0,0: one device opened twice splits a table and verifies the other's winners") {
    // Two engines on one PoCL device have one fingerprint, as two identical GPUs do.
    TempDir dir;
    const std::string args = "autotune --backend opencl --device 0,0 --db " + dir.file("k.db") +
                             " --act relu,selu --dtype f32 --n 2^12..2^13 --strategy random --budget 2 --repeat 3";
    Result r = test::run_cli(args + " --no-resume");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(
        has(r, "identical devices 0,1 shared the table: 4 of 4 winners tuned on one were verified on every other one"));
    r = test::run_cli(args + " --json");  // resumed: the stored records, no second measurement
    CHECK(r.status == 0);
    const std::size_t json_start = r.output.find("\n[\n");  // after the progress lines (stderr)
    REQUIRE(json_start != std::string::npos);
    const auto rows = nlohmann::json::parse(r.output.substr(json_start));
    REQUIRE(rows.size() == 4);
    for (const auto& row : rows) CHECK(row.at("resumed").get<bool>());
    CHECK(has(kplay_db("list --db " + dir.file("k.db")), "selu"));
  }
}
