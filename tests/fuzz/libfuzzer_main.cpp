// kplay_libfuzz: the targets of fuzz_targets.hpp under libFuzzer, coverage-guided (a clang build
// with -DKPLAY_LIBFUZZER=ON instruments the library too, so an input that reaches a new branch
// of a parser is kept and mutated further). $KPLAY_FUZZ_TARGET names the target; the seeds are
// tests/fuzz/corpus/<target>/:
//   KPLAY_FUZZ_TARGET=db-pages kplay_libfuzz NEW_DIR tests/fuzz/corpus/db-pages -max_total_time=5
// A finding (libFuzzer saves the input as crash-*): an exception the target does not allow
// (printed, then abort), a sanitizer report, or an input slower than -timeout. Without a known
// target it prints the targets and exits 64, as kplay_fuzz does.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "fuzz_targets.hpp"

namespace {
const kplay::fuzz::Target* target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("KPLAY_FUZZ_TARGET");
  for (const auto& t : kplay::fuzz::targets())
    if (name && std::strcmp(name, t.name) == 0) target = &t;
  if (!target) {
    std::fprintf(stderr, "usage: KPLAY_FUZZ_TARGET=NAME kplay_libfuzz [libFuzzer flags and corpus folders]; targets:");
    for (const auto& t : kplay::fuzz::targets()) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    std::exit(64);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    target->run(data, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kplay_libfuzz: UNEXPECTED EXCEPTION in target '%s': %s\n", target->name, e.what());
    std::abort();
  }
  return 0;
}
