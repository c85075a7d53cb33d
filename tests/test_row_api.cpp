// The public API of the row activations (kplay::softmax_forward / softmax_backward, the C API's
// kplay_softmax_*, kplay::Launcher's launch_rows): argument errors before any device work, and on
// OpenCL pitched views of every family member, dtype and direction checked element by element
// against the row reference, with the elements outside the output's rows left alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "api_buffers.hpp"
#include "check/verification.hpp"
#include "kplay/kplay.h"
#include "kplay/kplay.hpp"
#include "kplay/launcher.hpp"
#include "spec/activations.hpp"
#include "spec/row_reference.hpp"
#include "util/host_dtype.hpp"

using namespace kplay;

namespace {
std::string last() { return kplay_last_error(); }
void* fake(std::uintptr_t p) { return reinterpret_cast<void*>(p); }
const Stream kCuda{Backend::cuda, nullptr};

// The message of the kplay::Error that fn throws; "" when it throws none.
template <class Fn>
std::string error_of(Fn fn, ErrorCode* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("row API: bad arguments are refused with a message before any device work") {
  ErrorCode code{};
  auto fwd = [&](const char* act, const void* x, std::int64_t ld_x, void* y, std::int64_t ld_y, std::int64_t rows,
                 std::int64_t cols) {
    return error_of([&] { softmax_forward(act, Dtype::f32, x, ld_x, y, ld_y, rows, cols, kCuda); }, &code);
  };
  CHECK(fwd("softmax", nullptr, 8, fake(0x90000), 8, 4, 8).find("x is a null pointer") != std::string::npos);
  CHECK(code == ErrorCode::invalid_argument);
  CHECK(fwd("softmax", fake(0x10000), 8, nullptr, 8, 4, 8).find("y is a null pointer") != std::string::npos);
  CHECK(fwd("softmax", fake(0x10000), 8, fake(0x90000), 8, -1, 8).find("rows and cols must be >= 0") !=
        std::string::npos);
  CHECK(fwd("softmax", fake(0x10000), 7, fake(0x90000), 8, 4, 8).find("x's row pitch 7 is below cols = 8") !=
        std::string::npos);
  // An element-wise activation is not a row one, and the element-wise calls refuse the family.
  CHECK(fwd("selu", fake(0x10000), 8, fake(0x90000), 8, 4, 8).find("not a row activation") != std::string::npos);
  CHECK(code == ErrorCode::invalid_argument);
  CHECK(error_of([] { forward("softmax", Dtype::f32, fake(0x10000), fake(0x90000), 8, kCuda); }, &code)
            .find("kplay::softmax_forward") != std::string::npos);
  CHECK(code == ErrorCode::invalid_argument);
  CHECK(error_of([] {
          backward("log_softmax", Dtype::f32, fake(0x10000), fake(0x20000), Saved::output, fake(0x90000), 8, kCuda);
        }).find("row activation") != std::string::npos);
  CHECK(error_of([] { (void)Launcher::cuda("softmin", Dtype::f32, Direction::backward, Saved::input, 0); }, &code)
            .find("saved output") != std::string::npos);
  CHECK(code == ErrorCode::unsupported);
  // Backward: every operand is named.
  CHECK(error_of([] {
          softmax_backward("softmax", Dtype::f32, nullptr, 8, fake(0x10000), 8, fake(0x90000), 8, 2, 8, kCuda);
        }).find("y is a null pointer") != std::string::npos);
  CHECK(error_of([] {
          softmax_backward("softmax", Dtype::f32, fake(0x20000), 8, fake(0x10000), 8, fake(0x90000), 4, 2, 8, kCuda);
        }).find("grad_in's row pitch 4") != std::string::npos);
}

TEST_CASE("row API: strided rows (a dim that is not the last) refuse bad shapes, pitches and overlaps") {
  ErrorCode code{};
  auto fwd = [&](std::int64_t ld_x, std::uintptr_t y, std::int64_t ld_y, std::int64_t outer, std::int64_t cols,
                 std::int64_t inner) {
    return error_of(
        [&] {
          softmax_forward_strided("softmax", Dtype::f32, fake(0x10000), ld_x, fake(y), ld_y, outer, cols, inner, kCuda);
        },
        &code);
  };
  CHECK(fwd(60, 0x90000, 60, 2, 4, 0).find("inner >= 1") != std::string::npos);
  CHECK(code == ErrorCode::invalid_argument);
  CHECK(fwd(60, 0x90000, 60, -2, 4, 15).find("outer must be >= 0") != std::string::npos);
  // The pitch between outer blocks covers cols x inner elements.
  CHECK(fwd(59, 0x90000, 60, 2, 4, 15).find("x's pitch between outer blocks 59 is below cols x inner = 60") !=
        std::string::npos);
  CHECK(fwd(60, 0x90000, 60, std::int64_t{1} << 40, 4, std::int64_t{1} << 40).find("overflows") != std::string::npos);
  // y's blocks interleaved with x's: x's second block [0x10000 + 4 * 64, + 4 * 60) meets y's first.
  CHECK(fwd(64, 0x10000 + 4 * 62, 64, 2, 4, 15).find("y overlaps x") != std::string::npos);
  // Side by side in one buffer of pitch 120 (x the first 60 of each block, y the next): taken, so
  // the call goes on to the device (none here), past the argument checks.
  CHECK(fwd(120, 0x10000 + 4 * 60, 120, 2, 4, 15).find("overlaps") == std::string::npos);
  CHECK(kplay_softmax_backward_strided(KPLAY_BACKEND_CUDA, "softmax", KPLAY_F32, fake(0x10000), 60, nullptr, 60,
                                       fake(0x90000), 60, 2, 4, 15, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("grad_out is a null pointer") != std::string::npos);
}

TEST_CASE("row API: an output over an input is refused, side-by-side column slices are not") {
  // y one element into x: overlap. y exactly over x: overlap too (no in place for a row kernel).
  CHECK(kplay_softmax_forward(KPLAY_BACKEND_CUDA, "softmax", KPLAY_F32, fake(0x10000), 64, fake(0x10004), 64, 4, 64,
                              nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("y overlaps x") != std::string::npos);
  CHECK(kplay_softmax_forward(KPLAY_BACKEND_CUDA, "softmax", KPLAY_F32, fake(0x10000), 64, fake(0x10000), 64, 4, 64,
                              nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(kplay_softmax_backward(KPLAY_BACKEND_CUDA, "log_softmax", KPLAY_F32, fake(0x20000), 64, fake(0x10000), 64,
                               fake(0x20000 + 16), 64, 4, 64, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("grad_in overlaps y") != std::string::npos);
  // Two column slices of one 10 x 256 matrix side by side: no overlap error (on a machine without
  // CUDA the fake pointers then fail for lack of a device, elsewhere for not being device memory).
  kplay_softmax_forward(KPLAY_BACKEND_CUDA, "softmax", KPLAY_F32, fake(0x10000), 256, fake(0x10000 + 64 * 4), 256, 10,
                        64, nullptr);
  CHECK(last().find("overlap") == std::string::npos);
  CHECK(!last().empty());
  CHECK(kplay_softmax_forward(KPLAY_BACKEND_CUDA, "softmax", KPLAY_F32, fake(0x10000), 256, fake(0x10000 + 64 * 4), 256,
                              10, 65, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(kplay_softmax_forward(KPLAY_BACKEND_CUDA, nullptr, KPLAY_F32, fake(0x10000), 8, fake(0x90000), 8, 1, 8,
                              nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(kplay_softmax_forward(KPLAY_BACKEND_CUDA, "softmax", static_cast<kplay_dtype>(9), fake(0x10000), 8,
                              fake(0x90000), 8, 1, 8, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
}

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// Row r of a test input: ordinary values in [-8, 8), and in some rows torch's edges (+inf, NaN, every
// element -inf, some -inf), rounded to the dtype.
std::vector<double> test_row(Dtype d, std::int64_t r, std::int64_t cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-8.0, 8.0);
  std::vector<double> x(static_cast<std::size_t>(cols));
  for (auto& v : x) v = round_to(d, u(rng));
  if (cols == 0) return x;
  switch (r % 6) {
    case 1: x[static_cast<std::size_t>(cols / 2)] = kInf; break;
    case 2: x[0] = std::numeric_limits<double>::quiet_NaN(); break;
    case 3: std::fill(x.begin(), x.end(), -kInf); break;
    case 4:
      for (std::size_t i = 0; i < x.size(); i += 3) x[i] = -kInf;
      break;
    default: break;
  }
  return x;
}

// Row r of rows whose sums sweep the range the row's log takes: the first 256 rows k = r + 1 equal
// maxima and the rest -inf (a sum of k), the others a max of 0 and the rest at -d, d from 0.1 up
// by 0.35 a row (a sum of 1 + (cols - 1) e^-d, from cols-fold down to within 2^-120 of 1). The max
// first, or (max_last) last: then a kernel that sums each thread's part of the row online has
// summed the rest before it meets the max, and rescales that partial sum by e^-d (a sum next to 1
// whose rounding must not be lost in the 1 that follows).
std::vector<double> sum_row(Dtype d, std::int64_t r, std::int64_t cols, bool max_last = false) {
  std::vector<double> x(static_cast<std::size_t>(cols), -kInf);
  if (r < 256) {
    std::fill(x.begin(), x.begin() + std::min<std::int64_t>(r + 1, cols), round_to(d, 1.25));
  } else {
    std::fill(x.begin(), x.end(), round_to(d, -(0.1 + 0.35 * static_cast<double>(r - 256))));
    x[max_last ? x.size() - 1 : 0] = 0.0;
  }
  return x;
}

enum class Rows { mixed, sums, sums_max_last };
enum class Path { call, c_api, launcher };

// rows x cols through the API on pitched views (each operand its own pitch, wider than cols), every
// element of the output checked against the row reference; the pitch gaps must keep their poison.
void check_rows_call(test::UserDevice& dev, const std::string& act_name, Dtype d, Direction dir, std::int64_t rows,
                     std::int64_t cols, Path path, Rows kind = Rows::mixed) {
  const ResolvedActivation act = resolve_activation(act_name);
  const bool backward = dir == Direction::backward;
  const std::size_t es = dtype_size(d);
  const std::int64_t ld_a = cols + 3, ld_b = cols + 5, ld_o = cols + 2;
  std::mt19937_64 rng(static_cast<std::uint64_t>(rows * 131 + cols) ^ static_cast<std::uint64_t>(dir));
  std::vector<unsigned char> a(static_cast<std::size_t>(rows * ld_a) * es),
      b(static_cast<std::size_t>(rows * ld_b) * es);
  std::vector<unsigned char> out(static_cast<std::size_t>(rows * ld_o) * es, 0xCD), poison = out;
  std::vector<std::vector<long double>> expected;
  std::vector<std::vector<double>> scales;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::vector<double> x =
        kind == Rows::mixed ? test_row(d, r, cols, rng) : sum_row(d, r, cols, kind == Rows::sums_max_last);
    std::vector<long double> e(static_cast<std::size_t>(cols));
    std::vector<double> scale(static_cast<std::size_t>(cols), 0.0);
    if (!backward) {
      reference::row_forward<long double>(act.act->row_form, x.data(), x.size(), e.data());
      for (std::int64_t i = 0; i < cols; ++i) store_element(d, a.data(), r * ld_a + i, x[static_cast<std::size_t>(i)]);
    } else {
      // The saved output: the reference's forward rounded to the dtype, as a forward kernel stores it.
      std::vector<long double> yl(x.size());
      reference::row_forward<long double>(act.act->row_form, x.data(), x.size(), yl.data());
      std::vector<double> y(x.size()), g(x.size());
      std::uniform_real_distribution<double> u(-2.0, 2.0);
      for (std::size_t i = 0; i < x.size(); ++i) {
        y[i] = round_to(d, static_cast<double>(yl[i]));
        g[i] = round_to(d, u(rng));
      }
      reference::row_backward<long double>(act.act->row_form, g.data(), y.data(), x.size(), e.data(), scale.data(),
                                           d == Dtype::f64 ? 1.0 : 0x1p-24);
      for (std::int64_t i = 0; i < cols; ++i) {
        store_element(d, a.data(), r * ld_a + i, g[static_cast<std::size_t>(i)]);
        store_element(d, b.data(), r * ld_b + i, y[static_cast<std::size_t>(i)]);
      }
    }
    expected.push_back(std::move(e));
    scales.push_back(std::move(scale));
  }
  void* d_a = dev.allocate(a.size() + 1);
  void* d_b = dev.allocate(b.size() + 1);
  void* d_out = dev.allocate(out.size() + 1);
  dev.upload(d_a, a.data(), a.size());
  dev.upload(d_b, b.data(), b.size());
  dev.upload(d_out, out.data(), out.size());
  const kplay_dtype codes[] = {KPLAY_F32, KPLAY_F16, KPLAY_BF16, KPLAY_F64};
  const kplay_dtype code = codes[static_cast<int>(d)];
  const Stream s = dev.stream();
  const kplay_backend cb = s.backend == Backend::cuda ? KPLAY_BACKEND_CUDA : KPLAY_BACKEND_OPENCL;
  switch (path) {
    case Path::call:
      if (backward)
        softmax_backward(act_name, d, d_b, ld_b, d_a, ld_a, d_out, ld_o, rows, cols, s);
      else
        softmax_forward(act_name, d, d_a, ld_a, d_out, ld_o, rows, cols, s);
      break;
    case Path::c_api: {
      const kplay_status st =
          backward ? kplay_softmax_backward(cb, act_name.c_str(), code, d_b, ld_b, d_a, ld_a, d_out, ld_o, rows, cols,
                                            s.handle)
                   : kplay_softmax_forward(cb, act_name.c_str(), code, d_a, ld_a, d_out, ld_o, rows, cols, s.handle);
      REQUIRE_MESSAGE(st == KPLAY_OK, last());
      break;
    }
    case Path::launcher: {
      const Launcher l = s.backend == Backend::cuda ? Launcher::cuda(act_name, d, dir, Saved::output, 0)
                                                    : Launcher::opencl(act_name, d, dir, Saved::output, s.handle);
      l.launch_rows(d_a, ld_a, backward ? d_b : nullptr, ld_b, d_out, ld_o, rows, cols, s.handle);
      break;
    }
  }
  dev.download(out.data(), d_out, out.size());
  ErrorStats stats(d, act.bounds().get(d, dir), backward);
  std::size_t gaps_written = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < ld_o; ++i) {
      const std::size_t at = static_cast<std::size_t>(r * ld_o + i);
      if (i < cols)
        stats.add(static_cast<std::uint64_t>(r * cols + i), load_element(d, out.data(), at),
                  expected[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)],
                  scales[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
      else
        gaps_written += std::memcmp(out.data() + at * es, poison.data() + at * es, es) != 0;
    }
  INFO(act_name << " " << std::string(to_string(d)) << " " << std::string(to_string(dir)) << " " << rows << " x "
                << cols << ": " << stats.summary());
  CHECK(stats.mismatches == 0);
  CHECK(stats.checked == static_cast<std::uint64_t>(rows * cols));
  CHECK(gaps_written == 0);
}
}  // namespace

TEST_SUITE("cuda") {
  TEST_CASE("row API on CUDA: every member, dtype and direction, rows short and long") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    // The default config by row length: registers, then online.
    const std::int64_t shapes[][2] = {{13, 37}, {6, 1}, {5, 5000}, {3, 70000}, {2, 393216}};
    for (const char* act : {"softmax", "log_softmax", "softmin"})
      for (Dtype d : dev->dtypes())
        for (Direction dir : {Direction::forward, Direction::backward})
          for (const auto& sh : shapes) check_rows_call(*dev, act, d, dir, sh[0], sh[1], Path::call);
    for (Path p : {Path::c_api, Path::launcher})
      for (Direction dir : {Direction::forward, Direction::backward})
        check_rows_call(*dev, "softmin", Dtype::bf16, dir, 4, 70000, p);
    // The log of a row's sum across its range (as on OpenCL), in rows a thread of the persistent
    // registers kernel holds 8 of, and in rows of the pipelined cluster kernel's default.
    for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16})
      for (const char* act : {"log_softmax", "softmax"})
        for (std::int64_t cols : {256, 65536})
          check_rows_call(*dev, act, d, Direction::forward, 512, cols, Path::call, Rows::sums);
    // The same sums with the max last, in rows the online kernel sums (float32) or the pipelined
    // cluster kernel holds (16-bit).
    for (Dtype d : {Dtype::f32, Dtype::bf16})
      check_rows_call(*dev, "log_softmax", d, Direction::forward, 512, 20000, Path::call, Rows::sums_max_last);
  }
}

TEST_SUITE("opencl") {
  TEST_CASE("row API on OpenCL: softmax, log_softmax and softmin on pitched views, every dtype and direction") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    // Every dtype for softmax; float32 and bfloat16 for the others (each PoCL kernel costs a second or
    // two of CPU, and the kernel is one body for the three).
    for (const char* act : {"softmax", "log_softmax", "softmin"})
      for (Dtype d : dev->dtypes())
        for (Direction dir : {Direction::forward, Direction::backward})
          if (std::string(act) == "softmax" || d == Dtype::f32 || d == Dtype::bf16)
            check_rows_call(*dev, act, d, dir, 13, 37, Path::call);
    // Rows of one element (every result 1, log_softmax 0), and a row longer than a block holds.
    check_rows_call(*dev, "softmax", Dtype::f32, Direction::forward, 6, 1, Path::call);
    check_rows_call(*dev, "log_softmax", Dtype::f32, Direction::backward, 6, 1, Path::call);
    check_rows_call(*dev, "softmax", Dtype::f32, Direction::forward, 3, 5000, Path::call);
    // The log of a row's sum (kernel-side, a table and a polynomial below float64) over sums from 1
    // to 256 and from just above 1 up: log_softmax's results next to 0 are that log alone.
    for (Dtype d : {Dtype::f32, Dtype::bf16})
      for (const char* act : {"log_softmax", "softmax"})
        check_rows_call(*dev, act, d, Direction::forward, 512, 256, Path::call, Rows::sums);
    // The max last, in rows the online kernel sums: each thread has summed its part of the row
    // before the max, and rescales that sum next to 1.
    check_rows_call(*dev, "log_softmax", Dtype::f32, Direction::forward, 512, 20000, Path::call, Rows::sums_max_last);
  }

  TEST_CASE("row API on OpenCL: the C API and a Launcher give the same checked results") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    for (Path p : {Path::c_api, Path::launcher})
      for (Direction dir : {Direction::forward, Direction::backward}) {
        check_rows_call(*dev, "softmin", Dtype::f32, dir, 7, 100, p);
        check_rows_call(*dev, "log_softmax", Dtype::f32, dir, 1, 300, p);
      }
    // A row launcher launches rows only, an element-wise one no rows.
    const Launcher rows =
        Launcher::opencl("softmax", Dtype::f32, Direction::forward, Saved::input, dev->stream().handle);
    CHECK(error_of([&] { rows.launch(fake(1), nullptr, fake(2), 4); }).find("launch_rows") != std::string::npos);
    const Launcher relu = Launcher::opencl("relu", Dtype::f32, Direction::forward, Saved::input, dev->stream().handle);
    CHECK(error_of([&] { relu.launch_rows(fake(1), 4, nullptr, 4, fake(2), 4, 1, 4); }).find("row activation") !=
          std::string::npos);
  }

  TEST_CASE("row API on OpenCL: empty views write nothing; the same cl_mem for input and output is refused") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    void* x = dev->allocate(64 * 4);
    void* y = dev->allocate(64 * 4);
    std::vector<float> poison(64, -7.0f), got(64);
    dev->upload(y, poison.data(), 64 * 4);
    softmax_forward("softmax", Dtype::f32, x, 8, y, 8, 0, 8, dev->stream());
    softmax_forward("softmax", Dtype::f32, x, 8, y, 8, 8, 0, dev->stream());
    softmax_backward("softmax", Dtype::f32, x, 8, x, 8, y, 8, 0, 8, dev->stream());
    dev->download(got.data(), y, 64 * 4);
    CHECK(got == poison);
    CHECK(error_of([&] {
            softmax_forward("softmax", Dtype::f32, x, 8, x, 8, 8, 8, dev->stream());
          }).find("y overlaps x") != std::string::npos);
  }
}
