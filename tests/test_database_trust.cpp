// The kernel database trusts only what the user owns: a database folder, a symlink or any
// component on the way that another user owns (or may write to) is refused and never read, and a
// binary is served only when its bytes match the content hash recorded under its key. Acting as
// another user needs root (chown to nobody); where that is impossible the test says so and skips.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include "cli_runner.hpp"
#include "database/schema.hpp"
#include "database/sqlite.hpp"
#include "db_test_support.hpp"
#include "util/private_dir.hpp"
#include "util/sha256.hpp"

using namespace kplay;
using kplay::test::open_db;
using kplay::test::TempDir;
using kplay::test::Warnings;

namespace {
constexpr uid_t kNobody = 65534;

// Whether this process can make files another user's (root can chown them to nobody).
bool can_plant_as_other_user() {
  if (::geteuid() == 0) return true;
  MESSAGE("skipped: planting files as another user needs root (chown to uid 65534); running as uid " << ::geteuid());
  return false;
}

void chown_nobody(const std::string& path) { REQUIRE(::lchown(path.c_str(), kNobody, kNobody) == 0); }

// A database with one binary that an attacker prepared: its checksum and content hash are right,
// so only the ownership check can keep it out.
void plant_database(const std::string& path, const std::string& key) {
  auto db = open_db(path);
  REQUIRE(db->persistent());
  db->put(key, test::make_binary("planted code", 2000));
}

// The tree of an attack in a shared temporary directory: <tmp>/shared (mode 1777, like /tmp).
std::string shared_tmp(const TempDir& dir) {
  const std::string shared = dir.file("shared");
  std::filesystem::create_directory(shared);
  REQUIRE(::chmod(shared.c_str(), 01777) == 0);
  return shared;
}
}  // namespace

TEST_CASE("trust: the path check accepts this user's and root's folders and /tmp-like sticky ones") {
  TempDir dir;
  const std::string shared = shared_tmp(dir);
  CHECK(untrusted_path_reason(dir.path()) == "");
  CHECK(untrusted_path_reason(shared + "/not/there/yet/kernels.db") == "");  // the missing tail is kplay's to make
  std::filesystem::create_directory(dir.file("own"));
  REQUIRE(::chmod(dir.file("own").c_str(), 0700) == 0);
  CHECK(untrusted_path_reason(dir.file("own/kernels.db")) == "");
  // A folder of this user's that its group may write to: the reason names it and the mode.
  REQUIRE(::chmod(dir.file("own").c_str(), 0775) == 0);
  const std::string why = untrusted_path_reason(dir.file("own/kplay/kernels.db"));
  INFO(why);
  CHECK(why.find(dir.file("own") + " may be written by its group or by others (mode 0775") != std::string::npos);
  // A symlink of this user's is followed, and its target checked the same way.
  std::filesystem::create_directory_symlink(dir.file("own"), dir.file("link"));
  CHECK(untrusted_path_reason(dir.file("link/kernels.db")).find(dir.file("own")) != std::string::npos);
  REQUIRE(::chmod(dir.file("own").c_str(), 0700) == 0);
  CHECK(untrusted_path_reason(dir.file("link/kernels.db")) == "");
}

// The attack: XDG_CACHE_HOME=/tmp/alice-cache, with /tmp/alice-cache/kplay/ made
// beforehand by another user and a kernels.db in it holding native code for a key kplay asks for.
TEST_CASE("trust: a cache folder planted by another user is refused and its binaries never loaded") {
  if (!can_plant_as_other_user()) return;
  TempDir dir;
  const std::string shared = shared_tmp(dir);
  const std::string cache = shared + "/alice-cache", folder = cache + "/kplay", path = folder + "/kernels.db";
  plant_database(path, "key-1");
  for (const auto& p : {cache, folder, path}) chown_nobody(p);
  const std::string before = test::read_file(path);

  // Only the folder kplay uses is the attacker's; then the folder above it too.
  for (const bool parent_too : {false, true}) {
    CAPTURE(parent_too);
    REQUIRE(::lchown(cache.c_str(), parent_too ? kNobody : ::geteuid(), parent_too ? kNobody : ::getegid()) == 0);
    Warnings w;
    auto db = open_db(path, &w);
    CHECK_FALSE(db->persistent());
    rt::Binary out;
    CHECK_FALSE(db->get("key-1", out));
    INFO(w.all());
    CHECK(w.size() == 1);
    CHECK(w.all().find(parent_too ? cache : folder) != std::string::npos);
    CHECK(w.all().find("belongs to another user (uid 65534)") != std::string::npos);
    CHECK(w.all().find("without persistence") != std::string::npos);
    db->put("key-2", test::make_binary("mine"));  // works, in memory
    CHECK(db->get("key-2", out));
  }
  CHECK(test::read_file(path) == before);  // not written either
  CHECK_FALSE(std::filesystem::exists(folder + "/locks"));

  // The command line, through XDG_CACHE_HOME: not persistent, and the component named.
  const auto r = test::run_cli("db path", "env -u KPLAY_DB XDG_CACHE_HOME=" + cache);
  INFO(r.output);
  CHECK(r.has("persistent: no"));
  CHECK(r.has(cache + " belongs to another user"));
}

TEST_CASE("trust: a symlink owned by another user is refused, wherever it is on the path") {
  if (!can_plant_as_other_user()) return;
  TempDir dir;
  const std::string shared = shared_tmp(dir);
  const std::string theirs = shared + "/bobs-cache";
  plant_database(theirs + "/kplay/kernels.db", "key-1");
  for (const auto& p : {theirs, theirs + "/kplay", theirs + "/kplay/kernels.db"}) chown_nobody(p);
  // /tmp/alice-cache -> /tmp/bobs-cache, the link itself the other user's.
  const std::string link = shared + "/alice-cache";
  std::filesystem::create_directory_symlink(theirs, link);
  chown_nobody(link);
  // And a link of the user's own, in a private folder, pointing at the other user's folder.
  std::filesystem::create_directory(dir.file("home"));
  const std::string own_link = dir.file("home/cache");
  std::filesystem::create_directory_symlink(theirs, own_link);
  for (const auto& [path, culprit, what] :
       {std::tuple{link + "/kplay/kernels.db", link, "is a symbolic link owned by another user (uid 65534)"},
        std::tuple{own_link + "/kplay/kernels.db", theirs, "belongs to another user (uid 65534)"}}) {
    CAPTURE(path);
    Warnings w;
    auto db = open_db(path, &w);
    CHECK_FALSE(db->persistent());
    rt::Binary out;
    CHECK_FALSE(db->get("key-1", out));
    INFO(w.all());
    CHECK(w.all().find(std::string(culprit) + " " + what) != std::string::npos);
  }
}

TEST_CASE("trust: a database file or lock folder of another user's inside the user's folder is refused") {
  if (!can_plant_as_other_user()) return;
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  plant_database(path, "key-1");
  {  // root may write anywhere: only the ownership can tell
    chown_nobody(path);
    Warnings w;
    auto db = open_db(path, &w);
    CHECK_FALSE(db->persistent());
    CHECK(w.all().find(path + " belongs to another user") != std::string::npos);
    REQUIRE(::lchown(path.c_str(), ::geteuid(), ::getegid()) == 0);
  }
  {  // a WAL beside it that someone else left there would be replayed into it
    test::write_file(path + "-wal", "");
    chown_nobody(path + "-wal");
    Warnings w;
    auto db = open_db(path, &w);
    CHECK_FALSE(db->persistent());
    CHECK(w.all().find(path + "-wal belongs to another user") != std::string::npos);
    std::filesystem::remove(path + "-wal");
  }
  {  // locks/ of another user's: no lock (others may compile too), one warning, the rest works
    std::filesystem::create_directory(dir.file("locks"));
    chown_nobody(dir.file("locks"));
    Warnings w;
    auto db = open_db(path, &w);
    REQUIRE(db->persistent());
    CHECK(db->lock("k") == nullptr);
    CHECK(w.all().find("belongs to another user") != std::string::npos);
  }
}

// A binary is served only under the key it was stored with, with the bytes it was stored with,
// and only when its content hash was recorded: each row is altered behind the database's back.
TEST_CASE("trust: binaries are checked against their key and content hash; rows without one are recompiled") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  const rt::Binary a = test::make_binary("alpha", 1500), b = test::make_binary("bravo", 1500);
  {
    auto db = open_db(path);
    db->put("key-a", a);
    db->put("key-b", b);
    db->put("key-c", a);
  }
  {
    db::Connection c(path);
    // key-b now holds key-a's bytes with key-a's checksums: a row moved to another key.
    c.exec(
        "UPDATE binaries SET (format, bytes, checksum, size, content_hash) = (SELECT format, bytes, checksum, size, "
        "content_hash FROM binaries WHERE key = 'key-a') WHERE key = 'key-b'");
    // key-c: no content hash, as an older kplay stored it.
    c.exec("UPDATE binaries SET content_hash = NULL WHERE key = 'key-c'");
  }
  Warnings w;
  auto db = open_db(path, &w);
  rt::Binary out;
  CHECK(db->get("key-a", out));
  CHECK(out.bytes == a.bytes);
  CHECK_FALSE(db->get("key-b", out));
  CHECK_FALSE(db->get("key-c", out));
  INFO(w.all());
  CHECK(w.all().find("does not match its content hash") != std::string::npos);
  CHECK(w.all().find("has no content hash") != std::string::npos);
  // Dropped, so the next compile stores a good one.
  db::Connection c(path);
  CHECK(c.query_int("SELECT COUNT(*) FROM binaries") == 1);
}

TEST_CASE("trust: a schema-1 file is upgraded: its tunings are kept, its binaries recompiled") {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  {  // a file as the previous kplay wrote it: schema 1, binaries without a content hash
    auto db = open_db(path);
    db->put("old-key", test::make_binary("old"));
    TuningRecord r;
    r.fingerprint = "0123456789abcdef";
    r.backend = "opencl";
    r.arch = "cpu";
    r.n = 1 << 20;
    db->save_tuning(r);
  }
  {
    db::Connection c(path);
    c.exec("ALTER TABLE binaries DROP COLUMN content_hash");
    c.exec("PRAGMA user_version = 1");
  }
  Warnings w;
  auto db = open_db(path, &w);
  CHECK(db->persistent());
  CHECK(db->find_tuning("0123456789abcdef", "cpu", "opencl", KernelSpec{}, 1 << 20));
  rt::Binary out;
  CHECK_FALSE(db->get("old-key", out));
  db->put("old-key", test::make_binary("old"));
  CHECK(db->get("old-key", out));
  db::Connection c(path);
  CHECK(c.query_int("PRAGMA user_version") == db::kSchemaVersion);
}

TEST_CASE("trust: SHA-256 matches the FIPS 180-4 examples") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK(Sha256().add("ab").add("c").hex() != Sha256().add("a").add("bc").hex());
}

// End to end on PoCL: the binary kplay compiled, copied into a folder another user owns, is not
// loaded from there ("loaded from the database" is what `kplay run` says when it is).
TEST_SUITE("opencl") {
  TEST_CASE("trust: kplay run never loads a binary from a folder another user could have written") {
    if (!can_plant_as_other_user()) return;
    TempDir dir;
    const std::string own = dir.file("own/kernels.db");
    const std::string args = "run --backend opencl --act relu --n 4096 --seed 1 --db ";
    auto first = test::run_cli(args + own);
    INFO(first.output);
    REQUIRE(first.status == 0);
    auto again = test::run_cli(args + own);
    CHECK(again.has("loaded from the database"));  // the control: from a folder of the user's, it is
    const std::string shared = shared_tmp(dir), theirs = shared + "/alice-cache/kplay";
    std::filesystem::create_directories(theirs);
    std::filesystem::copy_file(own, theirs + "/kernels.db");
    for (const auto& p : {shared + "/alice-cache", theirs, theirs + "/kernels.db"}) chown_nobody(p);
    auto planted = test::run_cli(args + theirs + "/kernels.db");
    INFO(planted.output);
    CHECK(planted.status == 0);
    CHECK_FALSE(planted.has("loaded from the database"));
    CHECK(planted.has("belongs to another user"));
  }
}
