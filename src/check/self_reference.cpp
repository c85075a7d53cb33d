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

}  // namespace kplay
