// kplay bench --compare: other configs timed on the same buffers in the same process, each in
// turn, --rounds times over (its refusals of bad input: tests/test_cli.cpp).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.hpp"
#include "db_test_support.hpp"
#include "device_fixture.hpp"

namespace {
using kplay::test::CliResult;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str(), nullptr, false);
}
}  // namespace

TEST_SUITE("opencl") {
  TEST_CASE("bench --compare times each config on the same buffers in turn, --rounds times, each checked") {
    if (!kplay::test::backend_or_skip("opencl")) return;
    kplay::test::TempDir dir;
    const std::string out = dir.file("rows.json");
    const CliResult r = kplay::test::run_cli(
        "bench --backend opencl --act relu --n 65536 --repeat 2 --warmup 0 --no-db --block 128 --compare '--vec 1 "
        "--block 64' --rounds 2 --json " +
        out);
    INFO(r.output);
    REQUIRE(r.status == 0);
    const nlohmann::json rows = read_json(out);
    REQUIRE(rows.is_array());
    std::vector<std::string> seen;
    for (const auto& row : rows)
      seen.push_back(std::to_string(row["round"].get<int>()) + " " +
                     row["config"].get<std::string>().substr(0, std::string("vec=4 block=128").size()));
    CHECK(seen ==
          std::vector<std::string>{"1 vec=4 block=128", "1 vec=1 block=64 ", "2 vec=4 block=128", "2 vec=1 block=64 "});
    for (const auto& row : rows) {
      CHECK(row["verified"].get<bool>());
      CHECK(row["buffer_sets"] == rows[0]["buffer_sets"]);
      CHECK(row["ratio"].get<double>() > 0);
    }
    CHECK(rows[1]["config_source"].get<std::string>() == "--compare: --vec 1 --block 64");

    // A row activation: a compared config runs the same rows, strided ones included; one that
    // cannot hold them is refused naming it.
    const CliResult s = kplay::test::run_cli(
        "bench --backend opencl --act softmax --shape 8x21x64 --dim 1 --repeat 1 --warmup 0 --no-db --compare "
        "'--row registers --per-thread 16'");
    INFO(s.output);
    CHECK(s.status == 2);
    CHECK(s.has("--compare '--row registers --per-thread 16': a row of 21 elements is longer than"));
    const CliResult t = kplay::test::run_cli(
        "bench --backend opencl --act softmax --shape 8x21x64 --dim 1 --repeat 1 --warmup 0 --no-db --compare "
        "'--row online --per-thread 2' --json " +
        dir.file("strided.json"));
    INFO(t.output);
    REQUIRE(t.status == 0);
    const nlohmann::json strided = read_json(dir.file("strided.json"));
    REQUIRE(strided.is_array());
    REQUIRE(strided.size() == 2);
    CHECK(strided[1]["config"].get<std::string>().find("vec=1 ") == 0);  // strided rows: vectors of one element
    CHECK(strided[1]["config"].get<std::string>().find(
              "per-thread=2 grid=one-shot cache=default fast-math=off row=online") != std::string::npos);
    CHECK(strided[1]["verified"].get<bool>());
  }
}
