// A C++ program built against an installed kplay, running the README's snippet (generated
// readme_snippet.inc) on null buffers: it must compile and link as written and throw
// kplay::Error with a message rather than crash (no GPU needed).
#include <cstdio>
#include <cstring>

#include <kplay/kplay.h>  // kplay_version()

#include "readme_snippet.inc"

int main() {
  if (std::strcmp(kplay_version(), KPLAY_EXPECTED_VERSION) != 0) {
    std::fprintf(stderr, "kplay_version() is %s, the package says %s\n", kplay_version(), KPLAY_EXPECTED_VERSION);
    return 1;
  }
  try {
    readme_snippet(nullptr, nullptr, nullptr, nullptr, nullptr, 16, nullptr);
  } catch (const kplay::Error& e) {
    if (std::strlen(e.what()) == 0) return 1;
    std::printf("kplay %s from C++: README snippet on null buffers refused: %s\n", kplay_version(), e.what());
    return 0;
  }
  std::fprintf(stderr, "the README snippet accepted null buffers\n");
  return 1;
}
