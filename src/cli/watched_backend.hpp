// The command line's backend: the real one, with every call that can wait on the device (launch,
// transfers, fills, copies, timing, synchronize) or on the compiler (compile) under a
// watchdog::Wait, so that `--timeout` catches a kernel that never ends, and a source that never
// finishes compiling, wherever kplay waits for it (see util/watchdog.hpp).
#pragma once
#include <memory>

#include "runtime/backend.hpp"

namespace kplay::cli {

std::unique_ptr<rt::Backend> watched(std::unique_ptr<rt::Backend> backend);

}  // namespace kplay::cli
