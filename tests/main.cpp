// Test runner: doctest, plus --require-backend=NAME, which exits 77 (ctest: "skipped") with the
// reason printed when that backend has no device here, so GPU suites skip visibly in CI.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device_fixture.hpp"

int main(int argc, char** argv) {
  // The API opens the kernel database at KPLAY_DB or the user's cache dir: keep tests out of it.
  std::string db;
  if (!std::getenv("KPLAY_DB")) {
    db = "/tmp/kplay-tests-" + std::to_string(::getpid()) + ".db";
    setenv("KPLAY_DB", db.c_str(), 1);
  }
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const char* prefix = "--require-backend=";
    if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) {
      const std::string name = argv[i] + std::strlen(prefix);
      std::string why;
      if (!kplay::test::backend_available(name, &why)) {
        std::printf("SKIPPED: the %s tests need a device: %s\n", name.c_str(), why.c_str());
        return 77;
      }
      continue;
    }
    args.push_back(argv[i]);
  }
  doctest::Context context(static_cast<int>(args.size()), args.data());
  const int rc = context.run();
  if (!db.empty())
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
  return rc;
}
