// The db-pages fuzz target: a small kplay database file (devices, tuning records with candidates,
// binaries), damaged by the input, then read as `kplay db verify` reads it. The contract checked:
// what verify calls clean, `kplay db export` writes and `kplay db import` takes back whole, every
// record equal after the round trip. A damaged file may be refused, reported or salvaged into
// memory, never crash, hang or throw anything but kplay::Error.
// Input: 4-byte edits, each a 24-bit little-endian offset into the file (modulo its size) and the
// byte written there.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "database/kernel_database.hpp"
#include "fuzz_targets.hpp"
#include "kplay/error.hpp"

namespace kplay::fuzz {
namespace {

// The database the edits damage: kExport's records (fuzz_targets.cpp) and two binaries, stored
// once per process through the library itself, its bytes kept for every input.
struct Pristine {
  std::string dir, path, bytes;
  ~Pristine() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

const Pristine& pristine() {
  static const Pristine p = [] {
    Pristine made;
    char templ[] = "/tmp/kplay-fuzz-db-XXXXXX";
    if (!::mkdtemp(templ)) throw std::logic_error("cannot make a scratch folder for the db-pages target");
    made.dir = templ;
    made.path = made.dir + "/kernels.db";
    {
      KernelDatabase::Options o;
      o.path = made.path;
      o.warn = [](const std::string& m) { throw std::logic_error("warning while making the seed database: " + m); };
      KernelDatabase db(o);
      db.import_json(export_seed());
      for (const char* key : {"binary-a", "binary-b"}) {
        rt::Binary b;
        b.format = "cubin";
        b.bytes = std::string(600, key[7]);
        b.log = std::string("log of ") + key;
        db.put(key, b);
      }
    }
    std::ifstream in(made.path, std::ios::binary);
    made.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (made.bytes.empty()) throw std::logic_error("the seed database is empty");
    return made;
  }();
  return p;
}

// The export without its time stamp: what must survive export -> import -> export unchanged.
nlohmann::json records_of(nlohmann::json doc) {
  doc.erase("exported_unix");
  return doc;
}

}  // namespace

void db_pages(const std::uint8_t* data, std::size_t size) {
  const Pristine& p = pristine();
  std::string bytes = p.bytes;
  for (std::size_t i = 0; i + 3 < size; i += 4) {
    const std::size_t offset = data[i] | (data[i + 1] << 8) | (static_cast<std::size_t>(data[i + 2]) << 16);
    bytes[offset % bytes.size()] = static_cast<char>(data[i + 3]);
  }
  const std::string path = p.dir + "/damaged.db";
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out) throw std::logic_error("cannot write " + path);
  }
  std::unique_ptr<KernelDatabase> db;
  try {  // as `kplay db verify` opens it: read-only, no salvage, a foreign file refused
    KernelDatabase::Options o;
    o.path = path;
    o.read_only = true;
    o.repair = false;
    o.strict = true;
    o.warn = [](const std::string&) {};
    db = std::make_unique<KernelDatabase>(o);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::invalid_argument && e.code() != ErrorCode::io_failed) throw;
    return;
  }
  const KernelDatabase::VerifyReport r = db->verify(false);
  const bool clean = r.checked && r.integrity_ok && r.bad == 0 && r.problems.empty();
  if (!clean) return;
  // Clean: export, serialize (nlohmann throws on invalid UTF-8), import into a fresh database.
  const nlohmann::json exported = db->export_json();
  std::string text;
  try {
    text = exported.dump();
  } catch (const nlohmann::json::exception& e) {
    throw std::logic_error(std::string("verify called the file clean, and its export cannot be written: ") + e.what());
  }
  KernelDatabase::Options o;
  o.path = ":memory:";
  KernelDatabase fresh(o);
  try {
    fresh.import_json(nlohmann::json::parse(text));
  } catch (const Error& e) {
    throw std::logic_error(std::string("verify called the file clean, and import refuses its export: ") + e.what());
  }
  if (records_of(fresh.export_json()) != records_of(exported))
    throw std::logic_error("verify called the file clean, and export -> import -> export changed its records:\n" +
                           records_of(exported).dump() + "\nbecame\n" + records_of(fresh.export_json()).dump());
}

}  // namespace kplay::fuzz
