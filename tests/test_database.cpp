// The kernel database's contract: binaries round-trip and are checked, LRU eviction, keys that
// move with the template and the device, tuning lookup with its fallbacks, resumable progress,
// JSON export/import, and the schema's golden hash.
#include <doctest/doctest.h>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "database/schema.hpp"
#include "database/tuning_json.hpp"
#include "db_test_support.hpp"
#include "engine/device_fingerprint.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "temp_templates.hpp"
#include "util/hash.hpp"

using namespace kplay;
using kplay::test::open_db;
using kplay::test::TempDir;
using kplay::test::Warnings;

namespace {
TuningRecord record(const std::string& fp, const std::string& device, const std::string& arch, std::uint64_t n,
                    int block) {
  TuningRecord r;
  r.fingerprint = fp;
  r.backend = "cuda";
  r.device_name = device;
  r.arch = arch;
  r.n = n;
  r.size_bucket = size_bucket(n);
  r.best.block = block;
  r.best.vec = 4;
  r.best_ms = 0.25;
  r.best_gbps = 900;
  r.copy_gbps = 1000;
  r.strategy = "exhaustive";
  r.created_unix = 1700000000;
  CandidateResult good;
  good.config = r.best;
  good.ok = true;
  good.median_ms = 0.25;
  good.spread_ms = 0.01;
  good.gbps = 900;
  CandidateResult bad;
  bad.config.block = 1024;
  bad.config.grid = GridPolicy::grid_stride;
  bad.config.waves = 8;
  bad.rejection = "wrong output: 12 mismatches";
  r.candidates = {good, bad};
  return r;
}

std::string as_text(const TuningRecord& r) { return tuning_to_json(r).dump(); }
}  // namespace

TEST_CASE("size buckets round log2, so nearby sizes share one") {
  CHECK(size_bucket(0) == 0);
  CHECK(size_bucket(1) == 0);
  CHECK(size_bucket(1ull << 20) == 20);
  CHECK(size_bucket((1ull << 20) + 5) == 20);
  CHECK(size_bucket(3ull << 19) == 21);  // 1.5 * 2^20 is nearer 2^21 in log scale
  CHECK(size_bucket(~0ull) == 64);
}

TEST_CASE("database: binaries round-trip, and drop removes them") {
  TempDir dir;
  Warnings w;
  auto db = open_db(dir.file("sub/dir/kernels.db"), &w);  // missing directories are created
  CHECK(db->persistent());
  CHECK(db->path() == dir.file("sub/dir/kernels.db"));
  const rt::Binary b = test::make_binary("alpha", 5000);
  db->put("k1", b);
  rt::Binary out;
  REQUIRE(db->get("k1", out));
  CHECK(out.format == b.format);
  CHECK(out.bytes == b.bytes);
  CHECK(out.log == b.log);
  CHECK_FALSE(db->get("k2", out));
  CHECK(db->stats().binaries == 1);
  CHECK(db->stats().binary_bytes == 5000);
  db.reset();  // persists across processes (here: objects)
  db = open_db(dir.file("sub/dir/kernels.db"), &w);
  REQUIRE(db->get("k1", out));
  CHECK(out.bytes == b.bytes);
  db->drop("k1");
  CHECK_FALSE(db->get("k1", out));
  CHECK(w.size() == 0);
}

TEST_CASE("database: a binary whose bytes no longer match the checksum is dropped, not served") {
  TempDir dir;
  Warnings w;
  auto db = open_db(dir.file("kernels.db"), &w);
  db->put("k", test::make_binary("beta"));
  db->put("other", test::make_binary("gamma"));
  {
    db::Connection c(dir.file("kernels.db"));  // a second connection, as another process would
    c.exec("UPDATE binaries SET bytes = X'00112233' || substr(bytes, 5) WHERE key = 'k'");
  }
  rt::Binary out;
  CHECK_FALSE(db->get("k", out));
  CHECK(db->stats().binaries == 1);  // the row is gone
  CHECK_FALSE(db->get("k", out));
  CHECK(db->get("other", out));
  CHECK(w.size() == 1);
  CHECK(w.all().find("checksum") != std::string::npos);
}

TEST_CASE("database: LRU eviction by the size bound keeps the most recently used") {
  TempDir dir;
  auto db = open_db(dir.file("kernels.db"), nullptr, 3500);
  for (const char* k : {"a", "b", "c"}) db->put(k, test::make_binary(k, 1000));
  rt::Binary out;
  REQUIRE(db->get("a", out));                  // a is now more recent than b and c
  db->put("d", test::make_binary("d", 1000));  // 4000 > 3500: one must go, the least recent
  CHECK(db->stats().binaries == 3);
  CHECK_FALSE(db->get("b", out));
  CHECK(db->get("a", out));
  CHECK(db->get("c", out));
  CHECK(db->get("d", out));
  // The binary just stored stays even when it alone exceeds the bound.
  db->put("huge", test::make_binary("huge", 10000));
  CHECK(db->get("huge", out));
  CHECK(db->stats().binaries == 1);
  CHECK(db->prune(0) == 1);
  CHECK(db->stats().binaries == 0);
}

TEST_CASE("database: keys change with the template and the device fingerprint") {
  TempDir dir;
  auto db = open_db(dir.file("kernels.db"));
  test::TempTemplates templates;
  KernelSpec spec;
  const KernelConfig config = resolve_config(spec, KernelConfig{}, TargetLimits{});
  const RenderedKernel before = render_kernel(spec, config, rt::dialect_of("cuda"));
  const std::string fp_a = hash_hex({"cuda", "GPU A", "sm_90"}), fp_b = hash_hex({"cuda", "GPU B", "sm_90"});
  const std::string key = hash_hex({before.hash, fp_a});  // as Engine::build makes it
  db->put(key, test::make_binary("kernel"));
  rt::Binary out;
  CHECK(db->get(key, out));

  const std::string other_device = hash_hex({before.hash, fp_b});
  CHECK(other_device != key);
  CHECK_FALSE(db->get(other_device, out));

  templates.write("activations/selu.h", template_text("activations/selu.h") + "\n/* changed */\n");
  const RenderedKernel after = render_kernel(spec, config, rt::dialect_of("cuda"));
  const std::string new_template = hash_hex({after.hash, fp_a});
  CHECK(new_template != key);
  CHECK_FALSE(db->get(new_template, out));
}

TEST_CASE("database: find_tuning picks the nearest bucket on the device, then the architecture") {
  TempDir dir;
  auto db = open_db(dir.file("kernels.db"));
  db->save_tuning(record("fpA", "GPU A", "sm_90", 1ull << 20, 128));
  db->save_tuning(record("fpA", "GPU A", "sm_90", 1ull << 26, 512));
  db->save_tuning(record("fpB", "GPU B", "sm_90", 1ull << 24, 256));
  db->save_tuning(record("fpC", "GPU C", "sm_80", 1ull << 24, 64));
  KernelSpec spec;

  auto r = db->find_tuning("fpA", "sm_90", "cuda", spec, (1ull << 21) + 7);
  REQUIRE(r);
  CHECK(r->match == "device");
  CHECK(r->best.block == 128);
  CHECK(r->size_bucket == 20);
  CHECK(r->candidates.size() == 2);
  CHECK(r->candidates[1].rejection == "wrong output: 12 mismatches");
  CHECK(r->candidates[1].config.waves == 8);
  CHECK(as_text(*r) == as_text(record("fpA", "GPU A", "sm_90", 1ull << 20, 128)));

  r = db->find_tuning("fpA", "sm_90", "cuda", spec, 1ull << 25);  // 25: 26 is nearer than 20
  REQUIRE(r);
  CHECK(r->best.block == 512);

  r = db->find_tuning("fpNew", "sm_90", "cuda", spec, 1ull << 24);  // unknown device, known arch
  REQUIRE(r);
  CHECK(r->match == "architecture");
  CHECK(r->fingerprint == "fpB");

  r = db->find_tuning("fpC", "sm_80", "cuda", spec, 1ull << 10);
  REQUIRE(r);
  CHECK(r->match == "device");
  CHECK(r->best.block == 64);

  CHECK_FALSE(db->find_tuning("fpNew", "sm_75", "cuda", spec, 1ull << 24));
  CHECK_FALSE(db->find_tuning("fpNew", "sm_90", "opencl", spec, 1ull << 24));
  KernelSpec other = spec;
  other.dtype = Dtype::f16;
  CHECK_FALSE(db->find_tuning("fpA", "sm_90", "cuda", other, 1ull << 20));
  other = spec;
  other.saved = Saved::output;  // forward kernels ignore `saved`
  CHECK(db->find_tuning("fpA", "sm_90", "cuda", other, 1ull << 20));
  other.direction = Direction::backward;
  CHECK_FALSE(db->find_tuning("fpA", "sm_90", "cuda", other, 1ull << 20));
}

TEST_CASE("database: save_tuning replaces the record of the same device, spec and bucket") {
  TempDir dir;
  auto db = open_db(dir.file("kernels.db"));
  db->save_tuning(record("fpA", "GPU A", "sm_90", 1ull << 20, 128));
  TuningRecord again = record("fpA", "GPU A", "sm_90", (1ull << 20) + 5, 256);
  again.candidates.resize(1);
  db->save_tuning(again);
  const auto all = db->list_tuning();
  REQUIRE(all.size() == 1);
  CHECK(all[0].best.block == 256);
  CHECK(all[0].n == (1ull << 20) + 5);
  CHECK(all[0].candidates.size() == 1);
}

TEST_CASE("database: tuning progress is saved, loaded in order, replaced per config and cleared") {
  TempDir dir;
  auto db = open_db(dir.file("kernels.db"));
  CandidateResult a, b, c;
  a.config.block = 64;
  a.ok = true;
  a.median_ms = 1.5;
  b.config.block = 128;
  b.rejection = "did not compile";
  c.config.block = 256;
  c.config.cache = CacheHint::streaming;
  c.ok = true;
  for (const auto& k : {a, b, c}) db->save_progress("run-1", k);
  db->save_progress("run-2", a);
  auto loaded = db->load_progress("run-1");
  REQUIRE(loaded.size() == 3);
  CHECK(loaded[0].config == a.config);
  CHECK(loaded[0].median_ms == 1.5);
  CHECK(loaded[1].rejection == "did not compile");
  CHECK(loaded[2].config.cache == CacheHint::streaming);
  a.median_ms = 2.5;
  db->save_progress("run-1", a);  // measured again: one entry per config
  loaded = db->load_progress("run-1");
  CHECK(loaded.size() == 3);
  db->clear_progress("run-1");
  CHECK(db->load_progress("run-1").empty());
  CHECK(db->load_progress("run-2").size() == 1);
}

TEST_CASE("database: export and import into a fresh database round-trip records and devices") {
  TempDir dir;
  auto src = open_db(dir.file("a.db"));
  rt::DeviceInfo dev;
  dev.backend = "cuda";
  dev.name = "GPU A";
  dev.arch = "sm_90";
  dev.memory_bytes = 80ull << 30;
  dev.compute_units = 132;
  dev.l2_bytes = 50ull << 20;
  const std::string fp = device_fingerprint(dev);  // import checks it against the device
  src->put_device(fp, dev);
  TuningRecord back = record(fp, "GPU A", "sm_90", 3000, 512);
  back.spec.direction = Direction::backward;
  back.spec.saved = Saved::output;
  back.spec.dtype = Dtype::bf16;
  back.best.fast_math = true;
  // As the tuner records it: the best is one of the measured candidates.
  back.candidates[0].config = back.best;
  src->save_tuning(record(fp, "GPU A", "sm_90", 1ull << 20, 128));
  src->save_tuning(back);
  src->put("binary", test::make_binary("x"));
  const nlohmann::json doc = src->export_json();
  CHECK(doc.at("format") == "kplay-tuning");
  CHECK(doc.at("version") == kTuningExportVersion);  // no provenance table: any kplay reads it

  auto dst = open_db(dir.file("b.db"));
  CHECK(dst->import_json(nlohmann::json::parse(doc.dump())) == 2);
  const auto a = src->list_tuning(), b = dst->list_tuning();
  REQUIRE(b.size() == a.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(as_text(a[i]) == as_text(b[i]));
  CHECK(dst->stats().devices == 1);
  CHECK(dst->stats().binaries == 0);  // binaries are per machine and stay out of exports
  CHECK(dst->export_json().at("devices") == doc.at("devices"));
  CHECK(doc.at("devices").at(0).at("l2_bytes") == 50ull << 20);
}

TEST_CASE("database: a malformed import document is refused with a message naming the field") {
  TempDir dir;
  auto db = open_db(dir.file("kernels.db"));
  nlohmann::json good = {{"format", "kplay-tuning"}, {"version", 1}, {"tunings", nlohmann::json::array()}};
  good["tunings"].push_back(tuning_to_json(record("0123456789abcdef", "GPU A", "sm_90", 1 << 20, 128)));
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    const char* message;
  } cases[] = {
      {[](nlohmann::json& j) { j = nlohmann::json::array(); }, "expected a JSON object"},
      {[](nlohmann::json& j) { j["format"] = "other"; }, "document.format"},
      {[](nlohmann::json& j) { j["version"] = 99; }, "newer kplay"},
      {[](nlohmann::json& j) { j.erase("tunings"); }, "missing field 'tunings'"},
      {[](nlohmann::json& j) { j["tunings"] = 5; }, "tunings: expected an array"},
      {[](nlohmann::json& j) { j["tunings"][1]["spec"]["dtype"] = "f8"; }, "tunings[1].spec.dtype: unknown dtype"},
      {[](nlohmann::json& j) { j["tunings"][1]["best"]["block"] = "big"; },
       "tunings[1].best.block: expected an integer"},
      {[](nlohmann::json& j) { j["tunings"][1]["best"]["grid"] = "persistent"; }, "unknown grid policy"},
      {[](nlohmann::json& j) { j["tunings"][1].erase("fingerprint"); }, "missing field 'fingerprint'"},
      {[](nlohmann::json& j) { j["tunings"][1]["best_gbps"] = -1; }, "tunings[1].best_gbps"},
      {[](nlohmann::json& j) { j["tunings"][1]["candidates"][1]["ok"] = "no"; }, "tunings[1].candidates[1].ok"},
      {[](nlohmann::json& j) { j["tunings"][1]["spec"]["activation"] = "Robert'); DROP TABLE"; }, "activation"},
      // Hostile documents: code, paths, forged fingerprints, configs the command line refuses.
      {[](nlohmann::json& j) {
         j["binaries"] = nlohmann::json::array({{{"key", "k"}, {"bytes", "AAAA"}}});
       },
       "document.binaries: binaries are never imported"},
      {[](nlohmann::json& j) { j["extra"] = 1; }, "document: unknown field 'extra'"},
      {[](nlohmann::json& j) { j["tunings"][1]["spec"]["activation"] = "../../etc/passwd"; },
       "tunings[1].spec.activation"},
      {[](nlohmann::json& j) { j["tunings"][1]["arch"] = "../sm_90"; },
       "tunings[1].arch: '../sm_90' looks like a path"},
      {[](nlohmann::json& j) { j["tunings"][1]["fingerprint"] = "../../x"; },
       "tunings[1].fingerprint: '../../x' is not a device fingerprint"},
      {[](nlohmann::json& j) { j["tunings"][1]["backend"] = "vulkan"; },
       "tunings[1].backend: 'vulkan' is not a backend"},
      {[](nlohmann::json& j) { j["tunings"][1]["best"]["block"] = 48; }, "tunings[1].best: --block 48"},
      {[](nlohmann::json& j) { j["tunings"][1]["best"]["vec"] = 16; }, "tunings[1].best: --vec 16"},
      {[](nlohmann::json& j) { j["tunings"][1]["candidates"][0]["config"]["per_thread"] = 999; },
       "tunings[1].candidates[0].config: --per-thread"},
      {[](nlohmann::json& j) { j["tunings"][1]["spec"]["activation"] = "gelu_unknown"; },
       "tunings[1].spec.activation: unknown activation 'gelu_unknown'"},
      {[](nlohmann::json& j) { j["tunings"][1]["spec"]["activation"] = "leaky_relu(0.2)"; },
       "not in canonical form (write 'leaky_relu(negative_slope=0.2)')"},
      {[](nlohmann::json& j) { j["tunings"][1]["spec"]["activation"] = "hardtanh(min_val=3, max_val=1)"; },
       "min_val (3) must be <= max_val (1)"},
      {[](nlohmann::json& j) { j["tunings"][1]["best_ms"] = 1e308 * 10; }, "tunings[1].best_ms"},
      // A best the record never measured, or one it measured and rejected.
      {[](nlohmann::json& j) { j["tunings"][1]["best"]["block"] = 256; },
       "tunings[1].best: not among the record's accepted candidates"},
      {[](nlohmann::json& j) { j["tunings"][1]["best"] = j["tunings"][1]["candidates"][1]["config"]; },
       "tunings[1].best: not among the record's accepted candidates"},
      {[](nlohmann::json& j) { j["tunings"][1]["device_name"] = std::string(300, 'x'); },
       "tunings[1].device_name: longer than 256 bytes"},
      {[](nlohmann::json& j) { j["tunings"][1]["strategy"] = std::string("a\x01") + "b"; },
       "tunings[1].strategy: contains a control"},
      {[](nlohmann::json& j) {
         j["devices"] = nlohmann::json::array(
             {{{"fingerprint", "0123456789abcdef"}, {"backend", "cuda"}, {"name", "Forged GPU"}, {"arch", "sm_90"}}});
       },
       "devices[0].fingerprint: 0123456789abcdef does not match the device it describes"},
  };
  for (const auto& c : cases) {
    nlohmann::json doc = good;  // tunings[0] valid, tunings[1] edited: all or nothing
    doc["tunings"].push_back(good["tunings"][0]);
    doc["tunings"][0]["n"] = 1 << 24;
    c.edit(doc);
    INFO(std::string(c.message));
    try {
      db->import_json(doc);
      FAIL("imported a bad document");
    } catch (const Error& e) {
      INFO(std::string(e.what()));
      CHECK(e.code() == ErrorCode::invalid_argument);
      CHECK(std::string(e.what()).find(c.message) != std::string::npos);
    }
    CHECK(db->list_tuning().empty());
  }
  CHECK(db->import_json(good) == 1);
}

TEST_CASE(
    "database: an imported best is compared with the candidates as resolved, and may be set by "
    "hand") {
  TempDir dir;
  auto db = open_db(dir.file("kernels.db"));
  nlohmann::json doc = {{"format", "kplay-tuning"}, {"version", 1}, {"tunings", nlohmann::json::array()}};
  nlohmann::json widest = tuning_to_json(record("0123456789abcdef", "GPU A", "sm_90", 1 << 20, 128));
  widest["best"]["vec"] = 0;  // the widest vector: float32's 4, the accepted candidate's
  doc["tunings"].push_back(widest);
  nlohmann::json by_hand = tuning_to_json(record("0123456789abcdef", "GPU A", "sm_90", 1 << 24, 128));
  by_hand["best"]["block"] = 512;  // no candidate has it: declared set by hand
  by_hand["candidates"] = nlohmann::json::array();
  doc["tunings"].push_back(by_hand);
  CHECK(db->import_json(doc) == 2);
  CHECK(db->list_tuning().size() == 2);
}

TEST_CASE("configs and specs survive JSON, text and back") {
  KernelConfig c;
  c.vec = 2;
  c.block = 512;
  c.per_thread = 4;
  c.fast_math = true;
  c.grid = GridPolicy::grid_stride;
  c.waves = 16;
  c.cache = CacheHint::streaming;
  c.flat = false;
  c.late_gradient = true;
  CHECK(config_from_json(config_to_json(c)) == c);
  nlohmann::json old_record = config_to_json(KernelConfig{});  // written before the two knobs existed
  old_record.erase("flat");
  old_record.erase("late_gradient");
  CHECK(config_from_json(old_record) == KernelConfig{});
  CHECK(config_from_text(config_text(c)) == c);
  CHECK(config_text(c) == config_text(config_from_text(config_text(c))));
  KernelConfig r;  // a row config, with the knob only the pipelined cluster kernel has
  r.row = RowStrategy::cluster;
  r.cluster = 16;
  r.grid = GridPolicy::grid_stride;
  r.waves = 1;
  r.recompute_terms = true;
  CHECK(config_from_json(config_to_json(r)) == r);
  CHECK(config_from_text(config_text(r)) == r);
  r.recompute_terms = false;
  CHECK_FALSE(config_to_json(r).contains("recompute_terms"));  // row records read as they always have
  KernelConfig d;
  d.waves = 7;  // one-shot keeps its waves too, so equal configs stay equal
  CHECK(config_from_json(config_to_json(d)) == d);
  d.waves = 0;  // as resolve_config leaves a one-shot config
  CHECK(config_from_text(config_text(d)) == d);
  d.grid = GridPolicy::grid_stride;
  CHECK_THROWS_AS(config_from_text(config_text(d)), Error);
  KernelSpec s;
  s.activation = "relu";
  s.direction = Direction::backward;
  s.dtype = Dtype::f64;
  s.saved = Saved::output;
  const KernelSpec t = spec_from_json(spec_to_json(s));
  CHECK(to_string(t) == to_string(s));
  CHECK(spec_to_json(s).at("dtype") == "f64");
}

// Golden: fails when the schema text changes. Then bump kSchemaVersion, add a migration step in
// src/database/schema.cpp from the previous version, and update the hash here.
TEST_CASE("database schema: version and golden hash") {
  db::Connection c(":memory:");
  db::migrate(c);
  CHECK(c.query_int("PRAGMA user_version") == db::kSchemaVersion);
  CHECK(c.query_int("PRAGMA application_id") == db::kApplicationId);
  CHECK(db::kSchemaVersion == 2);
  const std::string hash = db::schema_hash(c);
  INFO("schema hash is now " << hash << ": bump kSchemaVersion, add a migration, update this test");
  CHECK(hash == "46719b0802985336");
}
