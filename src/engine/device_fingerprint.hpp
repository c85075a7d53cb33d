// The fingerprint that keys a device's binaries and tunings in the kernel database: a hash of
// what decides whether compiled code and timings carry over (backend, name, architecture,
// driver and compiler versions, compile target).
#pragma once
#include <string>

#include "runtime/backend.hpp"

namespace kplay {

std::string device_fingerprint(const rt::DeviceInfo& d);

}  // namespace kplay
