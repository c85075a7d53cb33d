// Rendering of the row kernel (templates/common/rowwise.h) for the row activations (the softmax
// family): codegen.cpp's render_kernel and entry_name hand a row activation's spec here.
#pragma once
#include <string>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

// How a kernel's rows lie. `any`: rows of contiguous elements, any pitch, offset and length.
// `whole`: such rows where every row of every buffer starts on a vector and holds a multiple of its
// lanes (row_whole in launch_layout.hpp; contiguous tensors of a multiple of 4 float32 or 8 16-bit
// columns), so that a vector inside a row is whole and the kernel has no lane-by-lane path
// (KP_WHOLE_ROWS). `strided`: rows whose elements are `inner` apart (each buffer [outer, cols,
// inner], its pitch between outer blocks; the kernel takes inner after the pitches), for softmax
// over a dimension that is not the last: a row's threads are neighbouring lanes and a warp's groups
// neighbouring rows, so that a warp reads neighbouring rows' elements together.
enum class RowLayout { any, whole, strided };

// "kplay_softmax_fwd_f32_v4_b256_p4_reg" (registers), "..._reg_cl16" (registers across a cluster of
// 16), "..._shm", "..._onl", "..._cl8" (cluster of 8); "..._st" for strided rows, "..._w" for whole
// ones.
std::string row_entry_name(const KernelSpec& spec, const KernelConfig& config, RowLayout layout = RowLayout::any);

// `config` must come from resolve_config (vec and row filled in). A strided config must have
// vectors of one element, --row registers or online, no cluster and a one-shot grid
// (strided_config_problem); Error(invalid_config) otherwise.
rt::RenderedKernel render_row_kernel(const KernelSpec& spec, const KernelConfig& config, const rt::Dialect& dialect,
                                     RowLayout layout = RowLayout::any);

// Why `config` cannot run strided rows (empty when it can): the knobs render_row_kernel requires.
std::string strided_config_problem(const KernelConfig& config);

// Whether `spec` is a float32 kernel at torch's accuracy (softmax(accuracy=torch) and the family's
// others forward, log_softmax's backward too): the kernel then computes in float as the 16-bit rows
// do (templates/common/row_math.h, KP_ROW_TIER; docs/accuracy.md, "The softmax family at torch's
// accuracy").
bool row_torch_tier(const KernelSpec& spec);

// Whether the pipelined cluster kernel (--row cluster --grid grid-stride) keeps each term of the
// sum for the results (row_stages.h's KP_STAGE_KEEP): the float32 forward of softmax and softmin,
// whose results are exp(x - max) / sum (log_softmax's need no exp), unless the config asks it to
// compute them again (--recompute-terms: a second exp an element for a byte an element less shared memory,
// which the tuner weighs); row_terms_can_be_kept: where that choice exists.
bool row_terms_can_be_kept(const KernelSpec& spec, const KernelConfig& config);
bool row_keeps_stage_terms(const KernelSpec& spec, const KernelConfig& config);

// Whether a row of the cluster kernel takes one exchange across its cluster, its max travelling
// with its sum (row_reduce.h's KP_XCHG1), instead of two: the pipelined kernel's float32 forward in a
// cluster of more than one block (the kernel takes it for 16-bit rows too).
bool row_exchanges_once(const KernelSpec& spec, const KernelConfig& config);

// The dynamic shared memory a cluster launch's blocks need for a row of `cols` elements: its
// slice (backward: the gradient's and the output's), 16-byte aligned. The pipelined kernel
// (--grid grid-stride) holds two stages of it, filling one while it reduces the other, where they
// fit in `room` bytes, else one (refilled once its row is done; row_stages.h tells the two apart by
// the size the launch gives), and a byte an element where it keeps the terms (the top byte of each
// double's low word). 0 for the other strategies.
std::uint64_t row_slice_bytes(const KernelSpec& spec, const KernelConfig& config, std::uint64_t cols,
                              std::uint64_t room = ~std::uint64_t{0});

// The room a launch's dynamic shared memory has: the device's opt-in limit less the kernel's
// static shared memory (row_static_shared_bytes), 0 where that takes it all.
std::uint64_t row_shared_room(const KernelSpec& spec, const KernelConfig& config, std::uint64_t max_shared_optin);

// The blocks that hold one row: config.cluster for --row cluster and for registers or online
// across a cluster (--row registers|online --cluster N), else 1.
int row_cluster(const KernelConfig& config);

// The threads of a block that hold one row (or its slice): the block, or row_threads where given
// (not for clusters).
int row_group_threads(const KernelConfig& config);

// The longest row a registers or shared kernel holds (row threads x per_thread x vec, times the
// cluster for registers across one); 0 for online and cluster, which hold any row that fits memory.
std::uint64_t row_capacity(const KernelConfig& config);

// The static shared memory of a row kernel of `config` (its reductions' scratch, and the slots of
// the shared strategy), which codegen's validation keeps within the 48 KiB every device offers.
std::uint64_t row_static_shared_bytes(const KernelSpec& spec, const KernelConfig& config);

}  // namespace kplay
