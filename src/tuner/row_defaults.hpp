// The default config of a row kernel (the softmax family) on a device no tuning covers, from the
// row length and direction: the whole row in registers where it fits 4 vectors per thread of up to
// 1024 threads (a forward on CUDA below float64: 2, on the persistent grid; on sm_90 backward
// float32 rows of 1024 to 16384 go to the pipelined cluster kernel, a block a row up to 2048 and in
// clusters of 2 beyond, and 16-bit rows of 16385 to 32768 one-shot across clusters of 4:
// row_defaults.cpp), else the online two-pass kernel, which takes any row on any device: forward, 4
// vectors in flight a thread, in blocks of 128 on CUDA for rows of up to 128 vectors a thread, of
// 1024 elsewhere, and for 16-bit dtypes where the device has clusters the pipelined cluster kernel
// (one read an element) with slices of about 16384 elements, for float32 softmax and softmin rows
// beyond 24576 elements in clusters of 4, 8 or 16, keeping their terms, where two stages fit; backward, float32 rows of
// up to 65536 elements where clusters exist: the pipelined cluster kernel, slices of 8192 elements; else 2 vectors of g
// and y each (4 spill), and where the device has clusters, across a cluster of blocks of 512 with slices of at most
// 8192 float32 or 32768 16-bit elements (up to its largest cluster), so that the second pass reads them from L2.
// Vectors of 16 bytes. In registers:
// - forward below float64 on CUDA: two vectors a thread on a persistent grid (one wave; each group
//   loads its next row before it reduces this one), short rows sharing a block of 128;
// - other forwards: one vector a thread, two for 16-bit rows of 64 vectors or more; backward: four;
//   short rows sharing a block of 256.
// Measured on an H200 (`kplay bench --act softmax --no-db --shape ...`, `kplay autotune`;
// docs/benchmarks.md, "Softmax"), % of a same-run copy: float32 forward on the persistent grid
// 65536x128 86 (16 threads a row, blocks of 128), 32768x1024 74 (128), 16384x4096 72 (512),
// 2048x8192 66 (1024) -- the first three the autotuner's winners -- against 72, 57, 52 and 42
// one-shot (where one vector a thread beat two or more: 53, 54, 51); bfloat16 the same way 77,
// 76, 73 against 70, 62, 62 one-shot (one vector a thread at 128 columns, two from 1024).
// Beyond: online forward in blocks of 128 against 1024, float32 8192x32768 60 against 54 (and the
// autotuner's pick), bfloat16 8192x32768 62 against 52 for registers at 4 vectors a thread of
// 1024, 4096x131072 60 against 60; from 32768 vectors a row blocks of 1024 lead by 1-13 points
// (float32 4096x131072 58, 4096x393216 60, 1024x1048576 57; bfloat16 62 and 59). Every one-read
// layout tried there was slower in float32 while it took two exps an element: the one-shot cluster
// kernel 28-48, online across clusters of 16 31, the pipelined cluster kernel 21-52 (clusters of
// 16, blocks of 128 to 1024, 1 to 4 vectors a thread; best blocks of 512 at 4). The online forward
// reads each row twice and at 4096x393216 float32 runs at 78 % of DRAM's peak (Nsight Compute), its
// bound; the one-read kernels spent two double exps an element in fewer SMs (7 clusters of 16 fit
// the H200). The pipelined kernel's float32 softmax and softmin keep their terms (one exp an
// element), take one exchange a row and hold one stage where two do not fit (docs/design.md);
// measured with `kplay run --no-db --repeat 15 --row cluster --grid grid-stride ...` (2026-12-05):
// 8192x32768 in clusters of 4 (blocks of 256, 4 vectors a thread) 70.5 against 59.8 online and
// torch's 63.6 eager, 64.1 compiled -- the default for those rows -- computing the terms again
// 58.6, clusters of 8 51.9, of 16 6-37; 4096x131072 in clusters of 16 60.3 (again: 53.1; clusters
// of 8 54.0) against 59.6 online, a tie; 4096x393216, one stage in clusters of 16, 42-46 (two
// stages, the terms computed again: 51-54) against 61.2 online. Kept as a byte an element beside
// the stage (row_stages.h), the terms leave room for two stages (2026-12-05, `kplay bench --no-db`,
// --grid grid-stride: four times the resident clusters, where the defaults and the tuner's space
// launch them once; 8192x32768 as its default):
// 8192x32768 72.3 (clusters of 2: 68.2; blocks of 128: 69.6, 512: 50.7; clusters of 8: 52.4);
// 4096x131072 in clusters of 8, blocks of 512, 4 vectors 64.3 against 59.6 online (blocks of 256:
// 55.4; clusters of 16: 59.3, of 4 (one stage): 61.9); 4096x393216 in clusters of 16, blocks of
// 256 (blocks of 512 leave room for one stage: 44.3), 8 vectors a thread 64.0 against 61.1 online
// (4 vectors: 50.6, 2: 46.0; blocks of 128: 31.9 and 46.5; terms computed again: 50.9) -- the
// defaults for float32 softmax and softmin rows beyond 24576 where two stages and the terms fit
// (up to 393217 columns on the H200), online beyond. log_softmax in clusters of 16
// (blocks of 256, 4 vectors): 19.8, 54.6, 56.6. The one exchange taken by 16-bit rows too
// (KPLAY_ROW_XCHG1=all), bfloat16 at those shapes: 75.0, 68.0, 60.3 against 76.2, 67.8, 64.5 with
// two: off for them. In bfloat16 the pipelined cluster kernel leads: 8192x32768 74.8 in clusters of
// 2 (blocks of 128, 4 vectors a thread) against 61.9 online, 4096x131072 66.8 in clusters of 8
// against 60.0, 4096x393216 64.2 in clusters of 16 (blocks of 256) against 61.5; slices of 32768
// elements or more (clusters of 1 at 32768: 46.8, 4 at 131072: 57.9) and blocks of 512 or 1024 in
// clusters of 16 (23-50) are slower. 2^20 bfloat16 columns: two stages of a slice exceed shared
// memory, online (58.4).
// Backward 16384x4096 80 (bfloat16 82) with four vectors a thread against 60 (73) with one; the
// pipelined cluster kernel 88 there in a block a row, 93 in clusters of 2 (blocks of 128, two
// vectors a thread), the float32 default for rows of 2049 to 16384 where clusters exist;
// 32768x1024 83 a block a row (blocks of 128, two vectors) against 77 in registers, the default
// from 1024 to 2048.
// float32 8192x32768: the pipelined cluster kernel in clusters of 4, blocks of 256, 4 vectors a
// thread 96 (2 vectors: 86; blocks of 128: 55-72) against 74 online across clusters of 4 -- the
// default for float32 rows of 16,385 to 65,536 elements (`kplay bench --no-db --repeat 9`); longer
// rows' two stages of g and y exceed shared memory at clusters of 8, and clusters of 16 are not
// measured. bfloat16 backward beyond registers keeps online: the pipelined kernel (blocks of 256,
// 4 vectors a thread) at 8192x32768 63-65 in clusters of 2 and 4, 36 in 8, against 67 in
// registers; at 4096x131072 62 in clusters of 8 and 64 in 16, against 64. The one-shot cluster
// kernel (a cluster a row, blocks of 256, four vectors) at 8192x32768 76 in clusters of 4 and 73
// in 2: the default for 16-bit rows of 16385 to 32768 elements (2026-12-04).
// Backward beyond registers: 4096x393216 float32 65 (bfloat16 53) across clusters of 16,
// 8192x32768 float32 74 across clusters of 4, against 26, 24 and 25 for the one-block online
// kernel at 4 vectors a thread; bfloat16 4096x131072 64 across clusters of 4 against 36 of 16.
// Clusters, pipelined or not, and shared memory stay in the tuner's space.
#pragma once
#include <cstdint>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

KernelConfig default_row_config(const KernelSpec& spec, std::uint64_t cols, const rt::TargetLimits& limits);

// The config of strided rows (a dim that is not the last: codegen's Layout::strided), vectors of one
// element: rows of up to 16 elements in registers, a thread a row; up to 256 in registers across a
// group of up to 32 threads a warp apart (row_reduce.h), 8 elements a thread at most; longer ones
// online in groups of 32, 4 elements in flight a thread. Each term kept where the row sits in
// registers (one exp an element). Not tuned: the database's tunings are for rows of contiguous
// elements.
KernelConfig strided_row_config(const KernelSpec& spec, std::uint64_t cols);

}  // namespace kplay
