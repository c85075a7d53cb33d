// Whole-table tuning without a device: injected per-device tune and verify functions show which
// device ran which job, that identical devices share the table and verify each other's winners,
// that different ones each run it all, and that a run killed partway resumes with only the
// missing jobs. Also the size-range syntax.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kplay/error.hpp"
#include "tuner/table_run.hpp"
#include "util/size_parse.hpp"

using namespace kplay;

namespace {
struct Recorder {
  explicit Recorder(KernelDatabase* d) : db(d) {}
  KernelDatabase* db;
  std::mutex mutex;
  std::map<std::string, int> runs;                           // "fingerprint|spec|n" -> times tuned
  std::map<std::string, std::vector<std::string>> verified;  // "spec|n" -> labels of devices that verified it
  std::atomic<int> left{1 << 30};                            // jobs until a simulated kill
  std::string fails_act;      // verification on a twin rejects this activation's winner ...
  std::uint64_t fails_n = 0;  // ... at this n, whichever device tuned it

  TableDevice device(const std::string& fp, const std::string& label = "") {
    TableDevice d;
    d.fingerprint = fp;
    d.label = label.empty() ? fp : label;
    d.verify = [this, name = d.label](const TableJob& job, const KernelConfig& best, const TuneOptions&) {
      std::lock_guard<std::mutex> lock(mutex);
      verified[to_string(job.spec) + "|" + std::to_string(job.n)].push_back(name);
      if (best.vec != 4) return std::string("not the stored winner");
      const bool fails = job.spec.activation == fails_act && job.n == fails_n;
      return fails ? std::string("wrong output: 3 mismatches") : std::string();
    };
    d.tune = [this, fp](const TableJob& job, const TuneOptions& o, TuneTimes&) {
      struct Killed {};
      if (left-- <= 0) throw Killed{};
      TuningRecord rec;
      rec.fingerprint = fp;
      rec.backend = "test";
      rec.device_name = fp;
      rec.arch = "x";
      rec.spec = job.spec;
      rec.n = job.n;
      rec.best.vec = 4;
      rec.best_ms = 1;
      rec.best_gbps = 1;
      rec.copy_gbps = 1;
      rec.strategy = o.strategy;
      db->save_tuning(rec);
      std::lock_guard<std::mutex> lock(mutex);
      ++runs[fp + "|" + to_string(job.spec) + "|" + std::to_string(job.n)];
      return rec;
    };
    return d;
  }
};

std::vector<TableJob> jobs() {
  std::vector<KernelSpec> specs(2);
  specs[1].activation = "relu";
  specs[1].dtype = Dtype::f16;
  return table_jobs(specs, parse_size_list("2^10..2^13"));
}

}  // namespace

TEST_CASE("size lists: powers-of-two ranges, single sizes, and clear refusals") {
  CHECK(parse_size_list("2^16..2^19") == std::vector<std::uint64_t>{1u << 16, 1u << 17, 1u << 18, 1u << 19});
  CHECK(parse_size_list("1000,2^20..2^21,5") == std::vector<std::uint64_t>{1000, 1u << 20, 1u << 21, 5});
  CHECK(parse_size_list("2^31..2^31").size() == 1);
  CHECK_THROWS_AS(parse_size_list("1000..2^20"), Error);  // not a power of two
  CHECK_THROWS_AS(parse_size_list("2^20..2^16"), Error);  // reversed
  CHECK_THROWS_AS(parse_size_list("2^16..x"), Error);
}

TEST_CASE("table: identical devices share the jobs, different devices each run them all, in parallel") {
  KernelDatabase::Options o;
  o.path = ":memory:";
  KernelDatabase db(o);
  Recorder rec(&db);
  TableOptions opts;
  std::size_t last_total = 0;
  opts.progress = [&](const TableProgress& p) { last_total = p.total; };
  const auto table = jobs();
  const auto rows = run_table({rec.device("A"), rec.device("A"), rec.device("B")}, db, table, opts);
  CHECK(last_total == 2 * table.size());  // two fingerprints, each the whole table
  CHECK(rows.size() == 2 * table.size());
  std::size_t a = 0, b = 0;
  for (const auto& [key, count] : rec.runs) {
    CHECK(count == 1);  // no job tuned twice for one fingerprint
    (key[0] == 'A' ? a : b) += 1;
  }
  CHECK(a == table.size());
  CHECK(b == table.size());
  std::set<std::size_t> devices_used;
  for (const auto& r : rows) devices_used.insert(r.device);
  CHECK(devices_used.count(2) == 1);
}

TEST_CASE("table: a run killed partway resumes with only the missing jobs") {
  KernelDatabase::Options o;
  o.path = ":memory:";
  KernelDatabase db(o);
  Recorder rec(&db);
  rec.left = 3;  // the fourth job "kills" the run
  TableOptions opts;
  const auto table = jobs();
  // Anything but a kplay::Error stops the whole run, as a kill would, and reaches the caller.
  CHECK_THROWS(run_table({rec.device("A")}, db, table, opts));
  rec.left = 1 << 30;
  rec.runs.clear();
  const auto second = run_table({rec.device("A")}, db, table, opts);
  std::size_t resumed = 0;
  for (const auto& r : second) resumed += r.resumed;
  CHECK(resumed == 3);
  CHECK(rec.runs.size() == table.size() - 3);
  opts.resume = false;  // --no-resume: everything again
  rec.runs.clear();
  run_table({rec.device("A")}, db, table, opts);
  CHECK(rec.runs.size() == table.size());
}

TEST_CASE("table: a row job resumes from a record of another shape only where its config holds the rows") {
  KernelDatabase::Options o;
  o.path = ":memory:";
  KernelDatabase db(o);
  Recorder rec(&db);
  TableDevice dev = rec.device("A");
  std::vector<std::string> tuned;  // the shapes tuned, in order
  dev.tune = [&](const TableJob& job, const TuneOptions& t, TuneTimes&) {
    TuningRecord r;
    r.fingerprint = "A";
    r.backend = "test";
    r.device_name = "A";
    r.arch = "x";
    r.spec = job.spec;
    r.n = job.n;
    r.best.vec = 4;  // rows of up to 256 x 1 x 4 = 1024 elements in registers
    r.best.block = 256;
    r.best.row = RowStrategy::registers;
    r.best_ms = r.best_gbps = r.copy_gbps = 1;
    r.strategy = t.strategy;
    db.save_tuning(r);
    tuned.push_back(std::to_string(job.rows) + "x" + std::to_string(job.n / job.rows));
    return r;
  };
  KernelSpec softmax;
  softmax.activation = "softmax";
  softmax.saved = Saved::output;
  auto job = [&](std::uint64_t rows, std::uint64_t cols) { return TableJob{softmax, rows * cols, rows}; };
  run_table({dev}, db, {job(8, 1000)}, TableOptions{});
  // 8000 elements again: as 16 rows of 500 the stored config serves; as one row of 8000 it cannot.
  const auto again = run_table({dev}, db, {job(16, 500), job(1, 8000)}, TableOptions{});
  REQUIRE(again.size() == 2);
  CHECK(again[0].resumed);
  CHECK_FALSE(again[1].resumed);
  CHECK(tuned == std::vector<std::string>{"8x1000", "1x8000"});
}

TEST_CASE("table: identical devices verify each other's winners; one that fails there is not stored") {
  KernelDatabase::Options o;
  o.path = ":memory:";
  KernelDatabase db(o);
  Recorder rec(&db);
  rec.fails_act = "relu";
  rec.fails_n = 1u << 12;
  const auto table = jobs();
  const auto rows = run_table({rec.device("A", "A1"), rec.device("A", "A2"), rec.device("B")}, db, table, {});
  REQUIRE(rows.size() == 2 * table.size());
  std::size_t failed = 0;
  for (const auto& r : rows) {
    const auto& by = rec.verified[to_string(r.job.spec) + "|" + std::to_string(r.job.n)];
    if (r.device == 2) {  // B has no twin: nothing to verify
      CHECK(r.verified_on.empty());
      continue;
    }
    // Exactly the other A verified it, once.
    const std::size_t twin = r.device == 0 ? 1 : 0;
    CHECK(std::count(by.begin(), by.end(), twin == 0 ? "A1" : "A2") == 1);
    CHECK(std::count(by.begin(), by.end(), r.device == 0 ? "A1" : "A2") == 0);
    const bool should_fail = r.job.spec.activation == rec.fails_act && r.job.n == rec.fails_n;
    CHECK(r.error.empty() == !should_fail);
    CHECK(r.verified_on == (should_fail ? std::vector<std::size_t>{} : std::vector<std::size_t>{twin}));
    if (!should_fail) continue;
    ++failed;
    CHECK(r.error.find("fails on identical device " + std::to_string(twin) + ": wrong output") != std::string::npos);
    // The fingerprint no longer serves it; the B device's record for the same job stays.
    std::size_t stored_a = 0, stored_b = 0;
    for (const auto& t : db.list_tuning())
      if (t.n == r.job.n && to_string(t.spec) == to_string(r.job.spec)) (t.fingerprint == "A" ? stored_a : stored_b)++;
    CHECK(stored_a == 0);
    CHECK(stored_b == 1);
  }
  CHECK(failed == 1);  // relu at 2^12 on the A pair; B has no twin to reject it
}
