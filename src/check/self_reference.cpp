// See self_reference.hpp.
#include "self_reference.hpp"

#include <algorithm>

#include "kplay/error.hpp"

namespace kplay {

SelfReference::SelfReference(rt::Backend& backend, const KernelSpec& spec) : backend_(backend), spec64_(spec) {
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

void SelfReference::compute(const std::vector<double>& in0, const std::vector<double>& in1, std::vector<double>& out) {
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
