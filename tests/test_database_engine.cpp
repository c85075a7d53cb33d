// The kernel database as the Engine's BinaryStore, with a fake backend (no GPU): a second engine
// loads what the first compiled, a stored binary that fails to load is dropped and rebuilt, and
// two engines racing for one kernel compile it once thanks to the cross-process key lock.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "db_test_support.hpp"
#include "kplay/error.hpp"
#include "memoryless_backend.hpp"

using namespace kplay;
using kplay::test::open_db;
using kplay::test::TempDir;

namespace {
class FakeBackend : public kplay::test::MemorylessBackend {
 public:
  FakeBackend() : MemorylessBackend("cuda") {
    info_.name = "Fake GPU";
    info_.arch = "sm_90";
  }
  std::atomic<int> compiles{0};
  int compile_ms = 0;

  rt::Binary compile(const RenderedKernel& kernel) override {
    ++compiles;
    std::this_thread::sleep_for(std::chrono::milliseconds(compile_ms));
    return {"fake", "BIN:" + kernel.hash, ""};
  }
  std::unique_ptr<rt::LoadedKernel> load(const rt::Binary& binary, const std::string&) override {
    if (binary.bytes.rfind("BIN:", 0) != 0) throw Error(ErrorCode::runtime_failed, "not a fake binary");
    return std::make_unique<rt::LoadedKernel>();
  }
  void launch(rt::LoadedKernel&, const rt::LaunchDims&, const rt::KernelArgs&, void*) override {}
};
}  // namespace

TEST_CASE("engine + database: a new engine loads the stored binary instead of compiling") {
  TempDir dir;
  FakeBackend backend;
  auto db = open_db(dir.file("kernels.db"));
  KernelSpec spec;
  {
    Engine engine(backend, db.get());
    CHECK(engine.prepare(spec, KernelConfig{})->origin == "compiled");
  }
  Engine again(backend, db.get());  // as a later process would
  const auto k = again.prepare(spec, KernelConfig{});
  CHECK(k->origin == "binary store");
  CHECK(backend.compiles == 1);

  // A stored binary that no longer loads (a driver update, say) is dropped and rebuilt.
  db->put(k->binary_key, rt::Binary{"fake", "stale bytes", ""});
  Engine third(backend, db.get());
  CHECK(third.prepare(spec, KernelConfig{})->origin == "compiled");
  CHECK(backend.compiles == 2);
  rt::Binary stored;
  REQUIRE(db->get(k->binary_key, stored));
  CHECK(stored.bytes == "BIN:" + k->rendered.hash);
}

TEST_CASE("engine + database: two engines racing for one kernel compile it once") {
  TempDir dir;
  FakeBackend backend;
  backend.compile_ms = 300;
  // Two database objects: separate open files, as in two processes.
  auto db1 = open_db(dir.file("kernels.db")), db2 = open_db(dir.file("kernels.db"));
  Engine e1(backend, db1.get()), e2(backend, db2.get());
  KernelSpec spec;
  spec.activation = "relu";
  std::string origin1, origin2;
  std::thread t1([&] { origin1 = e1.prepare(spec, KernelConfig{})->origin; });
  std::thread t2([&] { origin2 = e2.prepare(spec, KernelConfig{})->origin; });
  t1.join();
  t2.join();
  CHECK(backend.compiles == 1);
  CHECK(origin1 != origin2);  // one compiled, the other waited and loaded its binary
}
