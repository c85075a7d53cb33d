// The shipped tunings: files per device class written by `kplay db export --ship`, read back with
// the import's checks and a provenance per record, served below the user's database and above the
// model; a missing, damaged or unreadable file never fails a lookup (one warning, the model).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "database/shipped_tunings.hpp"
#include "database/tuning_json.hpp"
#include "db_test_support.hpp"
#include "engine/device_fingerprint.hpp"
#include "hopper_device.hpp"
#include "kplay/error.hpp"
#include "memoryless_backend.hpp"
#include "tuner/config_lookup.hpp"
#include "tuner/default_model.hpp"
#include "tuner/row_defaults.hpp"

using namespace kplay;
using kplay::test::TempDir;

namespace {

rt::DeviceInfo test_gpu(const std::string& name = "Test GPU 80GB", const std::string& driver = "CUDA 13.0") {
  rt::DeviceInfo d = test::hopper_device(3000);
  d.name = name;
  d.driver_version = driver;
  d.compiler_version = "NVRTC 13.0";
  d.compile_target = "sm_90 cubin";
  return d;
}

TuningRecord record(const rt::DeviceInfo& d, const std::string& act, Dtype dt, Direction dir, std::uint64_t n,
                    int block) {
  TuningRecord r;
  r.fingerprint = device_fingerprint(d);
  r.backend = d.backend;
  r.device_name = d.name;
  r.arch = d.arch;
  r.spec.activation = act;
  r.spec.dtype = dt;
  r.spec.direction = dir;
  r.n = n;
  r.size_bucket = size_bucket(n);
  r.best.block = block;
  r.best.vec = static_cast<int>(16 / dtype_size(dt));
  r.best_ms = 1;
  r.best_gbps = 2000;
  r.copy_gbps = 2100;
  r.strategy = "fast";
  r.created_unix = 1795000000;  // 2026-11-18 UTC
  CandidateResult winner, other;
  winner.config = r.best;
  winner.ok = true;
  winner.median_ms = 1;
  winner.gbps = 2000;
  other.config = r.best;
  other.config.block = block == 64 ? 128 : 64;
  other.ok = true;
  other.median_ms = 1.2;
  r.candidates = {other, winner};
  return r;
}

// Writes the shipped files of `records` into dir; returns their names.
std::vector<std::string> ship(const TempDir& dir, const std::vector<rt::DeviceInfo>& devices,
                              const std::vector<TuningRecord>& records) {
  TuningDocument doc;
  for (const auto& d : devices) doc.devices.emplace_back(device_fingerprint(d), d);
  doc.tunings = records;
  std::vector<std::string> names;
  for (const auto& [name, text] : shipped_documents(doc, "kplay autotune --act relu --n 2^20", "0.1.0")) {
    test::write_file(dir.file(name), text);
    names.push_back(name);
  }
  return names;
}

struct Shipped {
  test::Warnings warnings;
  ShippedTunings tunings;
  explicit Shipped(const std::string& dir) : tunings(options(dir, warnings)) {}
  static ShippedTunings::Options options(const std::string& dir, test::Warnings& w) {
    ShippedTunings::Options o;
    o.dir = dir;
    o.warn = w.sink();
    return o;
  }
};

class FakeGpu : public test::MemorylessBackend {
 public:
  explicit FakeGpu(const rt::DeviceInfo& d) : MemorylessBackend("cuda") { info_ = d; }
  rt::Binary compile(const RenderedKernel&) override { return {}; }
  std::unique_ptr<rt::LoadedKernel> load(const rt::Binary&, const std::string&) override { return nullptr; }
  void launch(rt::LoadedKernel&, const rt::LaunchDims&, const rt::KernelArgs&, void*) override {}
};

KernelSpec spec(const std::string& act, Dtype dt = Dtype::f32, Direction dir = Direction::forward) {
  KernelSpec s;
  s.activation = act;
  s.dtype = dt;
  s.direction = dir;
  return s;
}

}  // namespace

TEST_CASE("shipped files: one per device class, each record with its provenance and its winner alone") {
  TempDir dir;
  const rt::DeviceInfo a = test_gpu("Test GPU 80GB"), b = test_gpu("Test GPU 141GB");
  const auto names = ship(dir, {a, b},
                          {record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 256),
                           record(a, "relu", Dtype::f16, Direction::backward, 1 << 24, 512),
                           record(b, "selu", Dtype::f32, Direction::forward, 1 << 20, 128)});
  REQUIRE(names.size() == 2);
  CHECK(shipped_file_name(device_class(a)) == "cuda-test-gpu-80gb-sm_90.json");
  CHECK(std::count(names.begin(), names.end(), shipped_file_name(device_class(b))) == 1);
  const auto records = read_shipped_file(dir.file(shipped_file_name(device_class(a))));
  REQUIRE(records.size() == 2);
  CHECK(records[0].spec.activation == "relu");  // sorted by kernel
  for (const auto& r : records) {
    CHECK(r.provenance.gpu == "Test GPU 80GB");
    CHECK(r.provenance.driver == "CUDA 13.0");
    CHECK(r.provenance.compiler == "NVRTC 13.0");
    CHECK(r.provenance.kplay == "0.1.0");
    CHECK(r.provenance.date == "2026-11-18");
    CHECK(r.provenance.command == "kplay autotune --act relu --n 2^20");
    REQUIRE(r.candidates.size() == 1);
    CHECK(r.candidates[0].config == r.best);
  }
  // One record per line: a regenerated file differs where the data does.
  std::ifstream in(dir.file(names[0]));
  std::string line;
  int record_lines = 0;
  while (std::getline(in, line)) record_lines += line.find("\"provenance\"") != std::string::npos;
  CHECK(record_lines == static_cast<int>(read_shipped_file(dir.file(names[0])).size()));
}

TEST_CASE("a shipped file names each provenance once, by date, and its records index them") {
  TempDir dir;
  const rt::DeviceInfo a = test_gpu();
  TuningRecord later = record(a, "relu", Dtype::f32, Direction::forward, 1 << 20, 256);
  later.created_unix += 3 * 86400;
  const auto names = ship(dir, {a},
                          {later, record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 256),
                           record(a, "selu", Dtype::f16, Direction::forward, 1 << 20, 256)});
  REQUIRE(names.size() == 1);
  std::ifstream in(dir.file(names[0]));
  const nlohmann::json doc = nlohmann::json::parse(in);
  CHECK(doc.at("version") == 2);
  const auto& table = doc.at("provenances");
  REQUIRE(table.size() == 2);  // the two days, the earlier first
  CHECK(table[0].at("date") == "2026-11-18");
  CHECK(table[1].at("date") == "2026-11-21");
  for (const auto& r : doc.at("tunings"))
    CHECK(table.at(r.at("provenance").get<std::size_t>()).at("date") ==
          (r.at("spec").at("activation") == "relu" ? "2026-11-21" : "2026-11-18"));
  // The same records with the provenance in each (version 1, as files were first written) read
  // the same.
  nlohmann::json v1 = doc;
  v1["version"] = 1;
  v1.erase("provenances");
  for (auto& r : v1["tunings"]) r["provenance"] = table.at(r.at("provenance").get<std::size_t>());
  test::write_file(dir.file("v1.json"), v1.dump());
  const auto old = read_shipped_file(dir.file("v1.json")), now = read_shipped_file(dir.file(names[0]));
  REQUIRE(old.size() == now.size());
  for (std::size_t i = 0; i < old.size(); ++i) {
    CHECK(old[i].provenance.date == now[i].provenance.date);
    CHECK(old[i].provenance.command == now[i].provenance.command);
    CHECK(to_string(old[i].spec) == to_string(now[i].spec));
    CHECK(old[i].best == now[i].best);
  }
}

TEST_CASE("shipped files are checked as an import is, and every record must name its GPU and command") {
  TempDir dir;
  const rt::DeviceInfo a = test_gpu();
  ship(dir, {a}, {record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 256)});
  const std::string file = dir.file(shipped_file_name(device_class(a)));
  std::ifstream in(file);
  const nlohmann::json good = nlohmann::json::parse(in);
  auto refused = [&](nlohmann::json doc, const std::string& why) {
    test::write_file(dir.file("bad.json"), doc.dump());
    CAPTURE(why);
    try {
      read_shipped_file(dir.file("bad.json"));
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find(why) != std::string::npos);
      CHECK(std::string(e.what()).find("bad.json") != std::string::npos);
    }
  };
  nlohmann::json doc = good;
  doc["tunings"][0].erase("provenance");
  refused(doc, "provenance");
  doc = good;
  doc["provenances"][0]["command"] = "";
  refused(doc, "provenance");
  doc = good;
  doc["provenances"][0].erase("gpu");
  refused(doc, "provenances[0]");
  doc = good;
  doc["tunings"][0]["provenance"] = 1;  // the table has one entry
  refused(doc, "tunings[0].provenance: index 1");
  doc = good;
  doc["tunings"][0]["provenance"] = -1;
  refused(doc, "tunings[0]");
  doc = good;
  doc.erase("provenances");
  refused(doc, "tunings[0].provenance: index 0");
  doc = good;
  doc["tunings"][0]["best"]["block"] = 48;
  refused(doc, "tunings[0].best");
  doc = good;
  doc["devices"][0]["driver_version"] = "CUDA 99";  // no longer the fingerprint's device
  refused(doc, "fingerprint");
  doc = good;
  doc["provenances"][0]["gpu"] = std::string(300, 'x');
  refused(doc, "provenance.gpu");
  test::write_file(dir.file("bad.json"), "{\"format\": \"kplay-tuning\", ");
  CHECK_THROWS_AS(read_shipped_file(dir.file("bad.json")), Error);
}

TEST_CASE("shipped tunings serve this device's class at the nearest size bucket, nothing else") {
  TempDir dir;
  const rt::DeviceInfo a = test_gpu();
  ship(dir, {a},
       {record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 64),
        record(a, "selu", Dtype::f32, Direction::forward, 1 << 24, 128),
        record(a, "selu", Dtype::f32, Direction::forward, 1610612736, 256),
        record(a, "relu", Dtype::f32, Direction::backward, 1 << 20, 512)});
  Shipped s(dir.path());
  CHECK(s.tunings.find(a, spec("selu"), 1 << 20)->best.block == 64);
  CHECK(s.tunings.find(a, spec("selu"), 1 << 21)->best.block == 64);
  CHECK(s.tunings.find(a, spec("selu"), 1 << 22)->best.block == 128);  // equally near: the larger
  CHECK(s.tunings.find(a, spec("selu"), 1ull << 34)->best.block == 256);
  CHECK(s.tunings.find(a, spec("selu"), 1)->best.block == 64);
  KernelSpec relu = spec("relu", Dtype::f32, Direction::backward);
  CHECK(s.tunings.find(a, relu, 1000)->best.block == 512);
  relu.saved = Saved::output;  // another kernel
  std::string why;
  CHECK_FALSE(s.tunings.find(a, relu, 1000, &why));
  CHECK(why.find("no shipped tuning of relu backward") != std::string::npos);
  // The same class with another driver or compiler: served. Another name or architecture: not.
  CHECK(s.tunings.find(test_gpu("Test GPU 80GB", "CUDA 14.0"), spec("selu"), 1 << 20));
  CHECK_FALSE(s.tunings.find(test_gpu("Test GPU 94GB"), spec("selu"), 1 << 20, &why));
  CHECK(why.find("no shipped tunings for cuda Test GPU 94GB sm_90") != std::string::npos);
  rt::DeviceInfo other_arch = a;
  other_arch.arch = "sm_100";
  CHECK_FALSE(s.tunings.find(other_arch, spec("selu"), 1 << 20));
  CHECK_FALSE(s.tunings.find(a, spec("gelu"), 1 << 20));
  CHECK(s.tunings.list().size() == 4);
  CHECK(s.warnings.size() == 0);
}

TEST_CASE("a missing folder, a damaged or unreadable file: one warning each, and the model serves") {
  TempDir dir;
  const rt::DeviceInfo a = test_gpu();
  {
    Shipped missing(dir.file("nowhere"));
    std::string why;
    CHECK_FALSE(missing.tunings.find(a, spec("selu"), 1 << 20, &why));
    CHECK_FALSE(missing.tunings.find(a, spec("relu"), 1 << 20));
    CHECK(missing.warnings.size() == 1);
    CHECK(missing.warnings.all().find("does not exist") != std::string::npos);
  }
  {
    Shipped off("off");
    CHECK_FALSE(off.tunings.find(a, spec("selu"), 1 << 20));
    CHECK(off.warnings.size() == 0);
    CHECK(off.tunings.dir().empty());
  }
  const std::string file = dir.file(shipped_file_name(device_class(a)));
  for (const std::string& damage : {std::string("{\"format\": \"kplay-tuning\", \"tun"), std::string("[]"),
                                    std::string(""), std::string("\x89PNG\r\n")}) {
    test::write_file(file, damage);
    Shipped s(dir.path());
    std::string why;
    CHECK_FALSE(s.tunings.find(a, spec("selu"), 1 << 20, &why));
    CHECK_FALSE(s.tunings.find(a, spec("relu"), 1 << 20));
    CHECK(s.warnings.size() == 1);
    CHECK(s.warnings.all().find("shipped tunings not used: " + file) != std::string::npos);
    CHECK(why.find("shipped tunings not used") != std::string::npos);
    CHECK(s.tunings.list().empty());
  }
  if (geteuid() != 0) {  // root reads anything
    ship(dir, {a}, {record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 64)});
    chmod(file.c_str(), 0);
    Shipped s(dir.path());
    CHECK_FALSE(s.tunings.find(a, spec("selu"), 1 << 20));
    CHECK(s.warnings.size() == 1);
  }
  std::filesystem::remove(file);
  std::filesystem::create_directory(file);  // not a regular file
  Shipped s(dir.path());
  CHECK_FALSE(s.tunings.find(a, spec("selu"), 1 << 20));
  CHECK(s.warnings.size() == 1);
}

TEST_CASE(
    "a row activation's lookup: a tuning where its config holds the rows and was not tuned for rows twice as long, "
    "else the row default") {
  struct RowGpu : FakeGpu {
    explicit RowGpu(const rt::DeviceInfo& d) : FakeGpu(d) {
      limits_.backend = "cuda";
      limits_.dtypes = {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64};
      limits_.max_block = 1024;
      limits_.max_shared_optin = 227 * 1024;
      limits_.max_cluster = 16;
    }
  };
  const rt::DeviceInfo a = test_gpu();
  RowGpu gpu(a);
  KernelDatabase::Options o;
  o.path = ":memory:";
  KernelDatabase db(o);
  Engine engine(gpu, &db);
  Shipped off("off");
  const KernelSpec softmax = spec("softmax");
  // A registers config of 128 threads x 1 vector of 4: rows of up to 512 elements.
  TuningRecord rec = record(a, "softmax", Dtype::f32, Direction::forward, 1 << 20, 128);
  rec.best.row = RowStrategy::registers;
  rec.best.per_thread = 1;
  db.save_tuning(rec);

  ConfigChoice c = choose_row_config(&db, engine, softmax, 2048, 512, &off.tunings);
  CHECK(c.layer == "user");
  CHECK(c.config.row == RowStrategy::registers);
  CHECK(c.config.block == 128);
  // The torch tier's forward kernel (float terms) borrows none of the exact kernel's tunings: the
  // row default, until it has one of its own.
  const KernelSpec tier = spec("softmax(accuracy=torch)");
  c = choose_row_config(&db, engine, tier, 2048, 512, &off.tunings);
  CHECK(c.layer == "model");
  CHECK(c.config == default_row_config(tier, 512, gpu.limits()));
  TuningRecord own = record(a, "softmax(accuracy=torch)", Dtype::f32, Direction::forward, 1 << 20, 128);
  own.best.row = RowStrategy::registers;
  own.best.per_thread = 1;
  own.best.grid = GridPolicy::grid_stride;
  own.best.waves = 1;
  db.save_tuning(own);
  c = choose_row_config(&db, engine, tier, 2048, 512, &off.tunings);
  CHECK(c.layer == "user");
  CHECK(c.config == own.best);
  // Rows of 300 still fill more than half of its slots; rows of 128 would leave 3 threads of 4
  // idle: the row default, sized to them.
  CHECK(choose_row_config(&db, engine, softmax, 8192, 300, &off.tunings).layer == "user");
  c = choose_row_config(&db, engine, softmax, 8192, 128, &off.tunings);
  CHECK(c.layer == "model");
  CHECK(c.config == default_row_config(softmax, 128, gpu.limits()));
  CHECK(c.source.find("threads idle") != std::string::npos);
  // The same size bucket in rows of 16384: the tuning cannot hold them, the row default serves.
  c = choose_row_config(&db, engine, softmax, 64, 16384, &off.tunings);
  CHECK(c.layer == "model");
  CHECK(c.config == default_row_config(softmax, 16384, gpu.limits()));
  CHECK(c.source.find("does not hold these rows") != std::string::npos);
  // A cluster config (2 blocks of 256 threads, vectors of 4) holds any row, but rows of 512 give
  // each block 64 vectors: three threads of four idle, the row default; rows of 4096 fill it.
  TuningRecord cl = record(a, "softmax", Dtype::f32, Direction::forward, 1 << 24, 256);
  cl.best.row = RowStrategy::cluster;
  cl.best.cluster = 2;
  cl.best.per_thread = 4;
  db.save_tuning(cl);
  c = choose_row_config(&db, engine, softmax, (1 << 24) / 512, 512, &off.tunings);
  CHECK(c.layer == "model");
  CHECK(c.source.find("gives each block 64 vectors") != std::string::npos);
  c = choose_row_config(&db, engine, softmax, (1 << 24) / 4096, 4096, &off.tunings);
  CHECK(c.layer == "user");
  CHECK(c.config.cluster == 2);
  // Nothing stored: the row default for the length (not the element-wise model's config).
  c = choose_row_config(nullptr, engine, spec("log_softmax"), 64, 16384, &off.tunings);
  CHECK(c.layer == "model");
  CHECK(c.config == default_row_config(spec("log_softmax"), 16384, gpu.limits()));
}

TEST_CASE("the lookup: the user's tuning, then the shipped one for the device's class, then the model") {
  TempDir dir;
  const rt::DeviceInfo a = test_gpu();
  ship(dir, {a}, {record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 1024)});
  Shipped shipped(dir.path());
  FakeGpu gpu(a);
  KernelDatabase::Options o;
  o.path = ":memory:";
  KernelDatabase db(o);
  Engine engine(gpu, &db);

  ConfigChoice c = choose_config(&db, engine, spec("selu"), 1 << 20, &shipped.tunings);
  CHECK(c.layer == "shipped");
  CHECK(c.config.block == 1024);
  CHECK(c.source.find("measured on Test GPU 80GB (driver CUDA 13.0, NVRTC 13.0, kplay 0.1.0) on 2026-11-18 by "
                      "`kplay autotune --act relu --n 2^20`") != std::string::npos);
  CHECK(c.source.find(shipped_file_name(device_class(a))) != std::string::npos);
  CHECK(untuned_config(engine, spec("selu"), 1 << 20, &shipped.tunings).config.block == 1024);

  c = choose_config(&db, engine, spec("gelu"), 1 << 20, &shipped.tunings);  // not shipped
  CHECK(c.layer == "model");
  CHECK(c.source.find("built-in default from the device model") != std::string::npos);
  CHECK(c.source.find("no shipped tuning of gelu forward f32") != std::string::npos);
  CHECK(c.config == device_default_config(spec("gelu"), a, 1 << 20));

  // The user's own tuning comes first; one of another device of the same class too.
  TuningRecord mine =
      record(test_gpu("Test GPU 80GB", "CUDA 14.0"), "selu", Dtype::f32, Direction::forward, 1 << 20, 32);
  db.save_tuning(mine);
  c = choose_config(&db, engine, spec("selu"), 1 << 20, &shipped.tunings);
  CHECK(c.layer == "user");
  CHECK(c.config.block == 32);
  CHECK(c.source.find("tuned on another Test GPU 80GB") != std::string::npos);
  mine = record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 64);
  db.save_tuning(mine);
  c = choose_config(&db, engine, spec("selu"), 1 << 20, &shipped.tunings);
  CHECK(c.layer == "user");
  CHECK(c.config.block == 64);
  CHECK(c.source.find("tuned on this device") != std::string::npos);
  // ... but not the tuning of another device of the same architecture: the model can run.
  KernelDatabase other_db(o);
  other_db.save_tuning(record(test_gpu("Test GPU 141GB"), "selu", Dtype::f32, Direction::forward, 1 << 20, 32));
  c = choose_config(&other_db, engine, spec("selu"), 1 << 20, &shipped.tunings);
  CHECK(c.layer == "shipped");

  Shipped off("off");
  c = choose_config(&other_db, engine, spec("selu"), 1 << 20, &off.tunings);
  CHECK(c.layer == "model");
  CHECK(c.source.find("not used: another device") != std::string::npos);
  c = choose_config(nullptr, engine, spec("selu"), 1 << 20, &shipped.tunings);  // no database
  CHECK(c.layer == "shipped");
}

TEST_CASE("kplay db export --ship writes the class's file; db list and show tell the layers apart") {
  TempDir dir;
  const rt::DeviceInfo a = test_gpu();
  {
    auto db = test::open_db(dir.file("k.db"));
    db->put_device(device_fingerprint(a), a);
    db->save_tuning(record(a, "selu", Dtype::f32, Direction::forward, 1 << 20, 256));
    db->save_tuning(record(a, "relu", Dtype::bf16, Direction::forward, 1 << 24, 512));
  }
  const std::string env = "env -u KPLAY_DB KPLAY_SHIPPED_TUNINGS=" + dir.file("ship");
  std::filesystem::create_directory(dir.file("ship"));
  test::CliResult r = test::run_cli(
      "db export --ship " + dir.file("ship") + " --command 'kplay autotune --act all' --db " + dir.file("k.db"), env);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.has("wrote " + dir.file("ship/cuda-test-gpu-80gb-sm_90.json") + ": 2 tuning records"));
  const auto records = read_shipped_file(dir.file("ship/cuda-test-gpu-80gb-sm_90.json"));
  CHECK(records.size() == 2);
  CHECK(records[0].provenance.command == "kplay autotune --act all");

  r = test::run_cli("db list --db " + dir.file("empty.db"), env);
  CHECK(r.has("no tuning records"));
  CHECK(r.has("(and 2 shipped tuning records below them: kplay db list --layer shipped)"));
  r = test::run_cli("db list --layer shipped --db " + dir.file("empty.db"), env);
  CHECK(r.status == 0);
  CHECK(r.has("LAYER"));
  CHECK(r.has("shipped  Test GPU 80GB (cuda sm_90)"));
  r = test::run_cli("db list --layer all --db " + dir.file("k.db"), env);
  CHECK(r.has("user     Test GPU 80GB"));
  CHECK(r.has("shipped  Test GPU 80GB"));
  r = test::run_cli("db show 1 --layer shipped --db " + dir.file("empty.db"), env);
  CHECK(r.has("layer: shipped"));
  CHECK(r.has("provenance: measured on Test GPU 80GB (driver CUDA 13.0, NVRTC 13.0, kplay"));
  CHECK(r.has("by `kplay autotune --act all`"));
  CHECK(test::run_cli("db export --ship " + dir.file("ship") + " --db " + dir.file("k.db"), env).status == 2);
  CHECK(test::run_cli("db export x.json --ship " + dir.file("ship") + " --command c --db " + dir.file("k.db"), env)
            .status == 2);
  CHECK(test::run_cli("db list --layer mine --db " + dir.file("k.db"), env).status == 2);
  // A folder that is not there yet is made, as `mkdir -p` would; one that cannot be is an error.
  r = test::run_cli("db export --ship " + dir.file("new/tunings") + " --command c --db " + dir.file("k.db"), env);
  CHECK(r.status == 0);
  CHECK(read_shipped_file(dir.file("new/tunings/cuda-test-gpu-80gb-sm_90.json")).size() == 2);
  r = test::run_cli("db export --ship " + dir.file("k.db") + "/sub --command c --db " + dir.file("k.db"), env);
  CHECK(r.status != 0);
  CHECK(r.has("cannot make the folder " + dir.file("k.db") + "/sub"));
}

TEST_SUITE("opencl") {
  TEST_CASE("OpenCL: a file shipped from this device serves kplay run; damaged or removed, the model does") {
    TempDir dir;
    std::filesystem::create_directory(dir.file("ship"));
    const std::string off = "env -u KPLAY_DB KPLAY_SHIPPED_TUNINGS=off";
    const std::string on = "env -u KPLAY_DB KPLAY_SHIPPED_TUNINGS=" + dir.file("ship");
    const std::string tune =
        "autotune --backend opencl --act relu --n 4096 --strategy exhaustive --repeat 3 --space "
        "'block=64,128 per-thread=1 grid=one-shot cache=default vec-bytes=16' --db " +
        dir.file("t.db");
    test::CliResult r = test::run_cli(tune, off);
    INFO(r.output);
    REQUIRE(r.status == 0);
    r = test::run_cli(
        "db export --ship " + dir.file("ship") + " --command \"kplay " + tune + "\" --db " + dir.file("t.db"), off);
    REQUIRE(r.status == 0);
    REQUIRE(r.has(": 1 tuning records"));
    std::string file;
    for (const auto& e : std::filesystem::directory_iterator(dir.file("ship"))) file = e.path().string();
    REQUIRE(file.find("/opencl-") != std::string::npos);
    const std::string run = "run --backend opencl --act relu --n 5000 --repeat 3 --db " + dir.file("empty.db");
    r = test::run_cli(run, on);
    CHECK(r.status == 0);
    CHECK(r.has("layer:  shipped: shipped tuning for opencl "));
    CHECK(r.has("by `kplay autotune --backend opencl --act relu"));
    CHECK(r.has("verdict: PASS"));
    CHECK_FALSE(r.has("warning"));
    test::write_file(file, "{\"format\": \"kplay-tuning\", \"version\": 1, \"tunings\": [{\"n\": 1}]}");
    r = test::run_cli(run, on);
    CHECK(r.status == 0);
    CHECK(r.has("kplay: warning: shipped tunings not used: " + file + ": "));
    CHECK(r.output.find("kplay: warning") == r.output.rfind("kplay: warning"));  // one
    CHECK(r.has("layer:  model: built-in default"));
    CHECK(r.has("verdict: PASS"));
    std::filesystem::remove(file);
    r = test::run_cli(run, on);
    CHECK(r.status == 0);
    CHECK(r.has("layer:  model: built-in default"));
    CHECK(r.has("no shipped tunings for opencl "));
    CHECK(r.has("verdict: PASS"));
    CHECK_FALSE(r.has("warning"));
  }
}
