// The default-config model; see default_model.hpp and docs/design.md.
//
// Little's law: to stream at bandwidth B with latency L, B x L bytes must be in flight, spread
// over the SMs. A one-shot thread issues all its loads at once, waits about L, computes, stores
// and exits, so its loads are in flight for the fraction L / (L + overhead + compute) of its life.
// The constants below are calibrated on four measured points (f32 SELU on the H100 at one vector
// per thread: 100.5 %, on the H200: 87 %; f32 ReLU on the H200 at one vector: 100.8 %; 16-bit
// SELU on the H100 at one vector: 83-92 %) and reproduce them within a few percent; the unit
// tests pin them.
#include "default_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "codegen/config_validation.hpp"
#include "spec/activations.hpp"

namespace kplay {
namespace {

constexpr double kLatencyNs = 700;       // loaded DRAM latency of a streaming kernel (HBM, GDDR alike)
constexpr double kOverheadNs = 100;      // index math, issue, store and block turnover per thread
constexpr double kNsPerCostUnit = 13.4;  // per element of cost 1, per thread at 2048 resident threads
constexpr double kMargin = 1.5;          // in flight needed over Little's-law minimum (bursts, tails)
constexpr double kWorthDoubling = 1.15;  // doubling per-thread must add >= 15 % in flight to pay
constexpr int kAssumedBlocksPerSm = 32;  // sm_80..sm_90 when the device does not say
// At most 4 vectors (64 bytes) per thread and input: on the H200, 16-bit hardswish, hardsigmoid
// and softsign at 8 vectors reached 96.4-97.2 % of copy where 4 vectors reach 99-100 % (the
// tuner itself searches up to 128 bytes).
constexpr int kMaxBytesPerThread = 64;

// Memory bandwidth per SM that separates the H100 class (3.35 TB/s over 132 SMs: 25 GB/s) from
// the H200 class (4.8 TB/s: 36 GB/s); the 16-bit rules below were measured on one side or the other.
constexpr double kSlowMemoryGbpsPerSm = 30;

bool slow_memory_per_sm(const DefaultModelInputs& d) { return d.bandwidth_gbps / d.sms <= kSlowMemoryGbpsPerSm; }

// Input streams a thread loads: a gated activation reads a and b (and g for backward).
int inputs_of(const KernelSpec& spec) {
  const int own = spec.direction == Direction::backward ? 2 : 1;
  return resolve_activation(spec.activation).gated ? own + 1 : own;
}

int resident_threads(const DefaultModelInputs& d, int block) {
  const int blocks = d.max_blocks_per_sm > 0 ? d.max_blocks_per_sm : kAssumedBlocksPerSm;
  return std::min(d.max_threads_per_sm > 0 ? d.max_threads_per_sm : 2048, blocks * block);
}

// Smallest power-of-two block that still lets an SM hold its full thread count, at least 64.
// Smaller blocks retire more evenly, and when registers limit residency they waste fewer
// threads. At 4096x393216 (`kplay run --no-db --act A --dtype D --shape 4096x393216 --block B`,
// 14 cases on an H100, 10 on an H200; docs/design.md), block 64 was the best of blocks 64/128/256
// or within 0.3 % of it in 23 of 24 cases (not: float32 selu on the H200, 3 % behind block 256);
// block 128 was 1.5-2 % behind on the H100.
int model_block(const DefaultModelInputs& d) {
  const int blocks = d.max_blocks_per_sm > 0 ? d.max_blocks_per_sm : kAssumedBlocksPerSm;
  const int threads = d.max_threads_per_sm > 0 ? d.max_threads_per_sm : 2048;
  int block = 64;
  while (block < 1024 && block * blocks < threads) block *= 2;
  return std::min(block, std::max(32, d.max_block));
}

bool builtin_named(const KernelSpec& spec, std::initializer_list<const char*> names) {
  const ResolvedActivation a = resolve_activation(spec.activation);
  if (a.act->user) return false;
  for (const char* n : names)
    if (a.canonical == n) return true;
  return false;
}

// 16-bit forwards that take the H100's widest launch, one vector in blocks of 1024 with the flat
// kernel: cost 1-2, and sigmoid and silu. Against torch in one process (`tools/perf_table.py
// --dtypes f16,bf16 --directions forward --pin '1024|1' --pin '512|1||||general' --rounds 2`):
// cost 1-2 0.0-0.3 points above blocks of 512 with the general kernel, winning 15 of 15 rounds
// (hardswish +1.0-1.1 points over torch); sigmoid and silu +0.1-0.4 over blocks of 256 with the
// general kernel (float16 sigmoid 100.7 % of copy against 100.4). tanh lost 0.0-0.3 there,
// gelu(tanh) 0.1-0.6, the cost 4-6 math (elu, selu, softplus, logsigmoid, tanhshrink, gelu)
// 0-3.8: an exception by name, since their math (MUFU.EX2 and MUFU.RCP, like tanh's) does not
// explain it. At 1024 the general kernel lost 2-7 points.
bool widest_block_forward(const KernelSpec& spec) {
  return activation_cost(spec) <= 2 || builtin_named(spec, {"sigmoid", "silu"});
}

// float16 (not bfloat16) gelu(tanh) forward on the H100 class: blocks of 512 with the general
// kernel. On two H100s, against torch in one process (`tools/perf_table.py --acts
// 'gelu(approximate=tanh)' --dtypes f16,bf16 --directions forward --pin '512|1||||general'
// --pin '256|1||||general'`): +0.2-0.5 points over 256, where bfloat16 lost 0.7-1.0.
bool float16_wide_block_forward(const KernelSpec& spec) {
  return spec.dtype == Dtype::f16 && builtin_named(spec, {"gelu(approximate=tanh)"});
}

}  // namespace

double activation_cost(const KernelSpec& spec) {
  // The registry states each activation's arithmetic relative to relu, per dtype where the 16-bit
  // math differs (activations.cpp).
  return resolve_activation(spec.activation).cost(spec.dtype);
}

DefaultModelInputs model_inputs(const rt::DeviceInfo& d) {
  DefaultModelInputs m;
  m.bandwidth_gbps = d.memory_bandwidth_gbps;
  m.sms = d.compute_units;
  m.max_threads_per_sm = d.max_threads_per_unit;
  m.max_blocks_per_sm = d.max_blocks_per_unit;
  m.max_block = d.max_block > 0 ? d.max_block : 1024;
  return m;
}

ModelEstimate estimate(const KernelSpec& spec, const KernelConfig& c, const DefaultModelInputs& d) {
  ModelEstimate e;
  if (d.bandwidth_gbps <= 0 || d.sms <= 0) return e;
  const double esize = static_cast<double>(dtype_size(spec.dtype));
  const int vec = c.vec > 0 ? c.vec : static_cast<int>(kMaxVectorBytes / esize);
  const int inputs = inputs_of(spec);
  // Loads are inputs/(inputs+outputs) of the traffic (a gated backward writes two); calibrated on
  // forward (1/2), so scale by that.
  const int outputs = resolve_activation(spec.activation).gated && spec.direction == Direction::backward ? 2 : 1;
  const double read_share = static_cast<double>(inputs) / (inputs + outputs) / 0.5;
  const double needed = d.bandwidth_gbps /* bytes per ns */ * kLatencyNs / d.sms * read_share;
  // Cost per element: 16-bit types convert to float32 and round back; float64 math runs at a
  // fraction of float32's rate.
  double cost = activation_cost(spec);
  if (esize == 2) cost += 2;
  // float64 math, and a gated float32 kernel's, which runs in double (gated_wide_math).
  if (esize == 8 || (resolve_activation(spec.activation).gated && gated_wide_math(spec.dtype, c.fast_math))) cost *= 2;
  const int threads = resident_threads(d, c.block);
  const double compute_ns = c.per_thread * vec * cost * kNsPerCostUnit * threads / 2048.0;
  const double duty = kLatencyNs / (kLatencyNs + kOverheadNs + compute_ns);
  e.in_flight_bytes_per_sm = threads * vec * esize * c.per_thread * inputs * duty;
  e.required_bytes_per_sm = needed * kMargin;
  e.predicted_fraction = std::min(1.0, e.in_flight_bytes_per_sm / needed);
  return e;
}

bool model_default_config(const KernelSpec& spec, const DefaultModelInputs& d, std::uint64_t n, KernelConfig& out) {
  if (d.bandwidth_gbps <= 0 || d.sms <= 0) return false;
  KernelConfig c = static_default_config(spec);
  c.vec = static_cast<int>(kMaxVectorBytes / dtype_size(spec.dtype));
  c.block = model_block(d);
  const int max_pt = std::max(1, kMaxBytesPerThread / kMaxVectorBytes);
  c.per_thread = 1;
  for (;;) {
    const ModelEstimate now = estimate(spec, c, d);
    if (now.in_flight_bytes_per_sm >= now.required_bytes_per_sm || c.per_thread >= max_pt) break;
    KernelConfig more = c;
    more.per_thread *= 2;
    // Compute-bound: more loads per thread no longer add bytes in flight worth the registers.
    if (estimate(spec, more, d).in_flight_bytes_per_sm < kWorthDoubling * now.in_flight_bytes_per_sm) break;
    c = more;
  }
  // float-float float32 math is latency-heavy: more independent elements per thread hide it. SELU
  // on the H100 with 4 vectors per thread: 99.5 % of copy; with the model's 2: 90.6 %. float32 gelu
  // forward too, its math being float alone: on the H200 99.9 % of copy at 4 against 97.0 at 8
  // (`kplay run --no-db --act gelu --shape 4096x393216 --block 64 --per-thread 4`, then 8).
  if (dtype_size(spec.dtype) == 4 && activation_cost(spec) >= 4 && c.per_thread < 4) c.per_thread = 4;
  // The cheapest 16-bit math (cost 1: relu, leaky_relu, hardtanh, threshold...) takes one vector
  // per thread in blocks of 128: on the H200 (36 GB/s per SM) 101.2-101.4 % of copy, where the
  // Little's-law answer (4 vectors, block 64) gave 100.0 % and lost to torch by up to a point; on
  // the H100 (25 GB/s per SM) 100.1-100.3 % against 99.9-100.1 at its answer (2 vectors); block 64
  // at one vector gave 79.7 % on the H200. Cost 2 (hardswish) was mixed that way and keeps the
  // model's answer (docs/design.md); 16-bit hardsigmoid counts as cost 1
  // (activations.cpp). On the H100 the 16-bit forward rule below takes over (block 1024).
  if (dtype_size(spec.dtype) == 2 && activation_cost(spec) <= 1) {
    c.per_thread = 1;
    c.block = std::min(std::max(c.block, 128), std::max(32, d.max_block));
  }
  // Cost 2 forward (hardswish, softsign) takes at most 2 vectors: on the H200 100.3-100.5 % of copy
  // at 2 vectors against 100.1-100.3 at the model's 4 (`kplay run --no-db --act hardswish --dtype
  // f16 --shape 4096x393216 --block 64 --per-thread 2`, then 4); the H100's answer is 2 already.
  if (dtype_size(spec.dtype) == 2 && activation_cost(spec) <= 2 && spec.direction == Direction::forward)
    c.per_thread = std::min(c.per_thread, 2);
  // 16-bit forward where memory is slower per SM (the H100, 25 GB/s): one vector per thread. With
  // the 16-bit math on the hardware functions, the H100's exhaustive tuner (`kplay autotune --act
  // all --dtype f16,bf16 --direction forward --shape 4096x393216 --strategy exhaustive`) picks
  // block 256 with one vector for 31 of the 38 16-bit forwards, 0.2-1.0 points above the answer
  // above (block 64 with 2-4 vectors) in the same run. The H200 (36 GB/s per SM) picks block 128
  // with one or two vectors, within noise of the answer above, which stays; it loses 6-8 points at
  // block 512. Against torch (`tools/perf_table.py --pin CONFIG`, H100):
  // - cost 6 (gelu's erfc) takes two vectors; gelu fell to 92-97 % of copy at one. gelu(tanh) and
  //   mish count as cost 4 in 16-bit (activations.cpp) and gained 0.4-0.7 points at one.
  // - cost 1-2, sigmoid and silu take blocks of 1024 with the flat kernel (widest_block_forward);
  //   float16 gelu(tanh) blocks of 512 (float16_wide_block_forward); the others blocks of 256.
  if (dtype_size(spec.dtype) == 2 && spec.direction == Direction::forward && slow_memory_per_sm(d)) {
    if (widest_block_forward(spec)) {
      c.block = std::min(1024, std::max(32, d.max_block));
      c.per_thread = 1;
      c.flat = true;
    } else {
      const int block = float16_wide_block_forward(spec) ? 512 : 256;
      c.block = std::max(c.block, std::min(block, std::max(32, d.max_block)));
      c.per_thread = activation_cost(spec) >= 6 ? 2 : 1;
      // The general kernel: at blocks of 256-512 on the H100, relu, relu6, hardtanh, softshrink and
      // tanh ran 0.2-0.7 points faster with it than with the flat kernel, in three runs; silu,
      // sigmoid and gelu moved +-0.1 (`tools/perf_table.py --dtypes f16,bf16 --directions forward
      // --pin '256|1' --pin '256|1||||general'`). Why is not known: its start is longer (row loop,
      // head, alignment checks).
      c.flat = false;
    }
  }
  // 16-bit backward where memory is slower per SM (the H100 class): one vector per thread in blocks
  // of 1024, the gradient loaded after the derivative's math where the float32 cost is 4 or more.
  // Against torch in one process (`tools/perf_table.py --dtypes f16,bf16 --directions backward
  // --pin '1024|1||||late' --pin '1024|1' --rounds 2`): every 16-bit backward but gelu's was
  // 0.1-1.5 points above torch there and above blocks of 256 or 128 up front and 512 late, in 15
  // of 15 rounds almost everywhere: selu, silu and elu float16 +1.2-1.3 with the late gradient
  // against +0.5 without; softplus and logsigmoid, below torch at the smaller blocks, +0.1-0.3;
  // cost 1-2 +0.1-0.5 either way. gelu's erfc (16-bit cost 6) lost 0.6-1.3 there and keeps
  // blocks of 512 with the late gradient, as torch's own gelu backward is compiled (float16
  // 102.7 % of copy against torch's 102.6).
  // Where memory is faster per SM (the H200, 36 GB/s): float32 cost 2-5 takes one vector in
  // blocks of 256, 0.1-0.7 points above block 64 with four; cost 4-5 in blocks of 128 with a late
  // gradient (`tools/perf_table.py --dtypes f16,bf16 --directions backward --pin '128|1||||late'
  // --pin '256|1'`, one H200): float16 selu, elu, celu and silu backward 0.4-0.9 % faster than
  // torch there, 0.2-0.5 % slower at 256 with both loads up front; bfloat16 selu and silu 0.8-1.0
  // points higher, sigmoid, tanh, softplus and logsigmoid level. The float32 cost, because a
  // backward's 16-bit math is not the forward's hardware-function form: gelu(tanh) (16-bit cost 4,
  // float32 6) lost 2.4-10 points at one vector on the H200, gelu's erfc 3-10.
  if (dtype_size(spec.dtype) == 2 && spec.direction == Direction::backward) {
    KernelSpec as_f32 = spec;
    as_f32.dtype = Dtype::f32;
    const double backward_cost = activation_cost(as_f32);
    if (slow_memory_per_sm(d)) {
      c.block = std::min(activation_cost(spec) >= 6 ? 512 : 1024, std::max(32, d.max_block));
      c.per_thread = 1;
      c.late_gradient = backward_cost >= 4;
    } else if (backward_cost >= 4 && backward_cost <= 5) {
      c.block = std::min(128, std::max(32, d.max_block));
      c.per_thread = 1;
      c.late_gradient = true;
    } else if (backward_cost >= 2 && backward_cost <= 5) {
      c.block = std::min(256, std::max(32, d.max_block));
      c.per_thread = 1;
    }
  }
  // 16-bit forward of cost 2 (hardswish, softsign) where memory is faster per SM (the H200, 36
  // GB/s) takes two 8-byte vectors in blocks of 128 (flat kernel, `kplay run --no-db --act
  // hardswish --dtype f16 --shape 4096x393216 --vec 4 --block 128 --per-thread 2`): 100.5-100.7 %
  // of copy against 99.5-99.7 at block 64 with two 16-byte vectors (`--vec 8 --block 64`), where
  // hardswish trailed torch in every process; 16-byte vectors at block 256 reached 100.1-100.2.
  if (dtype_size(spec.dtype) == 2 && !slow_memory_per_sm(d)) {
    const double cost = activation_cost(spec);
    if (spec.direction == Direction::forward && cost == 2) {
      c.block = std::min(128, std::max(32, d.max_block));
      c.per_thread = 2;
      c.vec = static_cast<int>(8 / dtype_size(spec.dtype));
    }
  }
  // float64 library math (libdevice erfc, log1p) likewise, on the H100 at 4096x393216: gelu
  // forward 76.8 / 81.5 / 83.9 % at 1 / 2 / 4 vectors, backward 84.2 / 91.7 / 87.0 %; logsigmoid
  // and softplus forward +6 points from 1 to 4; mish and relu backward within 0.7 at 1 to 4.
  // With gelu's own double routine (float64_math.h) in place of erfc: 100.7 / 102.1 % at 4 / 2.
  if (dtype_size(spec.dtype) == 8 && activation_cost(spec) >= 4) {
    const int want = spec.direction == Direction::forward ? 4 : 2;
    if (c.per_thread < want) c.per_thread = want;
  }
  // Small problems: never so many elements per thread that one wave of the device is not filled.
  if (n > 0) {
    const std::uint64_t wave = static_cast<std::uint64_t>(d.sms) * resident_threads(d, c.block);
    while (c.per_thread > 1 && n / (static_cast<std::uint64_t>(c.vec) * c.per_thread) < wave) c.per_thread /= 2;
  }
  out = c;
  return true;
}

KernelConfig static_default_config(const KernelSpec& spec) { return default_config(spec); }

KernelConfig device_default_config(const KernelSpec& spec, const rt::DeviceInfo& device, std::uint64_t n,
                                   std::string* why) {
  KernelConfig c;
  if (model_default_config(spec, model_inputs(device), n, c)) {
    if (why) {
      char text[160];
      std::snprintf(text, sizeof text, "%.0f GB/s, %d SMs x %d threads, cost %.0f per element",
                    device.memory_bandwidth_gbps, device.compute_units, device.max_threads_per_unit,
                    activation_cost(spec));
      *why = std::string("built-in default from the device model (") + text + ")";
    }
    return c;
  }
  if (why) *why = "built-in default from the static table (the device reports no memory bandwidth)";
  return static_default_config(spec);
}

}  // namespace kplay
