// The default-config model; see default_model.hpp and docs/design.md.
//
// Little's law: to stream at B bytes/ns with a memory latency L, each SM keeps B x L / SMs bytes
// in flight, of which loads are the inputs' share. A one-shot thread issues its loads, waits L,
// then computes and stores, so its loads are in flight for the share L / (L + t) of its life, t
// being its math: its instructions at the rate left to it while the SM's issue slots also serve
// the other threads' math. The constants are assumptions about GPUs in general, not fits:
#include "default_model.hpp"

#include <algorithm>
#include <cstdio>

#include "codegen/config_validation.hpp"
#include "spec/activation_costs.hpp"

namespace kplay {
namespace {

constexpr double kLatencyNs = 700;        // DRAM latency under a streaming load (HBM and GDDR alike)
constexpr double kMargin = 1.5;           // in flight over Little's minimum: bursts, tails, refresh
constexpr double kLanesPerClock = 128;    // threads an SM issues for per clock (four 32-wide schedulers)
constexpr int kBlocksPerSm = 8;           // blocks sharing an SM: a retiring block idles an eighth of it
constexpr int kMaxBytesPerThread = 128;   // per input, the tuner's register bound (search_space.cpp)
constexpr int kWidest = kMaxVectorBytes;  // every load one 16-byte vector

int pow2_floor(int v) {
  int p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

// An eighth of the SM's threads, but large enough that the SM's block limit still lets it hold
// them all.
int model_block(const DefaultModelInputs& d) {
  int block = std::max(32, pow2_floor(d.max_threads_per_sm / kBlocksPerSm));
  while (d.max_blocks_per_sm > 0 && block * d.max_blocks_per_sm < d.max_threads_per_sm && block < 1024) block *= 2;
  return std::min(block, std::max(32, pow2_floor(d.max_block)));
}

}  // namespace

DefaultModelInputs model_inputs(const rt::DeviceInfo& d) {
  DefaultModelInputs m;
  m.bandwidth_gbps = d.memory_bandwidth_gbps;
  m.sms = d.compute_units;
  m.max_threads_per_sm = d.max_threads_per_unit > 0 ? d.max_threads_per_unit : std::max(32, d.max_block);
  m.max_blocks_per_sm = d.max_blocks_per_unit;
  m.max_block = d.max_block > 0 ? d.max_block : 1024;
  m.clock_ghz = d.clock_ghz;
  m.fp64_math = d.fast_fp64;
  return m;
}

ModelKernel model_kernel(const KernelSpec& spec, const DefaultModelInputs& d) {
  ModelKernel k;
  k.dtype = spec.dtype;
  const ResolvedActivation act = resolve_activation(spec.activation);
  const bool backward = spec.direction == Direction::backward;
  k.loads = (backward ? 2 : 1) + (act.gated ? 1 : 0);
  k.stores = act.gated && backward ? 2 : 1;
  // A gated float32 kernel computes in double whatever the device (gated_wide_math), then one
  // product more per element.
  const bool fp64 = d.fp64_math || (act.gated && gated_wide_math(spec.dtype, false));
  const auto counted = counted_cost(act, spec.dtype, spec.direction, fp64);
  k.cost = (counted ? *counted : dearest_counted_cost(spec.dtype, spec.direction, fp64)) + (act.gated ? 1 : 0);
  return k;
}

int resident_threads(const DefaultModelInputs& d, int block) {
  const int by_blocks = d.max_blocks_per_sm > 0 ? d.max_blocks_per_sm * block : d.max_threads_per_sm;
  return std::max(block, std::min(d.max_threads_per_sm, by_blocks));
}

ModelEstimate estimate(const ModelKernel& k, const KernelConfig& c, const DefaultModelInputs& d) {
  ModelEstimate e;
  if (d.bandwidth_gbps <= 0 || d.sms <= 0) return e;
  const double esize = static_cast<double>(dtype_size(k.dtype));
  const double vec = c.vec > 0 ? c.vec : kWidest / esize;
  const double per_sm = d.bandwidth_gbps / d.sms;  // bytes per ns per SM
  const int s = k.loads;
  e.needed_bytes = kMargin * per_sm * kLatencyNs * s / (s + k.stores);
  const double threads = resident_threads(d, c.block);
  double thread_ns = 0;  // a thread's math
  if (d.clock_ghz > 0) {
    const double elements_per_ns = per_sm / (esize * (s + k.stores));
    e.issue_share = elements_per_ns * k.cost / (kLanesPerClock * d.clock_ghz);
    if (e.issue_share >= 1) return e;  // the math alone takes longer than the memory: in flight ~ 0
    thread_ns = c.per_thread * vec * k.cost / (d.clock_ghz * (1 - e.issue_share));
  }
  const double duty = kLatencyNs / (kLatencyNs + thread_ns);
  e.in_flight_bytes = threads * c.per_thread * vec * esize * s * duty;
  return e;
}

bool model_config(const ModelKernel& k, const DefaultModelInputs& d, std::uint64_t n, KernelConfig& out) {
  if (d.bandwidth_gbps <= 0 || d.sms <= 0) return false;
  KernelConfig c;
  c.vec = static_cast<int>(kWidest / dtype_size(k.dtype));
  c.block = model_block(d);
  const int most = std::max(1, kMaxBytesPerThread / kWidest);
  // The fewest vectors per thread that keep enough in flight; the most where none does (the math
  // outweighs the memory: more independent elements per thread at least fill the issue slots).
  for (c.per_thread = 1; c.per_thread < most; c.per_thread *= 2) {
    const ModelEstimate e = estimate(k, c, d);
    if (e.issue_share < 1 && e.in_flight_bytes >= e.needed_bytes) break;
  }
  // A small problem: never so many elements per thread that one wave of the device is not filled.
  if (n > 0) {
    const std::uint64_t wave = static_cast<std::uint64_t>(d.sms) * resident_threads(d, c.block);
    while (c.per_thread > 1 && n / (static_cast<std::uint64_t>(c.vec) * c.per_thread) < wave) c.per_thread /= 2;
  }
  out = c;
  return true;
}

KernelConfig device_default_config(const KernelSpec& spec, const rt::DeviceInfo& device, std::uint64_t n,
                                   std::string* why) {
  const DefaultModelInputs d = model_inputs(device);
  const ModelKernel k = model_kernel(spec, d);
  KernelConfig c;
  if (model_config(k, d, n, c)) {
    if (why) {
      char text[200];
      std::snprintf(text, sizeof text, "%.0f GB/s, %d SMs x %d threads, %.2f GHz, %.0f instructions per element",
                    d.bandwidth_gbps, d.sms, d.max_threads_per_sm, d.clock_ghz, k.cost);
      *why = std::string("built-in default from the device model (") + text + ")";
    }
    return c;
  }
  if (why) *why = "built-in default from the static table (the device reports no memory bandwidth)";
  return default_config(spec);
}

}  // namespace kplay
