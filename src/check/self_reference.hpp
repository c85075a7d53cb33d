// The reference of an activation that has no host reference of its own (a user snippet): the
// same snippet specialized for float64 and run on the device on the same inputs. It checks the
// rounding of the narrower kernel, not the formula, and callers say so.
#pragma once
#include <memory>
#include <vector>

#include "engine/engine.hpp"

namespace kplay {

class SelfReference {
 public:
  // Throws Error(unsupported) when the device cannot run float64 kernels.
  SelfReference(rt::Backend& backend, const KernelSpec& spec);
  // out[i] = the float64 kernel on (in0[i], in1[i]); in1 is ignored for forward. With `allowance`,
  // also the kernel on x (forward) or the saved tensor (backward) moved by
  // +-self_reference_perturbation of the original dtype: allowance[i] is the larger change of
  // out[i] (0 where that is not finite), what ErrorStats::add counts as exact (verification.hpp).
  void compute(const std::vector<double>& in0, const std::vector<double>& in1, std::vector<double>& out,
               std::vector<double>* allowance = nullptr);
  // A gated activation: out0 = act(a) b (forward, FP8 left to the caller) or grad_a, out1 = grad_b
  // (backward, from g), by the float64 gated kernel; allowances as above, with a moved.
  void compute_gated(const std::vector<double>& g, const std::vector<double>& a, const std::vector<double>& b,
                     std::vector<double>& out0, std::vector<double>& out1, std::vector<double>* allowance0 = nullptr,
                     std::vector<double>* allowance1 = nullptr);

 private:
  void run(const std::vector<double>& in0, const std::vector<double>& in1, std::vector<double>& out);
  void run_gated(const std::vector<double>& g, const std::vector<double>& a, const std::vector<double>& b,
                 std::vector<double>& out0, std::vector<double>& out1);

  rt::Backend& backend_;
  Dtype dtype_;  // of the kernel being checked
  KernelSpec spec64_;
  std::unique_ptr<Engine> engine_;
  std::shared_ptr<const PreparedKernel> kernel_;
};

}  // namespace kplay
