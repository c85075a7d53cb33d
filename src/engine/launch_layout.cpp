// The flat kernel's conditions; see launch_layout.hpp.
#include "launch_layout.hpp"

namespace kplay {

std::uint64_t flat_elements(const rt::KernelArgs& a, bool reads_in1, std::size_t vec_bytes, bool handles_are_addresses,
                            std::size_t out_vec_bytes) {
  if (a.rows == 0 || a.cols == 0 || vec_bytes == 0) return 0;
  const bool five = a.gated_backward;
  const bool contiguous =
      a.rows == 1 || (a.ld_out == a.cols && a.ld_in0 == a.cols && (!reads_in1 || a.ld_in1 == a.cols) &&
                      (!five || (a.ld_out1 == a.cols && a.ld_in2 == a.cols)));
  if (!contiguous || a.cols > kFlatMaxElements || a.rows > kFlatMaxElements / a.cols) return 0;
  auto aligned = [&](const rt::DevicePtr& p, std::size_t bytes) {
    return ((handles_are_addresses ? p.handle : 0) + p.offset) % bytes == 0;
  };
  if (!aligned(a.out, out_vec_bytes ? out_vec_bytes : vec_bytes) || !aligned(a.in0, vec_bytes) ||
      (reads_in1 && !aligned(a.in1, vec_bytes)))
    return 0;
  if (five && (!aligned(a.out1, vec_bytes) || !aligned(a.in2, vec_bytes))) return 0;
  return a.rows * a.cols;
}

bool row_whole(const rt::KernelArgs& a, bool reads_in1, std::size_t vec_bytes, std::size_t elem_bytes,
               bool handles_are_addresses) {
  if (vec_bytes == 0 || elem_bytes == 0 || vec_bytes % elem_bytes != 0) return false;
  const std::uint64_t lanes = vec_bytes / elem_bytes;
  auto starts = [&](const rt::DevicePtr& p, std::uint64_t ld) {
    return ((handles_are_addresses ? p.handle : 0) + p.offset) % vec_bytes == 0 && ld % lanes == 0;
  };
  return a.cols % lanes == 0 && starts(a.out, a.ld_out) && starts(a.in0, a.ld_in0) &&
         (!reads_in1 || starts(a.in1, a.ld_in1));
}

}  // namespace kplay
