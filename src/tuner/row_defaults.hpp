// The default config of a row kernel (the softmax family) on a device no tuning covers, from the
// row length, dtype and direction, with vectors of 16 bytes:
//
//   rows a block's registers hold (two vectors a thread forward on CUDA below float64, four else)
//     forward, CUDA below float64  registers, two vectors a thread, on a persistent grid (each group
//                                  loads its next row before it reduces this one); short rows share
//                                  a block of 128; log_softmax (no terms kept) 32 elements a thread,
//                                  in rows of at least 8 threads
//     other forwards               registers, one vector a thread (16-bit rows of 64 vectors or
//                                  more: two); short rows share a block of 256
//     backward                     registers, four vectors a thread (on CUDA one in rows of at most
//                                  32 vectors: a warp or less a row; float32 log_softmax two, on a
//                                  persistent grid); on sm_90, float32 rows of
//                                  1024 to 16384 in the pipelined cluster kernel (a block a row up to
//                                  2048, clusters of 2 beyond) and 16-bit rows of 16385 to 32768
//                                  one-shot across clusters of 4
//   longer rows
//     forward, sm_90, 16-bit       the pipelined cluster kernel, slices of about 16384 elements
//     forward, sm_90, float32      softmax and softmin: the pipelined cluster kernel keeping its
//                                  terms, clusters of 2 (blocks of 128, 4 vectors a thread) up to
//                                  24576, 4 (128, 4) up to 49152, 8 (512, 4) up to 196608, 16 (256,
//                                  8) beyond, where two stages and the terms fit (402240 on the
//                                  H200); log_softmax up to 65536, slices of 8192, blocks of 128
//     backward, sm_90              softmax and softmin (16-bit beyond 32768): the pipelined cluster
//                                  kernel, slices of 8192 in clusters of up to 16 (16-bit: blocks
//                                  of 512 where a slice is longer), where its stages fit;
//                                  log_softmax float32 up to 65536 the same in clusters of up to 8
//     anything else                online (two reads, any row, any device): forward 4 vectors in
//                                  flight a thread in blocks of 128 on CUDA up to 128 vectors a
//                                  thread, of 1024 beyond; backward 2 vectors of g and y each,
//                                  across clusters of blocks of 512 where they exist (slices of at
//                                  most 8192 float32 or 32768 16-bit elements: the second pass
//                                  reads them from L2; log_softmax's up to clusters of 8, longer
//                                  rows in blocks of 1024)
//
// Each choice is the fastest measured on the H200 at the shapes of docs/benchmarks.md's softmax
// table (`kplay bench --no-db --act softmax --shape R x C [--direction backward] [knobs]`, % of a
// same-run copy); docs/design.md ("Row defaults, measured") has the figures of the configs each one
// was chosen over. Clusters, pipelined or not, and shared memory stay in the tuner's space.
#pragma once
#include <cstdint>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

KernelConfig default_row_config(const KernelSpec& spec, std::uint64_t cols, const rt::TargetLimits& limits);

// The config of strided rows (a dim that is not the last: codegen's Layout::strided), vectors of one
// element, a thread a row up to 128 elements and a group of 4 lanes beyond: rows of up to 16
// elements in registers (each term kept: one exp an element), longer ones online, 4 elements in
// flight a thread. Not tuned: the database's tunings are for rows of contiguous elements.
KernelConfig strided_row_config(const KernelSpec& spec, std::uint64_t cols);

}  // namespace kplay
