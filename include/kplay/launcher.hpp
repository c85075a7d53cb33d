// kplay/launcher.hpp — a prepared launch path for callers that launch one activation many times.
//
// kplay::forward()/backward() resolve the activation text, find the device's engine and check
// every pointer on each call. A Launcher does that work once, for one (activation, dtype,
// direction, saved kind) on one device: its launch() only picks the kernel of the size bucket
// (a small per-launcher cache), checks graph capture when that kernel is not compiled yet, and
// launches. Pointer checks (device memory, same device, primary context, overlap) run unless the
// caller vouches for them (PointerChecks::vouched), e.g. a framework that knows its tensors are
// device memory of this launcher's device; null pointers and n < 0 are always refused.
//
// Buffers and streams are as in kplay.hpp: CUDA device pointers and a CUstream (nullptr = legacy
// default stream), or cl_mem objects and the cl_command_queue the launcher was made for.
// Thread-safe; copies share one prepared state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "kplay/kplay.hpp"

namespace kplay {

enum class PointerChecks { full, vouched };

class Launcher {
 public:
  // For CUDA device `device` (an ordinal). Throws like forward() for an unknown activation, a
  // backward without one, or Saved::output where the derivative does not follow from it.
  // `out`: FP8 output (a gated forward only; the device must be sm_89 or newer).
  static Launcher cuda(const std::string& activation, Dtype dtype, Direction direction, Saved saved, int device,
                       OutDtype out = OutDtype::same);
  // For the context and device of an OpenCL command queue; launches go on that queue.
  static Launcher opencl(const std::string& activation, Dtype dtype, Direction direction, Saved saved, void* queue);

  // Flat buffers of n elements. Forward: in = x, out = y (in1 unused, may be null). Backward:
  // in = grad_out, in1 = saved, out = grad_in. `stream`: CUstream, or nullptr; OpenCL ignores it
  // and uses the launcher's queue.
  void launch(const void* in, const void* in1, void* out, std::int64_t n, void* stream = nullptr,
              PointerChecks checks = PointerChecks::full) const;

  // A gated activation's launcher (made for "gated(ACT)"; FP8 output: cuda() with `out`): the
  // operands of kplay::gated_forward and gated_backward (kplay.hpp), a launch each. Forward reads
  // a and b into out (scale: FP8's, ignored otherwise); backward reads grad_out, a and b into
  // grad_a and grad_b. Throws Error(invalid_argument) on a launcher of the other kind.
  void launch_gated_forward(GatedIn a, GatedIn b, GatedOut out, std::int64_t rows, std::int64_t d,
                            void* stream = nullptr, PointerChecks checks = PointerChecks::full,
                            const Fp8Output& scale = {}) const;
  void launch_gated_backward(GatedIn grad_out, GatedIn a, GatedIn b, GatedOut grad_a, GatedOut grad_b,
                             std::int64_t rows, std::int64_t d, void* stream = nullptr,
                             PointerChecks checks = PointerChecks::full) const;

  // A row activation's launcher (softmax, log_softmax, softmin; backward made with Saved::output):
  // the operands of kplay::softmax_forward and softmax_backward (kplay.hpp), a launch each.
  // Forward: in = x, out = y (in1 unused, may be null); backward: in = grad_out, in1 = y (the saved
  // output), out = grad_in. Throws Error(invalid_argument) on a launcher of another kind.
  void launch_rows(const void* in, std::int64_t ld_in, const void* in1, std::int64_t ld_in1, void* out,
                   std::int64_t ld_out, std::int64_t rows, std::int64_t cols, void* stream = nullptr,
                   PointerChecks checks = PointerChecks::full) const;
  // The same over a dimension that is not the last: each operand [outer, cols, inner] with its
  // pitch between outer blocks (kplay::softmax_forward_strided, kplay.hpp).
  void launch_strided_rows(const void* in, std::int64_t ld_in, const void* in1, std::int64_t ld_in1, void* out,
                           std::int64_t ld_out, std::int64_t outer, std::int64_t cols, std::int64_t inner,
                           void* stream = nullptr, PointerChecks checks = PointerChecks::full) const;

  const KernelSpec& spec() const;
  Backend backend() const;
  int device() const;  // CUDA ordinal; -1 for OpenCL

  struct State;

 private:
  explicit Launcher(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace kplay
