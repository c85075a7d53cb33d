// See self_reference.hpp.
#include "self_reference.hpp"

#include <algorithm>
#include <cmath>

#include "kplay/error.hpp"
#include "verification.hpp"

namespace kplay {

SelfReference::SelfReference(rt::Backend& backend, const KernelSpec& spec)
    : backend_(backend), dtype_(spec.dtype), spec64_(spec) {
  spec64_.dtype = Dtype::f64;
  spec64_.out = OutDtype::same;
  const auto& dtypes = backend.limits().dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), Dtype::f64) == dtypes.end())
    throw Error(ErrorCode::unsupported, "checking the user activation '" + spec.activation +
                                            "' needs float64 on the device (its reference is itself in float64), "
                                            "and this " +
                                            backend.info().backend + " device has none");
  engine_ = std::make_unique<Engine>(backend_);
  kernel_ = engine_->prepare(spec64_, KernelConfig{});
}

void SelfReference::compute(const std::vector<double>& in0, const std::vector<double>& in1, std::vector<double>& out,
                            std::vector<double>* allowance) {
  run(in0, in1, out);
  if (!allowance) return;
  const bool backward = spec64_.direction == Direction::backward;
  const std::vector<double>& x = backward ? in1 : in0;  // the operand whose rounding is magnified
  const double eps = self_reference_perturbation(dtype_);
  allowance->assign(out.size(), 0.0);
  std::vector<double> moved(x.size()), moved_out;
  for (const double factor : {1.0 + eps, 1.0 - eps}) {
    for (std::size_t i = 0; i < x.size(); ++i) moved[i] = x[i] * factor;
    run(backward ? in0 : moved, backward ? moved : in1, moved_out);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double change = std::fabs(moved_out[i] - out[i]);
      if (std::isfinite(change)) (*allowance)[i] = std::max((*allowance)[i], change);
    }
  }
}

void SelfReference::run(const std::vector<double>& in0, const std::vector<double>& in1, std::vector<double>& out) {
  const std::uint64_t n = in0.size(), bytes = n * sizeof(double);
  out.resize(n);
  if (n == 0) return;
  const bool backward = spec64_.direction == Direction::backward;
  rt::DeviceBuffer a(backend_, bytes), o(backend_, bytes), b(backend_, backward ? bytes : 8);
  backend_.upload(a.ptr(), in0.data(), bytes);
  if (backward) backend_.upload(b.ptr(), in1.data(), bytes);
  engine_->launch_flat(*kernel_, o.ptr(), a.ptr(), backward ? b.ptr() : a.ptr(), n);
  backend_.synchronize();
  backend_.download(out.data(), o.ptr(), bytes);
}

void SelfReference::compute_gated(const std::vector<double>& g, const std::vector<double>& a,
                                  const std::vector<double>& b, std::vector<double>& out0, std::vector<double>& out1,
                                  std::vector<double>* allowance0, std::vector<double>* allowance1) {
  run_gated(g, a, b, out0, out1);
  const bool backward = spec64_.direction == Direction::backward;
  std::vector<double>* allowances[2] = {allowance0, backward ? allowance1 : nullptr};
  const std::vector<double>* outs[2] = {&out0, &out1};
  for (auto* al : allowances)
    if (al) al->assign(a.size(), 0.0);
  if (!allowance0 && !allowance1) return;
  const double eps = self_reference_perturbation(dtype_);
  std::vector<double> moved(a.size()), m0, m1;
  for (const double factor : {1.0 + eps, 1.0 - eps}) {
    for (std::size_t i = 0; i < a.size(); ++i) moved[i] = a[i] * factor;
    run_gated(g, moved, b, m0, m1);
    const std::vector<double>* ms[2] = {&m0, &m1};
    for (int o = 0; o < 2; ++o) {
      if (!allowances[o]) continue;
      for (std::size_t i = 0; i < a.size(); ++i) {
        const double change = std::fabs((*ms[o])[i] - (*outs[o])[i]);
        if (std::isfinite(change)) (*allowances[o])[i] = std::max((*allowances[o])[i], change);
      }
    }
  }
}

void SelfReference::run_gated(const std::vector<double>& g, const std::vector<double>& a, const std::vector<double>& b,
                              std::vector<double>& out0, std::vector<double>& out1) {
  const std::uint64_t n = a.size(), bytes = n * sizeof(double);
  const bool backward = spec64_.direction == Direction::backward;
  out0.resize(n);
  out1.resize(backward ? n : 0);
  if (n == 0) return;
  rt::DeviceBuffer da(backend_, bytes), db(backend_, bytes), o0(backend_, bytes);
  rt::DeviceBuffer dg(backend_, backward ? bytes : 8), o1(backend_, backward ? bytes : 8);
  backend_.upload(da.ptr(), a.data(), bytes);
  backend_.upload(db.ptr(), b.data(), bytes);
  if (backward) backend_.upload(dg.ptr(), g.data(), bytes);
  rt::KernelArgs k;
  k.out = o0.ptr();
  k.in0 = backward ? dg.ptr() : da.ptr();
  k.in1 = backward ? da.ptr() : db.ptr();
  if (backward) {
    k.gated_backward = true;
    k.out1 = o1.ptr();
    k.in2 = db.ptr();
  }
  k.rows = 1;
  k.cols = k.ld_out = k.ld_in0 = k.ld_in1 = k.ld_out1 = k.ld_in2 = n;
  engine_->launch(*kernel_, k);
  backend_.synchronize();
  backend_.download(out0.data(), o0.ptr(), bytes);
  if (backward) backend_.download(out1.data(), o1.ptr(), bytes);
}

}  // namespace kplay
