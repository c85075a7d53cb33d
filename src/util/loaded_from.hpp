// Where the code of this library was loaded from, so that data installed beside it (the shipped
// tunings, docs/design.md "Shipped tunings") is found wherever the library is: the `kplay`
// command, libkplay.so, or the Python extension kplay/_core.so, installed or in the build tree.
#pragma once
#include <string>

namespace kplay {

// The absolute, symlink-resolved directory of the executable or shared object that holds this
// function; "" when it cannot be told (no dladdr, no /proc).
std::string loaded_from_dir();

}  // namespace kplay
