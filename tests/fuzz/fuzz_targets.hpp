// Fuzz targets: each takes arbitrary bytes, feeds them to one parser of untrusted input, and
// returns normally when the input is accepted or refused with the parser's own error
// (kplay::Error, CLI11's parse errors). Anything else (another exception, a crash, a sanitizer
// report, a hang) is a bug. The signature matches libFuzzer's LLVMFuzzerTestOneInput, so each
// target also runs under clang -fsanitize=fuzzer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kplay::fuzz {

struct Target {
  const char* name;
  void (*run)(const std::uint8_t* data, std::size_t size);
  std::vector<std::string> seeds;  // valid and near-valid inputs the mutator starts from
};

const std::vector<Target>& targets();

}  // namespace kplay::fuzz
