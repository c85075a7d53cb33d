// The flat kernel's conditions; see launch_layout.hpp.
#include "launch_layout.hpp"

namespace kplay {

std::uint64_t flat_elements(const rt::KernelArgs& a, bool backward, std::size_t vec_bytes, bool handles_are_addresses) {
  if (a.rows == 0 || a.cols == 0 || vec_bytes == 0) return 0;
  const bool contiguous =
      a.rows == 1 || (a.ld_out == a.cols && a.ld_in0 == a.cols && (!backward || a.ld_in1 == a.cols));
  if (!contiguous || a.cols > kFlatMaxElements || a.rows > kFlatMaxElements / a.cols) return 0;
  auto aligned = [&](const rt::DevicePtr& p) {
    return ((handles_are_addresses ? p.handle : 0) + p.offset) % vec_bytes == 0;
  };
  if (!aligned(a.out) || !aligned(a.in0) || (backward && !aligned(a.in1))) return 0;
  return a.rows * a.cols;
}

}  // namespace kplay
