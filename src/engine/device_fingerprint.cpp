// See device_fingerprint.hpp.
#include "device_fingerprint.hpp"

#include "util/hash.hpp"

namespace kplay {

std::string device_fingerprint(const rt::DeviceInfo& d) {
  return hash_hex({d.backend, d.name, d.arch, d.driver_version, d.compiler_version, d.compile_target});
}

}  // namespace kplay
