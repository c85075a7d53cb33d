// Fuzz targets: each takes arbitrary bytes, feeds them to one parser of untrusted input, and
// returns normally when the input is accepted or refused with the parser's own error
// (kplay::Error, CLI11's parse errors). Anything else (another exception, a crash, a sanitizer
// report, a hang) is a bug. The signature matches libFuzzer's LLVMFuzzerTestOneInput, so each
// target also runs under clang -fsanitize=fuzzer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kplay::fuzz {

struct Target {
  const char* name;
  void (*run)(const std::uint8_t* data, std::size_t size);
  std::vector<std::string> seeds;  // valid and near-valid inputs the mutator starts from
  // How many times an input of this target costs one of the cheapest (a whole database file per
  // input): kplay_fuzz --runs N tries N / cost of its inputs.
  long cost = 1;
};

const std::vector<Target>& targets();

// A valid `kplay db export` document: a device and a tuning record with a candidate.
nlohmann::json export_seed();
// fuzz_db_pages.cpp: edits of a database file, then verify => export => import.
void db_pages(const std::uint8_t* data, std::size_t size);

}  // namespace kplay::fuzz
