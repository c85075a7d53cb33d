// The public API: argument errors (no device needed), and every activation x direction x dtype x
// in-place x saved tensor through the API on CUDA and OpenCL, checked against the reference.
#include <doctest/doctest.h>

#include "activation_cases.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "api_buffers.hpp"
#include "check/verification.hpp"
#include "device_fixture.hpp"
#include "kplay/kplay.h"
#include "kplay/kplay.hpp"
#include "spec/activations.hpp"
#include "spec/reference.hpp"
#include "util/host_dtype.hpp"

using namespace kplay;

namespace {
std::string last() { return kplay_last_error(); }
void* fake(std::uintptr_t p) { return reinterpret_cast<void*>(p); }
}  // namespace

TEST_CASE("C API: bad arguments get a status and a message, before any device work") {
  float* none = nullptr;
  CHECK(kplay_forward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, none, fake(0x10000), 10, nullptr) ==
        KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("in is a null pointer") != std::string::npos);
  CHECK(kplay_forward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x10000), fake(0x20000), -1, nullptr) ==
        KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("n must be >= 0") != std::string::npos);
  CHECK(kplay_forward(KPLAY_BACKEND_CUDA, "mystery", KPLAY_F32, fake(0x10000), fake(0x20000), 4, nullptr) ==
        KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("unknown activation 'mystery'") != std::string::npos);
  CHECK(kplay_forward(KPLAY_BACKEND_CUDA, nullptr, KPLAY_F32, fake(0x10000), fake(0x20000), 4, nullptr) ==
        KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(kplay_forward(KPLAY_BACKEND_CUDA, "selu", static_cast<kplay_dtype>(17), fake(0x10000), fake(0x20000), 4,
                      nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(kplay_backward(KPLAY_BACKEND_CUDA, "relu", KPLAY_F32, fake(0x10000), nullptr, KPLAY_SAVED_INPUT, fake(0x30000),
                       4, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("saved is a null pointer") != std::string::npos);
  CHECK(kplay_forward(KPLAY_BACKEND_OPENCL, "selu", KPLAY_F32, fake(0x10000), fake(0x20000), 4, nullptr) != KPLAY_OK);
  CHECK(kplay_forward_2d(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x10000), 10, fake(0x90000), 10, 4, 20, nullptr) ==
        KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("pitches must be >= cols") != std::string::npos);
}

TEST_CASE("C API: partial overlap is refused, exact in place and disjoint column slices are not") {
  // Output starts one float into the input: partial overlap.
  CHECK(kplay_forward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x10000), fake(0x10004), 100, nullptr) ==
        KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("partially overlaps") != std::string::npos);
  CHECK(kplay_backward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x40000), fake(0x10000), KPLAY_SAVED_INPUT,
                       fake(0x10008), 100, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  // In place, and two column slices of one 10 x 256 float matrix side by side: no overlap error
  // (on this machine the fake pointers then fail for lack of a device or of device memory).
  kplay_forward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x10000), fake(0x10000), 100, nullptr);
  CHECK(last().find("overlap") == std::string::npos);
  kplay_forward_2d(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x10000), 256, fake(0x10000 + 64 * 4), 256, 10, 64,
                   nullptr);
  CHECK(last().find("overlap") == std::string::npos);
  // The same slices one column wider do overlap.
  CHECK(kplay_forward_2d(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x10000), 256, fake(0x10000 + 64 * 4), 256, 10, 65,
                         nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("C API: without a CUDA device a valid call says so") {
  std::string why;
  if (test::backend_available("cuda", &why)) return;  // the cuda suite covers the device path
  CHECK(kplay_forward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, fake(0x10000), fake(0x20000), 4, nullptr) ==
        KPLAY_ERROR_NO_DEVICE);
  CHECK(last().find("no CUDA device") != std::string::npos);
  CHECK(kplay_supports_saved_output("selu") == 1);
  CHECK(kplay_supports_saved_output("nope") == 0);
}

namespace {
// One API call on fresh data, every element checked; the output is poisoned first.
void check_api_call(test::UserDevice& dev, const KernelSpec& spec, std::int64_t n, bool in_place) {
  const std::size_t es = dtype_size(spec.dtype), bytes = static_cast<std::size_t>(n) * es;
  ReferenceProblem ref(spec, std::random_device{}());
  std::vector<unsigned char> a(bytes), b(bytes), out(bytes, 0xCD);
  for (std::int64_t i = 0; i < n; ++i) {
    store_element(spec.dtype, a.data(), i, ref.in0(i));
    store_element(spec.dtype, b.data(), i, ref.in1(i));
  }
  void* d_a = dev.allocate(bytes);
  void* d_b = dev.allocate(bytes);
  void* d_out = in_place ? d_a : dev.allocate(bytes);
  dev.upload(d_a, a.data(), bytes);
  dev.upload(d_b, b.data(), bytes);
  if (!in_place) dev.upload(d_out, out.data(), bytes);
  if (spec.direction == Direction::forward)
    forward(spec.activation, spec.dtype, d_a, d_out, n, dev.stream());
  else
    backward(spec.activation, spec.dtype, d_a, d_b, spec.saved, d_out, n, dev.stream());
  dev.download(out.data(), d_out, bytes);
  ErrorStats s(spec.dtype, ulp_bound(spec), spec.direction == Direction::backward);
  for (std::int64_t i = 0; i < n; ++i)
    s.add(i, load_element(spec.dtype, out.data(), i), ref.expected(i), ref.error_scale(i));
  INFO(to_string(spec) << " n=" << n << (in_place ? " in place" : "") << ": " << s.summary());
  CHECK(s.mismatches == 0);
}

void check_api_matrix(test::UserDevice& dev) {
  for (const auto& text : test::activation_cases())
    for (Dtype d : dev.dtypes())
      for (int dir = 0; dir < 3; ++dir)
        for (bool in_place : {false, true}) {
          if (dir == 2 && !resolve_activation(text).has_grad_from_output()) continue;
          KernelSpec spec;
          spec.activation = text;
          spec.dtype = d;
          spec.direction = dir == 0 ? Direction::forward : Direction::backward;
          spec.saved = dir == 2 ? Saved::output : Saved::input;
          for (std::int64_t n : {std::int64_t{1}, std::int64_t{4099}, std::int64_t{100003}})
            check_api_call(dev, spec, n, in_place);
        }
}

// A column slice: rows x cols of a rows x ld matrix, output into another matrix's slice; the
// elements outside the output slice must keep their poison.
void check_api_2d(test::UserDevice& dev, std::size_t in_col, std::size_t out_col) {
  const std::int64_t rows = 37, cols = 200, ld_in = 300, ld_out = 310;
  KernelSpec spec;
  ReferenceProblem ref(spec, 99);
  std::vector<float> in(rows * ld_in), out(rows * ld_out, -12345.0f);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(ref.in0(i));
  void* d_in = dev.allocate(in.size() * 4);
  void* d_out = dev.allocate(out.size() * 4);
  dev.upload(d_in, in.data(), in.size() * 4);
  dev.upload(d_out, out.data(), out.size() * 4);
  View2D v{rows, cols, ld_in, ld_out};
  forward_2d("selu", Dtype::f32, dev.offset(d_in, in_col * 4), dev.offset(d_out, out_col * 4), v, dev.stream());
  dev.download(out.data(), d_out, out.size() * 4);
  ErrorStats s(Dtype::f32, 1.0);
  std::size_t untouched_bad = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < ld_out; ++c) {
      const float got = out[r * ld_out + c];
      const std::int64_t k = c - static_cast<std::int64_t>(out_col);
      if (k >= 0 && k < cols)
        s.add(r * cols + k, got, reference::selu<double>(in[r * ld_in + in_col + k], nullptr));
      else
        untouched_bad += got != -12345.0f;
    }
  INFO(s.summary());
  CHECK(s.mismatches == 0);
  CHECK(s.checked == static_cast<std::uint64_t>(rows * cols));
  CHECK(untouched_bad == 0);
}

void check_api_threads(test::UserDevice& dev) {
  KernelSpec spec;
  spec.activation = "relu";
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      try {
        for (int i = 0; i < 5; ++i) check_api_call(dev, spec, 5000, false);
      } catch (...) {
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
}
}  // namespace

namespace {
// The tier's float32 backward where e^x is subnormal (x below -87.3) and the result is not: a
// gradient of 2^24 or more. torch's g c e^x keeps only e^x's few bits there (down to one at -103:
// a relative error up to 1/2); the tier scales e^x up first (templates/common/tier_math.h).
void check_tier_subnormal_tail(test::UserDevice& dev) {
  const std::int64_t n = 4096;
  for (const char* text : {"elu(accuracy=torch)", "celu(accuracy=torch)", "selu(accuracy=torch)",
                           "softplus(accuracy=torch)", "logsigmoid(accuracy=torch)"}) {
    const ResolvedActivation act = resolve_activation(text);
    const bool positive = act.act->name == "logsigmoid";  // its e^-x is subnormal for x above 87.3
    std::vector<float> x(n), g(n), out(n);
    for (std::int64_t i = 0; i < n; ++i) {
      const float deep = -87.4f - 15.5f * static_cast<float>(i) / static_cast<float>(n);  // to -102.9
      x[static_cast<std::size_t>(i)] = positive ? -deep : deep;
      g[static_cast<std::size_t>(i)] =
          std::ldexp(1.0f + static_cast<float>(i % 64) / 64.0f, 24 + i % 5) * (i % 2 ? -1 : 1);
    }
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    void* d_x = dev.allocate(bytes);
    void* d_g = dev.allocate(bytes);
    void* d_out = dev.allocate(bytes);
    dev.upload(d_x, x.data(), bytes);
    dev.upload(d_g, g.data(), bytes);
    backward(text, Dtype::f32, d_g, d_x, Saved::input, d_out, n, dev.stream());
    dev.download(out.data(), d_out, bytes);
    const reference::Functions* ref = reference::find(act.act->name);
    REQUIRE(ref != nullptr);
    ErrorStats s(Dtype::f32, act.bounds().f32_backward, true);
    for (std::size_t i = 0; i < x.size(); ++i) s.add(i, out[i], ref->from_input(g[i], x[i], act.params.data()));
    INFO(std::string(text) << ": " << s.summary());
    CHECK(s.checked == static_cast<std::uint64_t>(n));
    CHECK(s.mismatches == 0);
  }
}
}  // namespace

TEST_SUITE("cuda") {
  TEST_CASE("API on CUDA: the tier's float32 backward keeps e^x's bits where e^x is subnormal") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_tier_subnormal_tail(*dev);
  }
  TEST_CASE("API on CUDA: every activation, direction, dtype, in place and saved tensor") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_matrix(*dev);
  }
  TEST_CASE("API on CUDA: 2-D column slices, and misaligned slices") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_2d(*dev, 0, 0);
    check_api_2d(*dev, 5, 3);
  }
  TEST_CASE("API on CUDA: host memory is refused") {
    std::vector<float> host(16);
    CHECK(kplay_forward(KPLAY_BACKEND_CUDA, "selu", KPLAY_F32, host.data(), host.data(), 16, nullptr) ==
          KPLAY_ERROR_INVALID_ARGUMENT);
    CHECK(last().find("not device memory") != std::string::npos);
  }
  TEST_CASE("API on CUDA: concurrent calls from several threads") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_threads(*dev);
  }
}

TEST_SUITE("opencl") {
  TEST_CASE("API on OpenCL: the tier's float32 backward keeps e^x's bits where e^x is subnormal") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_tier_subnormal_tail(*dev);
  }
  TEST_CASE("API on OpenCL: every activation, direction, dtype, in place and saved tensor") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_matrix(*dev);
  }
  TEST_CASE("API on OpenCL: 2-D views with row pitches") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_2d(*dev, 0, 0);
  }
  TEST_CASE("API on OpenCL: concurrent calls from several threads") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_api_threads(*dev);
  }
}
