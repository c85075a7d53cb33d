// Tuning and benchmarking the row activations (the softmax family): the row search space without a
// device (every candidate, and the binary the tuner compiles for it, a config resolve_config
// accepts and that holds the rows), and on PoCL
// `kplay bench --shape` against the copy of the bytes the op moves, and `kplay autotune --shape`
// storing a winner that `kplay run` then serves.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "codegen/row_codegen.hpp"
#include "db_test_support.hpp"
#include "engine/launch_geometry.hpp"
#include "kplay/error.hpp"
#include "tuner/row_defaults.hpp"
#include "tuner/search_space.hpp"
#include "tuner/tuner.hpp"

using namespace kplay;

namespace {
KernelSpec row_spec(Dtype d, Direction dir) {
  KernelSpec s;
  s.activation = "softmax";
  s.dtype = d;
  s.direction = dir;
  s.saved = Saved::output;
  return s;
}

TargetLimits hopper_limits() {
  TargetLimits l;
  l.max_cluster = 16;
  l.max_shared_optin = 227 * 1024;
  return l;
}

TargetLimits pocl_limits() {
  TargetLimits l;
  l.backend = "opencl";
  l.cache_hints = false;
  l.max_block = 4096;
  return l;
}

struct Shape {
  std::uint64_t rows, cols;
};
}  // namespace

TEST_CASE("the row search space yields only configs resolve_config accepts that hold the rows") {
  const Shape shapes[] = {{8, 1}, {64, 1000}, {5, 70001}, {2, 393216}};
  for (const bool hopper : {true, false})
    for (Dtype d : {Dtype::f32, Dtype::bf16, Dtype::f64})
      for (Direction dir : {Direction::forward, Direction::backward})
        for (const Shape& sh : shapes) {
          const TargetLimits limits = hopper ? hopper_limits() : pocl_limits();
          const KernelSpec spec = row_spec(d, dir);
          CAPTURE(hopper);
          CAPTURE(to_string(spec));
          CAPTURE(sh.cols);
          const auto space = RowSearchSpace{}.enumerate(spec, limits, sh.rows, sh.cols);
          REQUIRE_FALSE(space.empty());
          std::set<RowStrategy> strategies;
          std::set<std::string> seen;
          for (const KernelConfig& c : space) {
            CAPTURE(to_string(c));
            CHECK(resolve_config(spec, c, limits) == c);  // resolved already, and accepted
            // and so is the config of the binary the tuner compiles for it first
            CHECK_NOTHROW(resolve_config(spec, binary_identity(spec, c), limits));
            CHECK_NOTHROW(row_launch_dims(spec, c, sh.rows, sh.cols, limits));
            if (row_capacity(c)) CHECK(row_capacity(c) >= sh.cols);
            if (c.row == RowStrategy::cluster)
              CHECK(row_slice_bytes(spec, c, sh.cols, row_shared_room(spec, c, limits.max_shared_optin)) +
                        row_static_shared_bytes(spec, c) <=
                    limits.max_shared_optin);
            for (const auto& k : search_constraints()) CHECK_MESSAGE(k.holds(spec, c, limits), k.name);
            CHECK(seen.insert(to_string(c)).second);  // no duplicates
            strategies.insert(c.row);
          }
          // online takes any row; clusters only where the device has them, and only for rows that
          // give each block's threads a vector; registers hold the short rows.
          CHECK(strategies.count(RowStrategy::online));
          if (!hopper || sh.cols == 1) CHECK_FALSE(strategies.count(RowStrategy::cluster));
          // The pipelined kernel's float32 softmax forward both keeps its terms and recomputes
          // them; nothing else recomputes (it keeps none).
          const auto recomputes =
              std::count_if(space.begin(), space.end(), [](const KernelConfig& c) { return c.recompute_terms; });
          const auto keeps = std::count_if(space.begin(), space.end(),
                                           [&](const KernelConfig& c) { return row_keeps_stage_terms(spec, c); });
          if (hopper && d == Dtype::f32 && dir == Direction::forward && sh.cols > 1) {
            CHECK(recomputes > 0);
            CHECK(keeps > 0);
          } else {
            CHECK(recomputes == 0);
          }
          if (sh.cols <= 1000) CHECK(strategies.count(RowStrategy::registers));
          // The row default is a candidate, not only the baseline tune() adds.
          const KernelConfig def = resolve_config(spec, default_row_config(spec, sh.cols, limits), limits);
          CHECK(std::find(space.begin(), space.end(), def) != space.end());
        }
}

TEST_CASE("the row search space leaves out what cannot hold the rows instead of failing it") {
  const KernelSpec spec = row_spec(Dtype::f32, Direction::forward);
  const TargetLimits limits = hopper_limits();
  RowSearchSpace only_registers;
  only_registers.strategies = {RowStrategy::registers};
  // 16 vectors of 4 floats a thread at most, by 1024 threads: longer rows have no registers config.
  CHECK(only_registers.enumerate(spec, limits, 1, 1u << 20).empty());
  CHECK_FALSE(only_registers.enumerate(spec, limits, 1, 4096).empty());
  RowSearchSpace only_cluster;
  only_cluster.strategies = {RowStrategy::cluster};
  CHECK(only_cluster.enumerate(spec, pocl_limits(), 2, 393216).empty());  // no clusters on OpenCL
  // A row of 2^24 floats (64 MiB) fits no cluster's shared memory.
  CHECK(only_cluster.enumerate(spec, limits, 1, 1u << 24).empty());
  // The run key tells the row space apart from the element-wise one.
  CHECK(RowSearchSpace{}.describe() != SearchSpace{}.describe());
}

TEST_SUITE("opencl") {
  TEST_CASE("OpenCL: kplay bench --shape times a row activation against a copy of the bytes it moves") {
    test::TempDir dir;
    const std::string json = dir.file("bench.json");
    test::CliResult r = test::run_cli(
        "bench --backend opencl --act softmax --shape 8x1000 --no-db --repeat 3 --warmup 1 --json " + json);
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.has("8x1000"));
    CHECK(r.has("row="));  // choose_row_config's row default, not an element-wise config
    std::ifstream in(json);
    const nlohmann::json rows = nlohmann::json::parse(in);
    REQUIRE(rows.size() == 1);
    const auto& row = rows[0];
    CHECK(row["shape"] == "8x1000");
    CHECK(row["verified"] == true);
    // Forward: x read and y written, against a copy that reads and writes as many bytes.
    CHECK(row["kernel_bytes"] == 2 * 8000 * 4);
    CHECK(row["copy_bytes"] == row["kernel_bytes"]);
    CHECK(row["ratio"].get<double>() > 0);
    // Backward: y and g read, the gradient written, against the same copy.
    r = test::run_cli(
        "bench --backend opencl --act softmax --direction backward --shape 8x1000 --no-db --repeat 3 "
        "--warmup 1 --json " +
        json);
    INFO(r.output);
    REQUIRE(r.status == 0);
    std::ifstream back(json);
    const nlohmann::json b = nlohmann::json::parse(back).at(0);
    CHECK(b["verified"] == true);
    CHECK(b["kernel_bytes"] == 3 * 8000 * 4);
    CHECK(b["copy_bytes"] == 2 * 8000 * 4);
    // kplay run times the same shape over as many buffer sets as bench.
    const auto sets = b["buffer_sets"].get<std::size_t>();
    r = test::run_cli("run --backend opencl --act softmax --direction backward --shape 8x1000 --no-db --repeat 3");
    INFO(r.output);
    REQUIRE(r.status == 0);
    if (sets > 1)
      CHECK(r.has("each sample over " + std::to_string(sets) + " sets of buffers"));
    else
      CHECK_FALSE(r.has("sets of buffers"));
    // A row activation's size is a shape.
    r = test::run_cli("bench --backend opencl --act softmax --n 4096 --no-db");
    CHECK(r.status == 2);
    CHECK(r.has("--shape ROWSxCOLS"));
  }

  TEST_CASE("OpenCL: kplay autotune --shape searches the row space, and kplay run serves the winner") {
    test::TempDir dir;
    const std::string db_file = dir.file("k.db"), db = " --backend opencl --db " + db_file;
    test::CliResult r = test::run_cli(
        "autotune" + db + " --act softmax --direction all --shape 8x1000 --strategy random --budget 1 --repeat 3");
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(r.has("8x1000"));
    CHECK(r.has("softmax    backward"));  // from the saved output, the one backward a row activation has
    const auto at = r.output.find("row=");
    REQUIRE(at != std::string::npos);
    const auto begin = r.output.rfind("vec=", at), end = r.output.find('\n', at);
    const std::string best = r.output.substr(begin, end - begin);
    r = test::run_cli("run" + db + " --act softmax --shape 8x1000 --repeat 1 --warmup 0");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("config: " + best + "\n"));
    CHECK(r.has("layer:  user: tuned on this device"));
    r = test::run_cli("db show --db " + db_file);
    CHECK(r.has("best: " + best));
    // Refused before any device work: --n for a row activation, --space of the element-wise knobs.
    r = test::run_cli("autotune" + db + " --act softmax --n 8000");
    CHECK(r.status == 2);
    CHECK(r.has("--shape ROWSxCOLS"));
    r = test::run_cli("autotune" + db + " --act softmax --shape 8x1000 --space block=128");
    CHECK(r.status == 2);
  }
}
