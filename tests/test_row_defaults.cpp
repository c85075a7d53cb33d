// The row kernel's default config (src/tuner/row_defaults.cpp): what the model gives each member,
// dtype, direction and row length on OpenCL and on an sm_90 device with clusters, and that every
// default is a config the backend accepts and launches for that row (no device needed).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "codegen/row_codegen.hpp"
#include "engine/launch_geometry.hpp"
#include "kplay/error.hpp"
#include "row_spec.hpp"
#include "runtime/backend_factory.hpp"
#include "tuner/row_defaults.hpp"

using namespace kplay;
using kplay::test::row_spec;

TEST_CASE(
    "row default config: registers for short rows (forward: two vectors a thread on a persistent grid on CUDA, else "
    "one, two for long 16-bit rows; backward: four, on CUDA one in rows of up to 32), else online (CUDA forward: "
    "blocks of 128 up to 128 vectors a thread; 16-bit with clusters, and float32 softmax and softmin beyond "
    "registers in clusters of 2 to 16: the pipelined cluster kernel; the backward beyond registers the same "
    "(log_softmax: float32 in clusters of up to 8); "
    "backward rows that registers hold, on CUDA on a persistent grid or in clusters where they run faster)") {
  TargetLimits opencl;
  opencl.backend = "opencl";
  TargetLimits hopper;
  hopper.max_cluster = 16;
  hopper.max_shared_optin = 227 * 1024;
  const KernelSpec f = row_spec("softmax", Dtype::f32, Direction::forward);
  for (const TargetLimits& lim : {opencl, hopper}) {
    const bool cuda = lim.backend == "cuda";
    // In registers up to 4 vectors a thread of 1024; a CUDA forward up to 2 (16384 columns: 4096
    // vectors go to a cluster, below).
    for (std::uint64_t cols : {1ull, 128ull, 4096ull, 8192ull, 16384ull}) {
      const KernelConfig c = default_row_config(f, cols, lim);
      INFO(cols << " columns, " << lim.backend);
      if (cuda && cols > 8192) {
        CHECK(c.row == RowStrategy::cluster);
        continue;
      }
      CHECK(c.row == RowStrategy::registers);
      CHECK(row_capacity(c) >= cols);
      CHECK_NOTHROW(row_launch_dims(f, resolve_config(f, c, lim), 1000, cols, lim));
    }
    // 128 float32 columns: 32 vectors of 4. On CUDA two a thread, 8 rows a block of 128, on a
    // persistent grid of one wave; elsewhere one a thread, 8 rows a block of 256, one-shot.
    const KernelConfig s = default_row_config(f, 128, lim);
    CHECK(s.per_thread == (cuda ? 2 : 1));
    CHECK(s.row_threads == (cuda ? 16 : 32));
    CHECK(s.block == (cuda ? 128 : 256));
    CHECK(s.grid == (cuda ? GridPolicy::grid_stride : GridPolicy::one_shot));
    // Rows beyond two vectors a thread of 1024 go back to one-shot where they go online.
    TargetLimits no_clusters = lim;
    no_clusters.max_cluster = 1;
    CHECK(default_row_config(f, 16384, no_clusters).grid == GridPolicy::one_shot);
    CHECK(default_row_config(f, 16384, no_clusters).per_thread == 4);
    // bfloat16: on CUDA as float32 (two a thread, persistent); elsewhere two a thread for rows of
    // 64 vectors or more, one for shorter ones.
    const KernelSpec h = row_spec("softmax", Dtype::bf16, Direction::forward);
    CHECK(default_row_config(h, 4096, lim).per_thread == 2);
    CHECK(default_row_config(h, 4096, lim).block == 256);
    CHECK(default_row_config(h, 128, lim).per_thread == (cuda ? 2 : 1));
    CHECK(default_row_config(h, 128, lim).grid == s.grid);
    // log_softmax on CUDA: forward 32 elements a thread (1024 columns: 32 threads a row of eight
    // float32 vectors or four bfloat16 ones) in rows of at least 8 threads (128 float32 columns: 8
    // of four vectors; 128 bfloat16 columns: 8 of two, softmax's); float32 backward in rows a warp
    // holds two vectors a thread on the persistent grid (softmax: one, one-shot). Elsewhere softmax's.
    const KernelSpec lf32 = row_spec("log_softmax", Dtype::f32, Direction::forward);
    const KernelConfig lf1024 = default_row_config(lf32, 1024, lim);
    CHECK(lf1024.per_thread == (cuda ? 8 : 1));
    CHECK(lf1024.row_threads == (cuda ? 32 : 0));
    CHECK(row_capacity(lf1024) >= 1024);
    CHECK_NOTHROW(row_launch_dims(lf32, resolve_config(lf32, lf1024, lim), 1000, 1024, lim));
    const KernelConfig lf128 = default_row_config(lf32, 128, lim);
    CHECK(lf128.per_thread == (cuda ? 4 : 1));
    CHECK(lf128.row_threads == (cuda ? 8 : 32));
    CHECK(lf128.grid == s.grid);
    const KernelSpec lh = row_spec("log_softmax", Dtype::bf16, Direction::forward);
    CHECK(default_row_config(lh, 128, lim) == default_row_config(h, 128, lim));
    const KernelConfig lh1024 = default_row_config(lh, 1024, lim);
    CHECK(lh1024.per_thread == (cuda ? 4 : 2));
    CHECK(lh1024.row_threads == (cuda ? 32 : 64));
    CHECK(row_capacity(lh1024) >= 1024);
    CHECK(default_row_config(row_spec("log_softmax", Dtype::bf16, Direction::backward), 128, lim) ==
          default_row_config(row_spec("softmax", Dtype::bf16, Direction::backward), 128, lim));
    const KernelSpec lb = row_spec("log_softmax", Dtype::f32, Direction::backward);
    const KernelConfig lb128 = default_row_config(lb, 128, lim);
    CHECK(lb128.per_thread == (cuda ? 2 : 4));
    CHECK(lb128.grid == (cuda ? GridPolicy::grid_stride : GridPolicy::one_shot));
    CHECK(default_row_config(row_spec("softmax", Dtype::f32, Direction::backward), 128, lim).per_thread ==
          (cuda ? 1 : 4));
    // The float32 torch tier on CUDA (float math): softmax's forward four vectors a thread (eight
    // from 4096 columns), log_softmax's backward two; its forward, and every tier on other backends,
    // the exact kernel's layout.
    const KernelSpec tf = row_spec("softmax(accuracy=torch)", Dtype::f32, Direction::forward);
    const KernelSpec tlb = row_spec("log_softmax(accuracy=torch)", Dtype::f32, Direction::backward);
    for (std::uint64_t cols : {128ull, 1024ull, 4096ull}) {
      INFO(cols << " columns at torch's accuracy, " << lim.backend);
      const KernelConfig t = default_row_config(tf, cols, lim);
      const KernelConfig e = default_row_config(f, cols, lim);
      CHECK(t.per_thread == (cuda ? (cols >= 4096 ? 8 : 4) : e.per_thread));
      CHECK(t.grid == e.grid);
      CHECK(row_capacity(t) >= cols);
      CHECK_NOTHROW(row_launch_dims(tf, resolve_config(tf, t, lim), 1000, cols, lim));
      const KernelConfig tb = default_row_config(tlb, cols, lim);
      CHECK(tb.per_thread == (cuda ? 2 : default_row_config(lb, cols, lim).per_thread));
      CHECK(tb.grid == default_row_config(lb, cols, lim).grid);
      CHECK(row_capacity(tb) >= cols);
      CHECK_NOTHROW(row_launch_dims(tlb, resolve_config(tlb, tb, lim), 1000, cols, lim));
      const KernelSpec tlf = row_spec("log_softmax(accuracy=torch)", Dtype::f32, Direction::forward);
      CHECK(default_row_config(tlf, cols, lim) == default_row_config(lf32, cols, lim));
    }
    // float64 keeps the one-shot grid on every backend.
    CHECK(default_row_config(row_spec("softmax", Dtype::f64, Direction::forward), 128, lim).grid ==
          GridPolicy::one_shot);
    // The backward: four vectors a thread (4096 float32 columns: 256 threads), on CUDA on a
    // persistent grid of blocks of 256; float32 rows of 4097 to 16384 where clusters exist in the
    // pipelined cluster kernel, clusters of 2, blocks of 128, two vectors a thread; elsewhere
    // registers (8192 columns: 512 threads).
    const KernelSpec b = row_spec("softmax", Dtype::f32, Direction::backward);
    for (std::uint64_t cols : {1023ull, 1024ull, 2048ull, 4096ull}) {
      INFO(cols << " float32 columns backward, " << lim.backend);
      const KernelConfig c = default_row_config(b, cols, lim);
      CHECK(c.row == RowStrategy::registers);
      CHECK(c.per_thread == 4);
      CHECK(c.block == 256);
      CHECK(c.grid == (cuda ? GridPolicy::grid_stride : GridPolicy::one_shot));
      CHECK(row_capacity(c) >= cols);
      CHECK_NOTHROW(row_launch_dims(b, resolve_config(b, c, lim), 1000, cols, lim));
    }
    // float64 keeps the one-shot grid backward too.
    CHECK(default_row_config(row_spec("softmax", Dtype::f64, Direction::backward), 1024, lim).grid ==
          GridPolicy::one_shot);
    // Rows of up to 32 vectors (128 float32 columns, 256 16-bit ones): on CUDA one vector a thread,
    // a warp or less a row; longer ones and other backends up to four.
    for (const KernelSpec& w : {b, row_spec("log_softmax", Dtype::bf16, Direction::backward)})
      for (std::uint64_t cols : {128ull, 129ull, 256ull}) {
        const std::uint64_t vecs = (cols + 16 / dtype_size(w.dtype) - 1) / (16 / dtype_size(w.dtype));
        const KernelConfig c = default_row_config(w, cols, lim);
        INFO(cols << " columns backward, " << std::string(to_string(w.dtype)) << ", " << lim.backend);
        CHECK(c.row == RowStrategy::registers);
        if (cuda && vecs <= 32)
          CHECK(c.per_thread == 1);
        else
          CHECK(c.per_thread == static_cast<int>((vecs + c.row_threads - 1) / c.row_threads));
        CHECK(c.per_thread <= 4);
        CHECK(row_capacity(c) >= cols);
        CHECK_NOTHROW(row_launch_dims(w, resolve_config(w, c, lim), 1000, cols, lim));
      }
    for (std::uint64_t cols : {4097ull, 8192ull, 8196ull, 16384ull}) {
      INFO(cols << " float32 columns backward, " << lim.backend);
      const KernelConfig c = default_row_config(b, cols, lim);
      CHECK(c.row == (cuda ? RowStrategy::cluster : RowStrategy::registers));
      CHECK(c.per_thread == (cuda ? 2 : 4 - (cols % 1024 != 0)));
      CHECK(c.cluster == (cuda ? 2 : 0));
      CHECK(c.grid == (cuda ? GridPolicy::grid_stride : GridPolicy::one_shot));
      CHECK_NOTHROW(row_launch_dims(b, resolve_config(b, c, lim), 1000, cols, lim));
      if (!cuda) CHECK(row_capacity(c) >= cols);
    }
    CHECK(default_row_config(b, 8192, lim).block == (cuda ? 128 : 512));
    // 16-bit backward rows of 16385 to 32768 where clusters exist: one-shot across a cluster,
    // slices of up to 8192 elements (clusters of 4) in blocks of 256, four vectors.
    const KernelSpec hb16 = row_spec("softmax", Dtype::bf16, Direction::backward);
    for (std::uint64_t cols : {16385ull, 32768ull}) {
      INFO(cols << " bfloat16 columns backward, " << lim.backend);
      const KernelConfig c = default_row_config(hb16, cols, lim);
      CHECK(c.row == (cuda ? RowStrategy::cluster : RowStrategy::registers));
      CHECK(c.cluster == (cuda ? 4 : 0));
      CHECK(c.grid == GridPolicy::one_shot);
      CHECK_NOTHROW(row_launch_dims(hb16, resolve_config(hb16, c, lim), 1000, cols, lim));
    }
    CHECK(default_row_config(hb16, 16384, lim).row == RowStrategy::registers);
    CHECK(default_row_config(hb16, 16384, lim).grid == (cuda ? GridPolicy::grid_stride : GridPolicy::one_shot));
    // 16-bit log_softmax backward beyond a warp's rows: on CUDA two vectors a thread (1024 columns:
    // 64 threads a row), rows of 16385 to 32768 in a block's registers, one-shot (1024 threads of
    // three or four vectors); elsewhere softmax's.
    const KernelSpec lhb = row_spec("log_softmax", Dtype::bf16, Direction::backward);
    for (std::uint64_t cols : {1024ull, 4096ull}) {
      INFO(cols << " bfloat16 log_softmax columns backward, " << lim.backend);
      const KernelConfig c = default_row_config(lhb, cols, lim);
      CHECK(c.row == RowStrategy::registers);
      CHECK(c.per_thread == (cuda ? 2 : 4));
      CHECK(c.grid == (cuda ? GridPolicy::grid_stride : GridPolicy::one_shot));
      CHECK(row_capacity(c) >= cols);
    }
    for (std::uint64_t cols : {16385ull, 32768ull}) {
      INFO(cols << " bfloat16 log_softmax columns backward, " << lim.backend);
      const KernelConfig c = default_row_config(lhb, cols, lim);
      CHECK(c.row == RowStrategy::registers);
      CHECK(c.block == 1024);
      CHECK(c.per_thread == static_cast<int>((cols + 8 * 1024 - 1) / (8 * 1024)));
      CHECK(c.grid == GridPolicy::one_shot);
      CHECK(row_capacity(c) >= cols);
      CHECK_NOTHROW(row_launch_dims(lhb, resolve_config(lhb, c, lim), 1000, cols, lim));
    }
    // Where the cluster's shared memory does not fit the device, those rows stay in registers.
    TargetLimits small = lim;
    small.max_shared_optin = 48 * 1024;
    CHECK(default_row_config(b, 16384, small).row == RowStrategy::registers);
    TargetLimits medium = lim;
    medium.max_shared_optin = 96 * 1024;
    CHECK(default_row_config(b, 8192, medium).row == (cuda ? RowStrategy::cluster : RowStrategy::registers));
    // Online forward (log_softmax's float32 without clusters: the others' long rows go to them):
    // blocks of 128 on CUDA for rows of up to 128 vectors a thread (65536 float32 columns), of 1024
    // beyond and on other backends.
    const KernelSpec lf = row_spec("log_softmax", Dtype::f32, Direction::forward);
    TargetLimits single = lim;
    single.max_cluster = 1;
    for (std::uint64_t cols : {16385ull, 65536ull, 65540ull, 393216ull}) {
      INFO(cols << " columns, " << lim.backend);
      CHECK(default_row_config(lf, cols, single).row == RowStrategy::online);
      CHECK(default_row_config(lf, cols, single).block == (cuda && cols <= 65536 ? 128 : 1024));
    }
    // float32 softmax and softmin forward rows beyond registers where clusters exist: the pipelined
    // cluster kernel keeping its terms, in clusters of 2 (blocks of 128, four vectors) up to 24576
    // columns, of 4 (128, four) up to 49152, of 8 (512, four) up to 196608 and of 16 (256, eight)
    // beyond, where two stages and the terms' bytes fit in 227 KiB of shared memory beside the
    // exchange's buffers (up to 402240 columns); log_softmax (no terms kept) the same kernel beyond
    // registers up to 65536 columns, in slices of up to 8192 (clusters of 2, 4 or 8), blocks of 128,
    // four vectors, online beyond; a device without clusters large enough or without the shared memory:
    // online.
    for (const char* act : {"softmax", "softmin", "log_softmax"})
      for (std::uint64_t cols :
           {8193ull, 16384ull, 16385ull, 24576ull, 24577ull, 32768ull, 49152ull, 49153ull, 65536ull, 65537ull,
            196608ull, 196609ull, 393217ull, 402240ull, 402241ull, 1ull << 20}) {
        if (!cuda && cols <= 16384) continue;  // registers there (above)
        const KernelSpec a = row_spec(act, Dtype::f32, Direction::forward);
        const KernelConfig p = default_row_config(a, cols, lim);
        INFO(act << ", " << cols << " columns, " << lim.backend << ": " << to_string(p));
        const bool kept = std::string(act) != "log_softmax";
        TargetLimits pairs = lim;
        pairs.max_cluster = 2;
        TargetLimits small = lim;  // below a stage of 16385 / 4 floats (softmax: 16385 / 2 and their terms' bytes)
        small.max_shared_optin = 16 * 1024;
        const std::string tier_text = std::string(act) + "(accuracy=torch)";
        const KernelSpec t = row_spec(tier_text.c_str(), Dtype::f32, Direction::forward);
        const KernelConfig tp = default_row_config(t, cols, lim);
        if (cuda && !kept && cols > 8192 && cols <= 65536) {
          CHECK(to_string(tp) == to_string(p));  // at torch's accuracy too
          CHECK(p.row == RowStrategy::cluster);
          CHECK(p.cluster == (cols <= 16384 ? 2 : cols <= 32768 ? 4 : 8));
          CHECK(p.block == 128);
          CHECK(p.per_thread == 4);
          CHECK(p.grid == GridPolicy::grid_stride);
          CHECK_FALSE(row_keeps_stage_terms(a, p));
          CHECK_NOTHROW(row_launch_dims(a, resolve_config(a, p, lim), 64, cols, lim));
          if (cols <= 32768) CHECK(default_row_config(a, cols, pairs).cluster == 2);  // two stages of 16384 fit
          if (cols > 16384) CHECK(default_row_config(a, cols, small).row == RowStrategy::online);
          continue;
        }
        if (cuda && kept && cols > 8192 && cols <= 402240) {
          const int cluster = cols <= 24576 ? 2 : cols <= 49152 ? 4 : cols <= 196608 ? 8 : 16;
          CHECK(p.row == RowStrategy::cluster);
          CHECK(p.cluster == cluster);
          CHECK(p.block == (cluster <= 4 ? 128 : cluster == 8 ? 512 : 256));
          CHECK(p.per_thread == (cluster == 16 ? 8 : 4));
          CHECK(p.grid == GridPolicy::grid_stride);
          CHECK(row_keeps_stage_terms(a, p));
          CHECK_NOTHROW(row_launch_dims(a, resolve_config(a, p, lim), 64, cols, lim));
        } else {
          CHECK(p.row == RowStrategy::online);
        }
        CHECK(default_row_config(a, cols, pairs).row ==
              (cuda && kept && cols > 8192 && cols <= 24576 ? RowStrategy::cluster : RowStrategy::online));
        if (cols > 16384) CHECK(default_row_config(a, cols, small).row == RowStrategy::online);
        // At torch's accuracy (no terms kept): the same layout wherever the exact kernel's fits, and
        // beyond it (log_softmax's past 65536 columns, softmax's past the terms' bytes) the
        // pipelined kernel's two stages as softmax's exact kernel takes them (online only at 2^20).
        CHECK(tp.row == (p.row == RowStrategy::cluster || (cuda && cols > 8192 && cols < (1ull << 20))
                             ? RowStrategy::cluster
                             : RowStrategy::online));
        if (p.row == RowStrategy::cluster) {
          CHECK(tp.cluster == p.cluster);
          CHECK(tp.block == p.block);
          CHECK(tp.per_thread == p.per_thread);
        }
        if (tp.row == RowStrategy::cluster) {
          CHECK_FALSE(row_keeps_stage_terms(t, tp));
          CHECK_NOTHROW(row_launch_dims(t, resolve_config(t, tp, lim), 64, cols, lim));
        }
      }
    // A 16-bit forward beyond registers where clusters exist: the pipelined cluster kernel, slices
    // of about 16384 elements in clusters of 2 to 16, where two stages of a slice fit in shared
    // memory (2^20 bfloat16 columns: 128 KiB slices, online); elsewhere registers or online.
    for (std::uint64_t cols : {32768ull, 131072ull, 393216ull, 1ull << 20}) {
      INFO(cols << " bfloat16 columns, " << lim.backend);
      const KernelConfig p = default_row_config(h, cols, lim);
      const bool pipelined = cuda && cols < (1ull << 20);
      CHECK((p.row == RowStrategy::cluster) == pipelined);
      if (pipelined) {
        CHECK(p.grid == GridPolicy::grid_stride);
        CHECK(p.cluster == std::min<std::uint64_t>(16, cols / 16384));
        CHECK(p.block == (cols / p.cluster > 16384 ? 256 : 128));
      }
      CHECK_NOTHROW(row_launch_dims(h, resolve_config(h, p, lim), 64, cols, lim));
    }
    // The 16-bit softmax backward beyond the one-shot cluster kernel's 32768 columns: the pipelined
    // cluster kernel, slices of 8192 in clusters of up to 16, blocks of 256, two vectors a thread,
    // where two stages of g's and y's slices fit (2^20 bfloat16 columns: online).
    const KernelSpec hbs = row_spec("softmax", Dtype::bf16, Direction::backward);
    for (std::uint64_t cols : {32769ull, 131072ull, 393216ull, 1ull << 20}) {
      const KernelConfig hb = default_row_config(hbs, cols, lim);
      INFO(cols << " bfloat16 columns backward, " << lim.backend << ": " << to_string(hb));
      if (cuda && cols < (1ull << 20)) {
        CHECK(hb.row == RowStrategy::cluster);
        CHECK(hb.cluster == std::min<std::uint64_t>(16, (cols + 8191) / 8192 <= 8 ? 8 : 16));
        CHECK(hb.block == ((cols + hb.cluster - 1) / hb.cluster > 8192 ? 512 : 256));
        CHECK(hb.per_thread == 2);
        CHECK(hb.grid == GridPolicy::grid_stride);
      } else {
        CHECK(hb.row == RowStrategy::online);
      }
      CHECK_NOTHROW(row_launch_dims(hbs, resolve_config(hbs, hb, lim), 64, cols, lim));
    }
    for (std::uint64_t cols : {16385ull, 32768ull, 65536ull, 65537ull, 393216ull, 1ull << 26}) {
      const KernelConfig big = default_row_config(f, cols, lim);
      CHECK(big.row == (cuda && cols <= 393216 ? RowStrategy::cluster : RowStrategy::online));
      CHECK_NOTHROW(row_launch_dims(f, resolve_config(f, big, lim), 64, cols, lim));
      // The backward beyond registers: the pipelined cluster kernel in clusters of as many slices
      // of 8192 as the row holds (up to 16), blocks of 256, four vectors a thread, where a stage of
      // g's and y's slices fits; else online, two vectors a thread, across a cluster of as many where the device has
      // them (blocks of 512), else in a block of 1024.
      const KernelConfig bb = default_row_config(b, cols, lim);
      INFO(cols << " columns, " << lim.backend << ": " << to_string(bb));
      const std::uint64_t want = lim.max_cluster < 2 ? 0
                                 : cols <= 8192      ? 0
                                                     : std::min<std::uint64_t>(16, (cols + 8191) / 8192);
      std::uint64_t want_pow2 = 1;
      while (want_pow2 < want) want_pow2 *= 2;
      // log_softmax's (its first pass reads g alone) up to 8 blocks, longer rows 4
      const KernelSpec lbs = row_spec("log_softmax", Dtype::f32, Direction::backward);
      const KernelConfig lb = default_row_config(lbs, cols, lim);
      if (want > 8) {
        CHECK(lb.row == RowStrategy::online);
        CHECK(lb.cluster == 4);
        CHECK(lb.block == 512);
      } else if (cuda &&
                 want >= 2) {  // float32 log_softmax in clusters of up to 8: pipelined, blocks of 512, two vectors
        CHECK(lb.row == RowStrategy::cluster);
        CHECK(static_cast<std::uint64_t>(lb.cluster) == want_pow2);
        CHECK(lb.per_thread == 2);
        CHECK(lb.block == 512);
      }
      CHECK_NOTHROW(row_launch_dims(lbs, resolve_config(lbs, lb, lim), 64, cols, lim));
      if (cuda && cols < 393216) {  // a slice of 24576 of each: one stage, and it does not fit
        CHECK(bb.row == RowStrategy::cluster);
        CHECK(static_cast<std::uint64_t>(bb.cluster) == want_pow2);
        CHECK(bb.grid == GridPolicy::grid_stride);
        CHECK(bb.per_thread == 4);
        CHECK(bb.block == 256);
      } else {
        CHECK(bb.row == RowStrategy::online);
        CHECK(bb.per_thread == 2);
        CHECK(static_cast<std::uint64_t>(bb.cluster) >= want);
        CHECK(static_cast<std::uint64_t>(bb.cluster) < 2 * std::max<std::uint64_t>(want, 1));
        CHECK(bb.block == (bb.cluster ? 512 : 1024));
      }
      CHECK_NOTHROW(row_launch_dims(b, resolve_config(b, bb, lim), 64, cols, lim));
    }
  }
}

TEST_CASE("strided rows: the default takes a thread a row (4 lanes beyond 128 columns); other knobs refused") {
  for (Dtype d : {Dtype::f32, Dtype::bf16})
    for (Direction dir : {Direction::forward, Direction::backward}) {
      const KernelSpec spec = row_spec("softmax", d, dir);
      for (std::uint64_t cols : {1ull, 5ull, 13ull, 16ull, 17ull, 21ull, 100ull, 256ull, 257ull, 1000ull}) {
        const KernelConfig c = strided_row_config(spec, cols);
        INFO(cols << " columns: " << to_string(c));
        CHECK(strided_config_problem(c).empty());
        CHECK(c.row == (cols <= 16 ? RowStrategy::registers : RowStrategy::online));
        if (c.row == RowStrategy::registers) {
          CHECK(row_capacity(c) >= cols);
          CHECK(c.per_thread <= 16);
        }
        const KernelConfig r = resolve_config(spec, c, TargetLimits{});
        // a warp's lanes are neighbouring rows (a thread a row), or groups of 4 of them for long rows
        CHECK(row_group_threads(r) == (cols > 128 ? 4 : 1));
        CHECK_NOTHROW(row_launch_dims(spec, r, 3 * 7, cols, TargetLimits{}));
        CHECK(render_kernel(spec, r, rt::dialect_of("opencl"), Layout::strided).source.find("#define KP_STRIDED 1") !=
              std::string::npos);
      }
    }
  const KernelSpec f = row_spec("softmax", Dtype::f32, Direction::forward);
  const KernelConfig ok = strided_row_config(f, 100);
  auto refused = [&](KernelConfig c, const char* knob) {
    CHECK_THROWS_WITH_AS(render_kernel(f, c, rt::dialect_of("cuda"), Layout::strided), doctest::Contains(knob), Error);
  };
  KernelConfig c = ok;
  c.vec = 4;
  refused(c, "--vec 1");
  c = ok;
  c.row = RowStrategy::shared;
  refused(c, "--row registers or online");
  c = ok;
  c.cluster = 4;
  refused(c, "no cluster");
  c = ok;
  c.row = RowStrategy::registers;
  c.per_thread = 16;
  c.grid = GridPolicy::grid_stride;
  refused(c, "one-shot");
}
