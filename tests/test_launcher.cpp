// kplay::Launcher: refusals at creation and at launch, and on OpenCL the same bits as
// kplay::forward()/backward() for forward, backward from the input and from the output, in place,
// and sizes in different size buckets (the launcher's kernel cache).
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "api_buffers.hpp"
#include "device_fixture.hpp"
#include "kplay/launcher.hpp"

using namespace kplay;

TEST_CASE("Launcher: bad activations and saved kinds are refused when it is made") {
  // Checked before the device is looked up, so these hold with or without a CUDA device.
  CHECK_THROWS_WITH_AS(Launcher::cuda("mystery", Dtype::f32, Direction::forward, Saved::input, 0),
                       doctest::Contains("unknown activation 'mystery'"), Error);
  CHECK_THROWS_WITH_AS(Launcher::cuda("gelu", Dtype::f32, Direction::backward, Saved::output, 0),
                       doctest::Contains("cannot recover its derivative from the saved output"), Error);
  std::string why;
  if (!test::backend_available("cuda", &why)) {
    try {
      Launcher::cuda("selu", Dtype::f32, Direction::forward, Saved::input, 0);
      FAIL("a CUDA launcher without a CUDA device");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::no_device);
    }
  }
}

namespace {
struct Launchers {
  Launcher fwd, bwd_in, bwd_out;
};

Launchers make_launchers(test::UserDevice& dev) {
  const Stream st = dev.stream();
  auto make = [&](Direction d, Saved s) {
    return st.backend == Backend::opencl ? Launcher::opencl("selu", Dtype::f32, d, s, st.handle)
                                         : Launcher::cuda("selu", Dtype::f32, d, s, 0);
  };
  return {make(Direction::forward, Saved::input), make(Direction::backward, Saved::input),
          make(Direction::backward, Saved::output)};
}

// Forward, backward from the input and from the output, and in place give the bits of
// kplay::forward()/backward(), at sizes in different size buckets and one repeated; with full
// pointer checks and vouched.
void check_same_as_api(test::UserDevice& dev, PointerChecks checks) {
  const Launchers l = make_launchers(dev);
  const Launcher &fwd = l.fwd, &bwd_in = l.bwd_in, &bwd_out = l.bwd_out;
  void* stream = dev.stream().backend == Backend::cuda ? dev.stream().handle : nullptr;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{4099}, std::int64_t{100003}, std::int64_t{4099}}) {
    const std::size_t bytes = static_cast<std::size_t>(n) * 4;
    std::vector<float> x(n), g(n);
    for (auto& v : x) v = normal(rng);
    for (auto& v : g) v = normal(rng);
    void* d_x = dev.allocate(bytes);
    void* d_g = dev.allocate(bytes);
    void* d_y = dev.allocate(bytes);
    void* d_api = dev.allocate(bytes);
    void* d_out = dev.allocate(bytes);
    dev.upload(d_x, x.data(), bytes);
    dev.upload(d_g, g.data(), bytes);
    std::vector<float> got(n), want(n);
    auto same = [&](void* a, void* b, const char* what) {
      dev.download(got.data(), a, bytes);
      dev.download(want.data(), b, bytes);
      INFO(what << " n=" << n);
      CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
    };
    fwd.launch(d_x, nullptr, d_y, n, stream, checks);
    forward("selu", Dtype::f32, d_x, d_api, n, dev.stream());
    same(d_y, d_api, "forward");
    bwd_in.launch(d_g, d_x, d_out, n, stream, checks);
    backward("selu", Dtype::f32, d_g, d_x, Saved::input, d_api, n, dev.stream());
    same(d_out, d_api, "backward from the input");
    bwd_out.launch(d_g, d_y, d_out, n, stream, checks);
    backward("selu", Dtype::f32, d_g, d_y, Saved::output, d_api, n, dev.stream());
    same(d_out, d_api, "backward from the output");
    fwd.launch(d_x, nullptr, d_x, n, stream, checks);  // in place
    same(d_x, d_y, "forward in place");
  }
}

// Refusals every launch makes, whatever the pointer checks.
void check_refusals(test::UserDevice& dev) {
  const Launchers l = make_launchers(dev);
  void* d = dev.allocate(64);
  CHECK_THROWS_WITH_AS(l.fwd.launch(d, nullptr, d, -1), doctest::Contains("n must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(l.fwd.launch(nullptr, nullptr, d, 4), doctest::Contains("in is a null pointer"), Error);
  CHECK_THROWS_WITH_AS(l.fwd.launch(d, nullptr, nullptr, 4, nullptr, PointerChecks::vouched),
                       doctest::Contains("out is a null pointer"), Error);
  CHECK_THROWS_WITH_AS(l.bwd_in.launch(d, nullptr, d, 4), doctest::Contains("saved is a null pointer"), Error);
  l.fwd.launch(d, nullptr, d, 0);  // nothing to do, no error
}
}  // namespace

TEST_SUITE("opencl") {
  TEST_CASE("Launcher on OpenCL: the same results as forward()/backward(), refusals at launch") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    const Launcher fwd = Launcher::opencl("selu", Dtype::f32, Direction::forward, Saved::input, dev->stream().handle);
    CHECK(fwd.backend() == Backend::opencl);
    CHECK(fwd.device() == -1);
    CHECK(std::string(to_string(make_launchers(*dev).bwd_out.spec())) == "selu backward f32 saved=output");
    check_same_as_api(*dev, PointerChecks::full);
    check_refusals(*dev);
  }
}

TEST_SUITE("cuda") {
  TEST_CASE("Launcher on CUDA: the same results as forward()/backward(), checked and vouched; refusals") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_same_as_api(*dev, PointerChecks::full);
    check_same_as_api(*dev, PointerChecks::vouched);
    check_refusals(*dev);
    const Launcher fwd = Launcher::cuda("selu", Dtype::f32, Direction::forward, Saved::input, 0);
    CHECK(fwd.device() == 0);
    void* d = dev->allocate(4096);
    std::vector<float> host(1024);
    CHECK_THROWS_WITH_AS(fwd.launch(host.data(), nullptr, d, 1024), doctest::Contains("not device memory"), Error);
    CHECK_THROWS_WITH_AS(fwd.launch(d, nullptr, static_cast<char*>(d) + 4, 1000),
                         doctest::Contains("partially overlaps"), Error);
  }
}
