// kplay/types.hpp — the vocabulary of kplay: what a kernel computes (KernelSpec) and how it is
// shaped for the hardware (KernelConfig). Both are plain values; codegen turns the pair into
// source, options and an entry name, and the hash of that is the cache key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kplay {

enum class Dtype { f32, f16, bf16, f64 };
enum class Direction { forward, backward };

// What a backward kernel receives besides the incoming gradient: the forward input x, or the
// forward output y for activations whose derivative can be recovered from it.
enum class Saved { input, output };

// one_shot: one block per chunk of work. grid_stride: a persistent grid of `waves` times the
// device's resident blocks, each block looping over chunks.
enum class GridPolicy { one_shot, grid_stride };

// streaming: loads and stores marked evict-first (ld.global.cs / st.global.cs on CUDA), which
// keeps a one-pass stream from evicting the caller's working set out of L2.
enum class CacheHint { normal, streaming };

// The output's element type where it is not the inputs' own: FP8 (float8_e4m3fn, float8_e5m2) for
// the forward of a gated activation on CUDA devices of sm_89 and newer, out = fp8(act(a) * b /
// scale) with a per-tensor scale, rounded to nearest even and saturating at the format's largest
// finite value (+-448, +-57344); NaN stays NaN.
enum class OutDtype { same, f8e4m3, f8e5m2 };

// How a row kernel (the softmax family, templates/common/rowwise.h) holds its row: none for the
// element-wise kernels; registers or shared (the whole row in one block, read once); online (two
// passes, an online max and sum then the output: any row length, every device); cluster (the row
// split across a thread-block cluster of `cluster` blocks, each slice in shared memory, reduced
// through distributed shared memory: CUDA sm_90 and newer).
enum class RowStrategy { none, registers, shared, online, cluster };

struct KernelSpec {
  std::string activation = "selu";
  Direction direction = Direction::forward;
  Dtype dtype = Dtype::f32;
  Saved saved = Saved::input;     // meaningful for backward only
  OutDtype out = OutDtype::same;  // FP8: gated forward only
};

struct KernelConfig {
  int vec = 0;         // elements per vector access; 0 = widest that fits 16 bytes
  int block = 256;     // threads per block (work-group size on OpenCL)
  int per_thread = 1;  // vectors per thread per chunk, loaded before any is used (ILP)
  bool fast_math = false;
  GridPolicy grid = GridPolicy::one_shot;
  int waves = 4;  // grid_stride only: resident blocks per SM times this
  CacheHint cache = CacheHint::normal;
  // Contiguous, vector-aligned launches take the flat kernel (false: always the general one, which
  // the H100 ran faster for 16-bit forwards; docs/design.md).
  bool flat = true;
  // Backward only: load the incoming gradient after the saved tensor's math rather than with it.
  bool late_gradient = false;
  // Row kernels only (RowStrategy); cluster: blocks per row for RowStrategy::cluster and for
  // registers or online across a cluster (RowStrategy::registers, online; 2 and up), else 0.
  RowStrategy row = RowStrategy::none;
  int cluster = 0;
  // Row kernels but cluster: threads per row, a power of two up to the block (0: the block), so
  // that short rows share a block; CUDA reduces a row of up to 32 threads by warp shuffles.
  int row_threads = 0;
  // The pipelined cluster kernel's float32 softmax and softmin forward only (row_keeps_stage_terms):
  // compute each term again for its result instead of keeping it in shared memory (a second exp an
  // element, a third less shared memory).
  bool recompute_terms = false;

  bool operator==(const KernelConfig& o) const {
    return vec == o.vec && block == o.block && per_thread == o.per_thread && fast_math == o.fast_math &&
           grid == o.grid && waves == o.waves && cache == o.cache && flat == o.flat &&
           late_gradient == o.late_gradient && row == o.row && cluster == o.cluster && row_threads == o.row_threads &&
           recompute_terms == o.recompute_terms;
  }
  bool operator!=(const KernelConfig& o) const { return !(*this == o); }
};

// Names as used on the command line and in the database ("f32", "backward", "grid-stride:4").
std::size_t dtype_size(Dtype d);
std::size_t out_size(const KernelSpec& s);  // bytes of one output element (1 for FP8)
const char* to_string(Dtype d);
const char* to_string(OutDtype d);  // "same", "f8e4m3", "f8e5m2"
const char* to_string(Direction d);
const char* to_string(Saved s);
const char* to_string(CacheHint c);
const char* to_string(RowStrategy r);  // "none", "registers", "shared", "online", "cluster"
std::string to_string(GridPolicy g, int waves);
std::string to_string(const KernelConfig& c);  // "vec=4 block=256 per-thread=1 ..."
std::string to_string(const KernelSpec& s);    // "selu forward f32"

// Parsers throw kplay::Error (ErrorCode::invalid_argument) naming the accepted values.
Dtype parse_dtype(const std::string& s);
OutDtype parse_out_dtype(const std::string& s);  // f8e4m3 (float8_e4m3fn), f8e5m2 (float8_e5m2), same
Direction parse_direction(const std::string& s);
Saved parse_saved(const std::string& s);
CacheHint parse_cache_hint(const std::string& s);
RowStrategy parse_row_strategy(const std::string& s);  // registers, shared, online, cluster
void parse_grid_policy(const std::string& s, GridPolicy& grid, int& waves);

}  // namespace kplay
