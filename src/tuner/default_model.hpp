// The untuned default config, derived from what the device reports instead of from one GPU's
// tuning table. An element-wise kernel is memory-bound when each SM keeps enough bytes of loads
// in flight to cover the memory latency at full bandwidth (Little's law); the model picks the
// fewest vectors per thread that do so with a margin, given how long a thread spends on its math.
// Devices that report no bandwidth (OpenCL) get the static table (static_default_config).
// See docs/design.md, "The default without tuning".
#pragma once
#include <cstdint>
#include <string>

#include "kplay/types.hpp"
#include "runtime/backend.hpp"

namespace kplay {

// Arithmetic cost per element, relative to ReLU (1), as the activation registry states it
// (activations.cpp): Activation::cost, or its narrow_cost for float16 and bfloat16 where their
// math differs (gelu(approximate=tanh), mish, hardsigmoid).
double activation_cost(const KernelSpec& spec);

struct DefaultModelInputs {   // what the model reads from rt::DeviceInfo (kept separate for tests)
  double bandwidth_gbps = 0;  // peak DRAM bandwidth; 0 = unknown
  int sms = 0;                // SMs / compute units
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;  // 0 = unknown (assumed 32 as on sm_80..sm_90)
  int max_block = 1024;
};
DefaultModelInputs model_inputs(const rt::DeviceInfo& device);

struct ModelEstimate {                // for one config, the model's view (printed by tests and docs)
  double required_bytes_per_sm = 0;   // bytes of loads in flight needed at full bandwidth (x margin)
  double in_flight_bytes_per_sm = 0;  // what the config keeps in flight on average
  double predicted_fraction = 0;      // min(1, in flight / needed without margin)
};
ModelEstimate estimate(const KernelSpec& spec, const KernelConfig& config, const DefaultModelInputs& device);

// The model's config for spec on the device at n elements (0 = large). Returns false (and leaves
// `out` alone) when the device reports too little to model (bandwidth or SM count unknown).
bool model_default_config(const KernelSpec& spec, const DefaultModelInputs& device, std::uint64_t n, KernelConfig& out);

// The static table from the H100 tuning (docs/benchmarks.md): 16-byte vectors, one-shot grid;
// float32 blocks of 128, others 256; four vectors per thread for 16-bit types, else one.
KernelConfig static_default_config(const KernelSpec& spec);

// The model where it applies, else the static table; `why` says which and why.
KernelConfig device_default_config(const KernelSpec& spec, const rt::DeviceInfo& device, std::uint64_t n,
                                   std::string* why = nullptr);

}  // namespace kplay
