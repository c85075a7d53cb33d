// The untuned default config where no tuning covers a kernel (the last layer of config_lookup.hpp):
// derived from what the device reports and from the activation's counted arithmetic, never from
// one GPU's measurements. An element-wise kernel streams at the memory's rate when each SM keeps
// enough bytes of loads in flight to cover the memory latency (Little's law); the model takes the
// fewest vectors per thread that do, given how long a thread spends on its math, and never so
// many that a small problem leaves part of one wave of the device idle. Devices that report no
// memory bandwidth (OpenCL) get the static table (codegen's default_config). See docs/design.md,
// "The default without tuning".
#pragma once
#include <cstdint>
#include <string>

#include "kplay/types.hpp"
#include "runtime/backend.hpp"

namespace kplay {

struct DefaultModelInputs {   // what the model reads from rt::DeviceInfo (kept apart for tests)
  double bandwidth_gbps = 0;  // peak DRAM bandwidth; 0 = unknown: no model
  int sms = 0;                // SMs / compute units; 0 = unknown: no model
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;  // 0 = no limit but the threads
  int max_block = 1024;
  double clock_ghz = 0;    // 0 = unknown: the math is taken to cost no time
  bool fp64_math = false;  // float32 math in double (the device has fast FP64)
};
DefaultModelInputs model_inputs(const rt::DeviceInfo& device);

// What the model knows of a kernel: its element type, the streams it reads and writes per element
// (forward 1 and 1, backward 2 and 1; a gated kernel reads a and b too, and its backward writes
// grad_a and grad_b), and the instructions per element of its math (spec/activation_costs.hpp).
struct ModelKernel {
  Dtype dtype = Dtype::f32;
  int loads = 1;
  int stores = 1;
  double cost = 0;
};
ModelKernel model_kernel(const KernelSpec& spec, const DefaultModelInputs& device);

// The model's view of a launch shape on a device, for tests and `why`.
struct ModelEstimate {
  double needed_bytes = 0;     // loads in flight per SM that Little's law asks for (with the margin)
  double in_flight_bytes = 0;  // what the config keeps in flight on average
  double issue_share = 0;      // the share of the SM's issue slots its math takes at full bandwidth
};
ModelEstimate estimate(const ModelKernel& k, const KernelConfig& config, const DefaultModelInputs& device);

// Resident threads per SM at this block size.
int resident_threads(const DefaultModelInputs& device, int block);

// The model's config for the kernel at n elements (0 = large). Returns false (and leaves `out`
// alone) when the device reports too little to model (bandwidth or SM count unknown).
bool model_config(const ModelKernel& k, const DefaultModelInputs& device, std::uint64_t n, KernelConfig& out);

// The model where it applies, else the static table; `why` says which and why.
KernelConfig device_default_config(const KernelSpec& spec, const rt::DeviceInfo& device, std::uint64_t n,
                                   std::string* why = nullptr);

}  // namespace kplay
