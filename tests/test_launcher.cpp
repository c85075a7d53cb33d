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

TEST_SUITE("opencl") {
  TEST_CASE("Launcher on OpenCL: the same results as forward()/backward(), refusals at launch") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    void* queue = dev->stream().handle;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 3.0f);

    const Launcher fwd = Launcher::opencl("selu", Dtype::f32, Direction::forward, Saved::input, queue);
    const Launcher bwd_in = Launcher::opencl("selu", Dtype::f32, Direction::backward, Saved::input, queue);
    const Launcher bwd_out = Launcher::opencl("selu", Dtype::f32, Direction::backward, Saved::output, queue);
    CHECK(fwd.backend() == Backend::opencl);
    CHECK(fwd.device() == -1);
    CHECK(std::string(to_string(bwd_out.spec())) == "selu backward f32 saved=output");

    for (std::int64_t n : {std::int64_t{1}, std::int64_t{4099}, std::int64_t{100003}, std::int64_t{4099}}) {
      const std::size_t bytes = static_cast<std::size_t>(n) * 4;
      std::vector<float> x(n), g(n);
      for (auto& v : x) v = normal(rng);
      for (auto& v : g) v = normal(rng);
      void* d_x = dev->allocate(bytes);
      void* d_g = dev->allocate(bytes);
      void* d_y = dev->allocate(bytes);
      void* d_api = dev->allocate(bytes);
      void* d_out = dev->allocate(bytes);
      dev->upload(d_x, x.data(), bytes);
      dev->upload(d_g, g.data(), bytes);
      std::vector<float> got(n), want(n);
      auto same = [&](void* a, void* b, const char* what) {
        dev->download(got.data(), a, bytes);
        dev->download(want.data(), b, bytes);
        INFO(what << " n=" << n);
        CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
      };

      fwd.launch(d_x, nullptr, d_y, n);
      forward("selu", Dtype::f32, d_x, d_api, n, dev->stream());
      same(d_y, d_api, "forward");
      bwd_in.launch(d_g, d_x, d_out, n);
      backward("selu", Dtype::f32, d_g, d_x, Saved::input, d_api, n, dev->stream());
      same(d_out, d_api, "backward from the input");
      bwd_out.launch(d_g, d_y, d_out, n);
      backward("selu", Dtype::f32, d_g, d_y, Saved::output, d_api, n, dev->stream());
      same(d_out, d_api, "backward from the output");
      fwd.launch(d_x, nullptr, d_x, n);  // in place
      same(d_x, d_y, "forward in place");
    }

    void* d = dev->allocate(64);
    CHECK_THROWS_WITH_AS(fwd.launch(d, nullptr, d, -1), doctest::Contains("n must be >= 0"), Error);
    CHECK_THROWS_WITH_AS(fwd.launch(nullptr, nullptr, d, 4), doctest::Contains("in is a null pointer"), Error);
    CHECK_THROWS_WITH_AS(fwd.launch(d, nullptr, nullptr, 4, nullptr, PointerChecks::vouched),
                         doctest::Contains("out is a null pointer"), Error);
    CHECK_THROWS_WITH_AS(bwd_in.launch(d, nullptr, d, 4), doctest::Contains("saved is a null pointer"), Error);
    fwd.launch(d, nullptr, d, 0);  // nothing to do, no error
  }
}
