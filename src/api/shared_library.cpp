// libkplay.so's own translation unit. The library is kplay_core linked whole (see CMakeLists.txt),
// so the C API (c_api.cpp) and the C++ API (api.cpp) are exported from it; this file only names
// the library's version for tools that look for it.
// KPLAY_VERSION_TEXT is CMake's PROJECT_VERSION, as for `kplay --version`.
extern "C" const char* kplay_version(void) { return KPLAY_VERSION_TEXT; }
