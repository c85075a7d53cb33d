// Gated activations (gated(ACT): out = act(a) * b): the activation text, bounds and spec checks,
// codegen, FP8's host conversions and the reference (no device); the C and C++ API, the Launcher
// and the command line on OpenCL and CUDA; FP8 kernels through NVRTC (no GPU needed).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "api_buffers.hpp"
#include "check/verification.hpp"
#include "cli_runner.hpp"
#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "db_test_support.hpp"
#include "device_fixture.hpp"
#include "engine/launch_layout.hpp"
#include "kplay/error.hpp"
#include "kplay/kplay.h"
#include "kplay/kplay.hpp"
#include "kplay/launcher.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activation_costs.hpp"
#include "spec/activation_text.hpp"
#include "spec/activations.hpp"
#include "spec/reference.hpp"
#include "tuner/default_model.hpp"
#include "util/host_dtype.hpp"
#ifdef KPLAY_WITH_CUDA
#include "runtime/cuda/nvrtc_compiler.hpp"
#endif

using namespace kplay;

namespace {
std::string last() { return kplay_last_error(); }
void* fake(std::uintptr_t p) { return reinterpret_cast<void*>(p); }
KernelSpec gated(const std::string& act, Dtype dtype = Dtype::f32, Direction dir = Direction::forward,
                 OutDtype out = OutDtype::same) {
  KernelSpec s;
  s.activation = resolve_activation("gated(" + act + ")").canonical;
  s.dtype = dtype;
  s.direction = dir;
  s.out = out;
  return s;
}
}  // namespace

TEST_CASE("gated(ACT) text: any built-in with its parameters, nested parentheses, one canonical form") {
  const ActivationCall call = split_activation_call("gated(gelu(approximate=tanh))");
  CHECK(call.name == "gated");
  REQUIRE(call.args.size() == 1);
  CHECK(call.args[0].first.empty());
  CHECK(call.args[0].second == "gelu(approximate=tanh)");
  CHECK(resolve_activation("gated(silu)").canonical == "gated(silu)");
  CHECK(resolve_activation(" gated( gelu(approximate='tanh') ) ").canonical == "gated(gelu(approximate=tanh))");
  CHECK(resolve_activation("gated(leaky_relu(negative_slope=0.01))").canonical == "gated(leaky_relu)");
  CHECK(resolve_activation("gated(hardtanh(-2, 2))").canonical == "gated(hardtanh(min_val=-2, max_val=2))");
  const ResolvedActivation r = resolve_activation("gated(softplus(beta=2))");
  CHECK(r.gated);
  CHECK(r.inner == "softplus(beta=2)");
  CHECK(r.act->name == "softplus");
  CHECK(r.params[0] == 2);
  CHECK_FALSE(resolve_activation("softplus").gated);
  // A list splits at the commas outside parentheses.
  CHECK(split_activation_list("gated(hardtanh(-2, 2)),silu") ==
        std::vector<std::string>{"gated(hardtanh(-2, 2))", "silu"});
  for (const char* bad : {"gated()", "gated(silu, relu)", "gated(act=silu)", "gated(gated(silu))", "gated(swish)",
                          "gated(silu", "gated(silu))", "gated(silu)x", "gated(elu(alpha=)"}) {
    INFO(bad);
    CHECK_THROWS_AS(resolve_activation(bad), Error);
  }
  CHECK_THROWS_WITH_AS(resolve_activation("gated(gated(silu))"), doctest::Contains("cannot gate another gated"), Error);
  CHECK_THROWS_WITH_AS(resolve_activation("gated(silu, relu)"), doctest::Contains("gated takes one activation"), Error);
  CHECK_THROWS_WITH_AS(resolve_activation("gated(swish)"), doctest::Contains("unknown activation 'swish'"), Error);
  // The ordinary grammar keeps refusing what it refused.
  CHECK_THROWS_AS(resolve_activation("elu(alpha=(1))"), Error);
}

TEST_CASE("gated bounds, costs and directions follow from the activation's") {
  const ResolvedActivation silu = resolve_activation("gated(silu)");
  CHECK(silu.has_backward());
  CHECK_FALSE(silu.has_grad_from_output());
  // The default model sees its streams (a and b in, grad_a and grad_b out) and the inner
  // activation's counted math in double, plus the product, even on a device without fast FP64.
  const DefaultModelInputs slow_fp64;
  const ModelKernel fwd = model_kernel(gated("silu", Dtype::f32, Direction::forward), slow_fp64);
  const ModelKernel bwd = model_kernel(gated("silu", Dtype::f32, Direction::backward), slow_fp64);
  CHECK(fwd.loads == 2);
  CHECK(fwd.stores == 1);
  CHECK(bwd.loads == 3);
  CHECK(bwd.stores == 2);
  CHECK(fwd.cost == *counted_cost(resolve_activation("silu"), Dtype::f32, Direction::forward, true) + 1);
  CHECK(bwd.cost == *counted_cost(resolve_activation("silu"), Dtype::f32, Direction::backward, true) + 1);
  const UlpBounds b = silu.bounds();
  CHECK(b.f32_forward == 2);
  CHECK(b.f32_backward == 2);
  CHECK(b.narrow_forward == 1);
  CHECK(b.narrow_backward == 1);
  CHECK(b.f64_forward == 2 * 4 + 1);
  CHECK(b.f64_backward == 2 * (1 << 17) + 1);
  // gelu's own float32 forward bound is 5 ulp; its gated form computes in double: 2.
  CHECK(resolve_activation("gelu").bounds().f32_forward == 5);
  CHECK(resolve_activation("gated(gelu)").bounds().f32_forward == 2);
  CHECK(resolve_activation("gated(gelu)").bounds().narrow_backward == 4);
  CHECK(ulp_bound(gated("silu", Dtype::bf16, Direction::forward, OutDtype::f8e4m3)) == kFp8BoundUlps);
  CHECK(gated_wide_math(Dtype::f32, false));
  CHECK_FALSE(gated_wide_math(Dtype::f32, true));
  CHECK_FALSE(gated_wide_math(Dtype::bf16, false));
}

TEST_CASE("gated specs: the saved output, FP8 on a backward, FP8 elsewhere than CUDA are refused with a reason") {
  TargetLimits cuda;
  cuda.fp8 = true;
  KernelSpec s = gated("silu", Dtype::f32, Direction::backward);
  CHECK(spec_unsupported(s, cuda).empty());
  s.saved = Saved::output;
  CHECK(spec_unsupported(s, cuda).find("takes its inputs a and b") != std::string::npos);
  s = gated("silu", Dtype::bf16, Direction::backward, OutDtype::f8e4m3);
  CHECK(spec_unsupported(s, cuda).find("is for the forward of a gated activation") != std::string::npos);
  s = gated("silu", Dtype::bf16, Direction::forward, OutDtype::f8e5m2);
  CHECK(spec_unsupported(s, cuda).empty());
  KernelSpec plain;
  plain.activation = "silu";
  plain.out = OutDtype::f8e4m3;
  CHECK(spec_unsupported(plain, cuda).find("is for the forward of a gated activation") != std::string::npos);
  TargetLimits opencl;
  opencl.backend = "opencl";
  CHECK(spec_unsupported(s, opencl).find("FP8 output is for CUDA only") != std::string::npos);
  CHECK_THROWS_WITH_AS(resolve_config(s, {}, opencl), doctest::Contains("CUDA only"), Error);
  CHECK(to_string(s) == "gated(silu) forward bf16 out=f8e5m2");
  // float32 gated math is double: a device without float64 refuses it, unless fast-math.
  TargetLimits no_fp64;
  no_fp64.backend = "opencl";
  no_fp64.dtypes = {Dtype::f32, Dtype::f16, Dtype::bf16};
  CHECK_THROWS_WITH_AS(resolve_config(gated("silu"), {}, no_fp64), doctest::Contains("has no float64"), Error);
  KernelConfig fast;
  fast.fast_math = true;
  CHECK(resolve_config(gated("silu"), fast, no_fp64).fast_math);
  CHECK(resolve_config(gated("silu", Dtype::bf16), {}, no_fp64).vec == 8);
  CHECK(parse_out_dtype("float8_e4m3fn") == OutDtype::f8e4m3);
  CHECK(parse_out_dtype("e5m2") == OutDtype::f8e5m2);
  CHECK_THROWS_AS(parse_out_dtype("f8"), Error);
}

TEST_CASE("gated codegen: one kernel body, float32 math in double, FP8 names and macros") {
  const Dialect cuda = rt::dialect_of("cuda");
  TargetLimits lim;
  lim.fp8 = true;
  auto render = [&](const KernelSpec& s, KernelConfig c = {}, Layout layout = Layout::general) {
    return render_kernel(s, resolve_config(s, c, lim), cuda, layout);
  };
  const RenderedKernel f32 = render(gated("silu"));
  CHECK(f32.entry == "kplay_gated_silu_fwd_f32_v4_b256_p1_cd_pm");
  CHECK(f32.source.find("#define KP_GATED 1") != std::string::npos);
  CHECK(f32.source.find("#define KP_WIDE_F32 1") != std::string::npos);
  CHECK(f32.source.find("#define KP_DTYPE_F64 1") != std::string::npos);   // the math's type
  CHECK(f32.source.find("#define KP_VEC_BYTES 16") != std::string::npos);  // float storage
  CHECK(f32.source.find("#line 1 \"common/float64_math.h\"") != std::string::npos);
  CHECK(f32.source.find("#line 1 \"common/elementwise.h\"") != std::string::npos);
  KernelConfig fast;
  fast.fast_math = true;
  CHECK(render(gated("silu"), fast).source.find("#define KP_WIDE_F32 0") != std::string::npos);
  const RenderedKernel bf16 = render(gated("silu", Dtype::bf16, Direction::backward));
  CHECK(bf16.entry == "kplay_gated_silu_bwdx_bf16_v8_b256_p1_cd_pm");
  CHECK(bf16.source.find("#define KP_WIDE_F32 0") != std::string::npos);
  const RenderedKernel f8 = render(gated("silu", Dtype::bf16, Direction::forward, OutDtype::f8e4m3));
  CHECK(f8.entry == "kplay_gated_silu_fwd_bf16_f8e4m3_v8_b256_p1_cd_pm");
  CHECK(f8.source.find("#define KP_OUT_F8 1") != std::string::npos);
  CHECK(f8.source.find("#define KP_OUT_VEC_BYTES 8") != std::string::npos);
  // Parameters: a wide float32 kernel writes float32's value exactly, as a double literal.
  const RenderedKernel slope = render(gated("leaky_relu(negative_slope=0.2)"));
  CHECK(slope.source.find("#define KP_P_NEGATIVE_SLOPE KP_LIT(0.20000000298023224)") != std::string::npos);
  // A parameterized activation's gated kernel has its own name; the plain one is unchanged.
  CHECK(render(gated("gelu(approximate=tanh)")).entry.rfind("kplay_gated_gelu_h", 0) == 0);
  // On a device with fast FP64 a wide kernel takes fp64_math.h's routines, their results unrounded
  // (kp_d_res), for the activations that have one; elsewhere the float64 kernel's math alone.
  Dialect fast_cuda = cuda;
  fast_cuda.fast_fp64 = true;
  const RenderedKernel fast_f32 = render_kernel(gated("silu"), resolve_config(gated("silu"), {}, lim), fast_cuda);
  CHECK(fast_f32.source.find("#define KP_FAST_FP64 1") != std::string::npos);
  CHECK(fast_f32.source.find("#line 1 \"common/fp64_math.h\"") != std::string::npos);
  CHECK(fast_f32.source.find("#define KP_WIDE_F32 1") != std::string::npos);
  CHECK(f32.source.find("#define KP_FAST_FP64 0") != std::string::npos);
  CHECK(f32.source.find("#line 1 \"common/fp64_math.h\"") == std::string::npos);
  // 16-bit and float64 gated kernels have no double path, wherever they run.
  const KernelSpec bf16_fwd = gated("silu", Dtype::bf16);
  CHECK(render_kernel(bf16_fwd, resolve_config(bf16_fwd, {}, lim), fast_cuda).source.find("#define KP_FAST_FP64 0") !=
        std::string::npos);
  KernelSpec plain;
  plain.activation = "silu";
  CHECK(render(plain).source.find("#define KP_GATED 0") != std::string::npos);
  CHECK(render(plain).entry == "kplay_silu_fwd_f32_v4_b256_p1_cd_pm");
  CHECK(render(gated("silu")).hash != render(plain).hash);
}

TEST_CASE("FP8 on the host: every code's value, round to nearest even, saturation, NaN") {
  for (OutDtype f : {OutDtype::f8e4m3, OutDtype::f8e5m2})
    for (int code = 0; code < 256; ++code) {
      const double v = fp8_to_double(f, static_cast<std::uint8_t>(code));
      if (std::isnan(v) || std::isinf(v)) continue;
      INFO(to_string(f) << " code " << code);
      CHECK(fp8_from_double(f, v) == code);
    }
  const OutDtype e4 = OutDtype::f8e4m3, e5 = OutDtype::f8e5m2;
  CHECK(fp8_to_double(e4, 0x7e) == 448);
  CHECK(std::isnan(fp8_to_double(e4, 0x7f)));
  CHECK(fp8_to_double(e4, 0x01) == std::ldexp(1.0, -9));
  CHECK(fp8_to_double(e5, 0x7b) == 57344);
  CHECK(std::isinf(fp8_to_double(e5, 0x7c)));
  CHECK(fp8_from_double(e4, 1e9) == 0x7e);
  CHECK(fp8_from_double(e4, -HUGE_VAL) == 0xfe);
  CHECK(fp8_from_double(e4, 460) == 0x7e);  // would round to 480, which is NaN in e4m3fn: saturates
  CHECK(fp8_from_double(e5, HUGE_VAL) == 0x7b);
  CHECK(fp8_from_double(e4, std::nan("")) == 0x7f);
  CHECK(fp8_from_double(e4, std::ldexp(1.0, -10)) == 0x00);      // half the smallest subnormal: to even (0)
  CHECK(fp8_from_double(e4, 3 * std::ldexp(1.0, -10)) == 0x02);  // 1.5 of it: to even (2)
  CHECK(fp8_from_double(e4, 1.0625) == 0x38);                    // between 1 and 1.125: to even (1)
  CHECK(fp8_from_double(e4, 1.1875) == 0x3a);                    // between 1.125 and 1.25: to even (1.25)
  CHECK(fp8_ulp(e4, 1.5) == 0.125);
  CHECK(fp8_ulp(e4, 0) == std::ldexp(1.0, -9));
  CHECK(fp8_ulp(e5, 1000) == 128);
}

TEST_CASE("the gated reference: act(a) then one product; b's special values meet a's in another order") {
  const KernelSpec fwd = gated("silu");
  ReferenceProblem ref(fwd, 7);
  for (std::uint64_t i : {std::uint64_t{0}, std::uint64_t{5}, std::uint64_t{40}, std::uint64_t{1000}}) {
    const double a = ref.x(i), b = ref.b(i);
    const double want = reference::find("silu")->forward(a, nullptr) * b;
    const double got = static_cast<double>(ref.gated_expected(i, 0));
    CHECK(((std::isnan(want) && std::isnan(got)) || want == got));
  }
  // b's first elements are the special values backwards: a = specials[i], b = specials[n - 1 - i].
  const std::size_t n = special_value_count();
  CHECK(ref.b(0) == ref.x(n - 1));
  CHECK(ref.b(n - 1) == ref.x(0));
  const KernelSpec bwd = gated("gelu", Dtype::f32, Direction::backward);
  ReferenceProblem rb(bwd, 3);
  for (std::uint64_t i : {std::uint64_t{50}, std::uint64_t{77}}) {
    const double g = rb.grad(i), a = rb.x(i), b = rb.b(i);
    CHECK(static_cast<double>(rb.gated_expected(i, 0)) ==
          reference::find("gelu")->from_input(g, a, rb.params.data()) * b);
    CHECK(static_cast<double>(rb.gated_expected(i, 1)) == g * reference::find("gelu")->forward(a, rb.params.data()));
  }
  // FP8: divided by the scale and clamped to the largest finite value, not rounded.
  ReferenceProblem f8(gated("relu", Dtype::bf16, Direction::forward, OutDtype::f8e4m3), 1);
  f8.scale = 0.5;
  CHECK(f8.gated_as<double>(0, 3, 5, 0) == 30);
  CHECK(f8.gated_as<double>(0, 300, 5, 0) == 448);
  CHECK(f8.gated_as<double>(0, 300, -5, 0) == -448);
  // 0 * inf in the compute type (gelu(tanh) of -20 underflows in float): either result stands.
  ReferenceProblem u(gated("gelu(approximate=tanh)", Dtype::bf16), 1);
  CHECK(u.gated_error_scale(0, -20, HUGE_VAL, 0) == kUndetermined);
  CHECK(u.gated_error_scale(0, -2, HUGE_VAL, 0) == 0);
  ErrorStats s(Dtype::bf16, 1);
  s.add(0, std::nan(""), HUGE_VAL, kUndetermined);
  s.add(1, -HUGE_VAL, HUGE_VAL, kUndetermined);
  CHECK(s.mismatches == 0);
  s.add(2, 1.0, HUGE_VAL, kUndetermined);
  CHECK(s.mismatches == 1);
  // float32 takes float's smallest normal number as that limit, as its double routines may end
  // their range below it (silu(-710) = -2^-1015 is 0 there); float64 double's.
  ReferenceProblem f32u(gated("silu"), 1);
  CHECK(f32u.gated_error_scale(0, -710, HUGE_VAL, 0) == kUndetermined);
  CHECK(f32u.gated_error_scale(0, -90, HUGE_VAL, 0) == 0);
  CHECK(f32u.gated_error_scale(0, -745, 2.0, 0) > 0);  // a finite b: measured against b 2^-1022
  ReferenceProblem f64u(gated("silu", Dtype::f64), 1);
  CHECK(f64u.gated_error_scale(0, -710, HUGE_VAL, 0) == 0);
  // Planted after the edges: a where act(a) is a normal float below e^-87.3 (where an exponential
  // that flushes subnormal results makes it 0) against b = +-inf; the exact product is infinite.
  for (Dtype dtype : {Dtype::f16, Dtype::bf16, Dtype::f32}) {
    ReferenceProblem p(gated("silu", dtype), 5);
    const std::uint64_t at = special_value_count() + p.edges.size();
    CHECK(p.pairs.size() == 4);
    for (std::uint64_t k = 0; k < p.pairs.size(); ++k) {
      INFO(std::string(to_string(dtype)) << " pair " << k);
      CHECK(p.x(at + k) == round_to(dtype, k < 2 ? -90.0 : -10.0625));
      CHECK(std::isinf(p.b(at + k)));
      CHECK(std::isinf(static_cast<double>(p.gated_expected(at + k, 0))));
      CHECK(p.gated_error_scale(0, p.x(at + k), p.b(at + k), 0) != kUndetermined);
    }
    CHECK(std::fabs(reference::find("silu")->forward(-90, nullptr)) > min_normal(Dtype::f32));
    CHECK(std::fabs(std::exp(-90.0)) < min_normal(Dtype::f32));
  }
  CHECK(ReferenceProblem(fwd, 7).pairs.size() == 4);
  KernelSpec plain_silu;
  plain_silu.activation = "silu";
  CHECK(ReferenceProblem(plain_silu, 7).pairs.empty());
  // relu2 of bfloat16's largest values overflows float, as in the kernel and in torch.
  ReferenceProblem o(gated("relu2", Dtype::bf16), 1);
  CHECK(std::isinf(o.gated_as<double>(0, 1.85e19, -0.25, 0)));
}

TEST_CASE("a gated backward's five buffers: the flat kernel only where every one is contiguous and aligned") {
  rt::KernelArgs a;
  a.rows = 1;
  a.cols = 1000;
  a.ld_out = a.ld_in0 = a.ld_in1 = a.ld_out1 = a.ld_in2 = 1000;
  a.gated_backward = true;
  a.out = {4096, 0};
  a.in0 = {8192, 0};
  a.in1 = {16384, 0};
  a.out1 = {32768, 0};
  a.in2 = {65536, 0};
  CHECK(flat_elements(a, true, 16, true) == 1000);
  a.out1.offset = 4;
  CHECK(flat_elements(a, true, 16, true) == 0);
  a.out1.offset = 0;
  a.in2.offset = 8;
  CHECK(flat_elements(a, true, 16, true) == 0);
  a.in2.offset = 0;
  a.rows = 2;
  a.cols = 500;
  a.ld_in2 = 1000;  // b a half of [rows, 2d]
  CHECK(flat_elements(a, true, 16, true) == 0);
  // FP8 output: its vector is vec bytes.
  rt::KernelArgs f;
  f.rows = 1;
  f.cols = f.ld_out = f.ld_in0 = f.ld_in1 = 100;
  f.out = {4096 + 8, 0};
  f.in0 = {8192, 0};
  f.in1 = {16384, 0};
  CHECK(flat_elements(f, true, 16, true, 8) == 100);
  CHECK(flat_elements(f, true, 16, true) == 0);
}

TEST_CASE("C API, gated: bad arguments get a status and a message, before any device work") {
  const auto cuda = KPLAY_BACKEND_CUDA;
  CHECK(kplay_gated_forward(cuda, "silu", KPLAY_F32, nullptr, 0, 10, fake(0x20000), 0, 10, fake(0x30000), 0, 10, 4, 10,
                            nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("a is a null pointer") != std::string::npos);
  CHECK(kplay_gated_forward(cuda, "silu", KPLAY_F32, fake(0x10000), 0, 10, fake(0x20000), 0, 10, fake(0x30000), 0, 10,
                            -1, 10, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("rows and d must be >= 0") != std::string::npos);
  CHECK(kplay_gated_forward(cuda, "silu", KPLAY_F32, fake(0x10000), 0, 8, fake(0x20000), 0, 10, fake(0x30000), 0, 10, 4,
                            10, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("a's row pitch 8 is below d = 10") != std::string::npos);
  CHECK(kplay_gated_forward(cuda, "swish", KPLAY_F32, fake(0x10000), 0, 10, fake(0x20000), 0, 10, fake(0x30000), 0, 10,
                            4, 10, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("unknown activation 'swish'") != std::string::npos);
  // The output over b, or one element into a: refused; exactly over a: allowed (then no device here).
  CHECK(kplay_gated_forward(cuda, "silu", KPLAY_F32, fake(0x10000), 0, 10, fake(0x20000), 0, 10, fake(0x20000), 0, 10,
                            4, 10, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("out overlaps b") != std::string::npos);
  CHECK(kplay_gated_forward(cuda, "silu", KPLAY_F32, fake(0x10000), 0, 10, fake(0x20000), 0, 10, fake(0x10000), 1, 10,
                            4, 10, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("out overlaps a") != std::string::npos);
  kplay_gated_forward(cuda, "silu", KPLAY_F32, fake(0x10000), 0, 10, fake(0x20000), 0, 10, fake(0x10000), 0, 10, 4, 10,
                      nullptr);
  CHECK(last().find("overlap") == std::string::npos);
  // [rows, 2d]: the halves do not overlap; the output over x's second half does.
  kplay_gated_forward_packed(cuda, "silu", KPLAY_F32, fake(0x10000), 20, fake(0x40000), 10, 4, 10, nullptr);
  CHECK(last().find("overlap") == std::string::npos);
  CHECK(kplay_gated_forward_packed(cuda, "silu", KPLAY_F32, fake(0x10000), 19, fake(0x40000), 10, 4, 10, nullptr) ==
        KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("below 2d = 20") != std::string::npos);
  CHECK(kplay_gated_forward(cuda, "silu", KPLAY_F32, fake(0x10000), 0, 20, fake(0x10000), 10, 20, fake(0x10000 + 40), 0,
                            20, 4, 10, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("out overlaps b") != std::string::npos);
  // Backward: the gradients over a and b, exactly, are allowed; over each other, not.
  kplay_gated_backward_packed(cuda, "silu", KPLAY_F32, fake(0x80000), 10, fake(0x10000), 20, fake(0x10000), 20, 4, 10,
                              nullptr);
  CHECK(last().find("overlap") == std::string::npos);
  CHECK(kplay_gated_backward(cuda, "silu", KPLAY_F32, fake(0x80000), 0, 10, fake(0x10000), 0, 10, fake(0x20000), 0, 10,
                             fake(0x30000), 0, 10, fake(0x30000), 5, 10, 4, 10,
                             nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("grad_a and grad_b overlap") != std::string::npos);
  CHECK(kplay_gated_backward(cuda, "silu", KPLAY_F32, fake(0x80000), 0, 10, fake(0x10000), 0, 10, fake(0x20000), 0, 10,
                             fake(0x20000), 0, 10, fake(0x30000), 0, 10, 4, 10,
                             nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("grad_a overlaps b") != std::string::npos);
  // FP8: a bad scale, an unknown format.
  CHECK(kplay_gated_forward_fp8(cuda, "silu", KPLAY_BF16, KPLAY_FP8_E4M3, fake(0x10000), 0, 10, fake(0x20000), 0, 10,
                                fake(0x30000), 0, 10, 4, 10, nullptr, -1.0f, nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("FP8 scale") != std::string::npos);
  CHECK(kplay_gated_forward_fp8(cuda, "silu", KPLAY_BF16, static_cast<kplay_fp8>(9), fake(0x10000), 0, 10,
                                fake(0x20000), 0, 10, fake(0x30000), 0, 10, 4, 10, nullptr, 1.0f,
                                nullptr) == KPLAY_ERROR_INVALID_ARGUMENT);
  CHECK(last().find("unknown FP8 format code 9") != std::string::npos);
  // The plain launcher path refuses gated launchers' work and the reverse, with a reason.
  CHECK_THROWS_WITH_AS(gated_backward("relu6", Dtype::f32, {fake(1), 1, 0}, {fake(2), 1, 0}, {fake(3), 1, 0},
                                      {fake(4), 1, 0}, {fake(5), 1, 0}, 1, 1, {Backend::opencl, nullptr}),
                       doctest::Contains("OpenCL calls need the cl_command_queue"), Error);
}

TEST_CASE("kplay, gated: bad input gets a message and exit status 2") {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"run --act 'gated(silu)' --shape 4x7", "last dimension must be even"},
      {"run --act 'gated(silu)' --n 1001", "last dimension must be even"},
      {"run --act 'gated(silu),relu' --shape 16x9", "last dimension must be even"},
      {"run --act 'gated(gated(silu))' --n 10", "cannot gate another gated"},
      {"run --act 'gated(silu,relu)' --n 10", "gated takes one activation"},
      {"run --act selu --n 10 --two-tensors", "are for gated activations"},
      {"run --act 'gated(silu)' --n 10 --direction backward --saved output", "takes its inputs a and b"},
      {"run --act 'gated(silu)' --n 10 --out-dtype f8e4m3 --backend opencl", "FP8 output is for CUDA only"},
      {"run --act 'gated(silu)' --n 10 --out-dtype f8e4m3 --direction backward --backend cuda",
       "is for the forward of a gated activation"},
      {"run --act silu --n 10 --out-dtype f8e4m3 --backend cuda", "is for the forward of a gated activation"},
      {"run --act 'gated(silu)' --n 10 --out-dtype f8", "unknown output dtype 'f8'"},
      {"run --act 'gated(silu)' --n 10 --out-dtype f8e4m3 --scale 0 --backend cuda", "--scale"},
      {"run --act 'gated(silu)' --n 10 --pad 2000000", "--pad"},
      {"bench --act 'gated(silu)' --n 1001", "its size must be even"},
      {"autotune --act 'gated(silu)' --n 1024 --out-dtype f8e4m3", "FP8 output is not tuned of its own"},
      {"autotune --act 'gated(silu)' --n 1025", "its size must be even"},
      {"check --act 'gated(silu)' --out-dtype f8e4m3 --backend opencl", "FP8 output is for CUDA only"},
  };
  for (const auto& c : cases) {
    const test::CliResult r = test::run_cli(c.args);
    INFO("kplay " << c.args << "\n" << r.output);
    CHECK(r.status == 2);
    CHECK(r.has(c.message));
  }
}

TEST_CASE("kplay emit renders gated kernels without a device") {
  const test::CliResult r =
      test::run_cli("emit --act 'gated(gelu(approximate=tanh))' --dtype bf16 --direction backward");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.has("#define KP_GATED 1"));
  CHECK(r.has("kplay_gated_gelu_h"));
}

namespace {
// One API call on a gated problem, every output element and the bytes around them checked.
// packed: a and b (and the gradients) the halves of one [rows, 2d] tensor, else two tensors; pads
// on every pitch; in place: the output over a (the gradients over a and b).
void check_gated_api(test::UserDevice& dev, Dtype dtype, Direction dir, bool packed, bool in_place,
                     std::int64_t rows = 7, std::int64_t d = 45) {
  const KernelSpec spec = gated("silu", dtype, dir);
  const bool backward = dir == Direction::backward;
  const std::size_t es = dtype_size(dtype);
  ReferenceProblem ref(spec, std::random_device{}());
  const std::int64_t pad = 3;
  const std::int64_t ld_x = packed ? 2 * d + pad : d + pad, ld_b = packed ? ld_x : d + 2 * pad, ld_g = d + 1;
  const std::int64_t ld_o = in_place ? ld_x : (packed && backward ? 2 * d + 2 : d + 5);
  // Host images, poisoned, the inputs placed.
  std::vector<unsigned char> x(static_cast<std::size_t>(rows * ld_x) * es, 0xCD),
      bb(static_cast<std::size_t>(rows * ld_b) * es, 0xCD), g(static_cast<std::size_t>(rows * ld_g) * es, 0xCD);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < d; ++c) {
      const std::uint64_t i = static_cast<std::uint64_t>(r * d + c);
      store_element(dtype, x.data(), static_cast<std::size_t>(r * ld_x + c), ref.x(i));
      if (packed)
        store_element(dtype, x.data(), static_cast<std::size_t>(r * ld_x + d + c), ref.b(i));
      else
        store_element(dtype, bb.data(), static_cast<std::size_t>(r * ld_b + c), ref.b(i));
      store_element(dtype, g.data(), static_cast<std::size_t>(r * ld_g + c), ref.grad(i));
    }
  void* dx = dev.allocate(x.size());
  void* db = packed ? nullptr : dev.allocate(bb.size());
  void* dg = dev.allocate(g.size());
  dev.upload(dx, x.data(), x.size());
  if (!packed) dev.upload(db, bb.data(), bb.size());
  dev.upload(dg, g.data(), g.size());
  // Outputs: [rows, d] (forward), grad_x [rows, 2d] (packed backward) or grad_a and grad_b.
  const std::size_t out_bytes = static_cast<std::size_t>(rows * ld_o) * es;
  std::vector<unsigned char> poison(out_bytes, 0xCD);
  void* o0 = in_place ? dx : dev.allocate(out_bytes);
  void* o1 = backward && !packed ? (in_place ? db : dev.allocate(out_bytes)) : nullptr;
  if (!in_place) {
    dev.upload(o0, poison.data(), out_bytes);
    if (o1) dev.upload(o1, poison.data(), out_bytes);
  }
  const Stream st = dev.stream();
  if (!backward && packed)
    gated_forward_packed("silu", dtype, dx, ld_x, o0, ld_o, rows, d, st);
  else if (!backward)
    gated_forward("gated(silu)", dtype, {dx, ld_x, 0}, {db, ld_b, 0}, {o0, ld_o, 0}, rows, d, st);
  else if (packed)
    gated_backward_packed("silu", dtype, dg, ld_g, dx, ld_x, o0, ld_o, rows, d, st);
  else
    gated_backward("silu", dtype, {dg, ld_g, 0}, {dx, ld_x, 0}, {db, ld_b, 0}, {o0, ld_o, 0},
                   {o1, in_place ? ld_b : ld_o, 0}, rows, d, st);
  std::vector<unsigned char> h0(in_place ? x.size() : out_bytes), h1(o1 ? (in_place ? bb.size() : out_bytes) : 0);
  dev.download(h0.data(), o0, h0.size());
  if (o1) dev.download(h1.data(), o1, h1.size());
  ErrorStats s(dtype, ulp_bound(spec), backward);
  std::size_t pads_touched = 0;
  const std::int64_t ld1 = in_place ? ld_b : ld_o;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < d; ++c) {
      const std::uint64_t i = static_cast<std::uint64_t>(r * d + c);
      const double gv = backward ? ref.grad(i) : 0.0;
      for (int o = 0; o < (backward ? 2 : 1); ++o) {
        const bool second_half = o == 1 && packed;
        const unsigned char* img = o == 0 || packed ? h0.data() : h1.data();
        const std::int64_t at = r * (o == 1 && !packed ? ld1 : ld_o) + c + (second_half ? d : 0);
        s.add(i, load_element(dtype, img, static_cast<std::size_t>(at)), ref.gated_expected(i, o),
              ref.gated_error_scale(gv, ref.x(i), ref.b(i), o));
      }
    }
  if (!in_place)  // the pads of the output keep the poison
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = (packed && backward ? 2 * d : d) * static_cast<std::int64_t>(es);
           c < ld_o * static_cast<std::int64_t>(es); ++c)
        pads_touched += h0[static_cast<std::size_t>(r * ld_o * static_cast<std::int64_t>(es) + c)] != 0xCD;
  INFO(to_string(spec) << (packed ? " packed" : " two tensors") << (in_place ? " in place" : "") << ": "
                       << s.summary());
  CHECK(s.mismatches == 0);
  CHECK(s.checked == static_cast<std::uint64_t>(rows * d * (backward ? 2 : 1)));
  CHECK(pads_touched == 0);
}

void check_gated_api_matrix(test::UserDevice& dev) {
  for (Dtype dtype : dev.dtypes())
    for (Direction dir : {Direction::forward, Direction::backward})
      for (bool packed : {true, false})
        for (bool in_place : {false, true}) check_gated_api(dev, dtype, dir, packed, in_place);
  check_gated_api(dev, Dtype::f32, Direction::forward, true, false, 1, 100003);  // one long row
  check_gated_api(dev, Dtype::bf16, Direction::backward, false, false, 0, 10);   // nothing to do
}

// The Launcher's gated launches give what the free functions give.
void check_gated_launcher(test::UserDevice& dev, const Launcher& fwd, const Launcher& bwd) {
  const std::int64_t rows = 5, d = 33;
  std::vector<float> x(static_cast<std::size_t>(rows * 2 * d)), g(static_cast<std::size_t>(rows * d));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 4);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(std::cos(0.11 * static_cast<double>(i)));
  void* dx = dev.allocate(x.size() * 4);
  void* dg = dev.allocate(g.size() * 4);
  void* o_api = dev.allocate(g.size() * 4);
  void* o_l = dev.allocate(g.size() * 4);
  void* gx_api = dev.allocate(x.size() * 4);
  void* gx_l = dev.allocate(x.size() * 4);
  dev.upload(dx, x.data(), x.size() * 4);
  dev.upload(dg, g.data(), g.size() * 4);
  const Stream st = dev.stream();
  gated_forward_packed("silu", Dtype::f32, dx, 2 * d, o_api, d, rows, d, st);
  fwd.launch_gated_forward({dx, 2 * d, 0}, {dx, 2 * d, d}, {o_l, d, 0}, rows, d, st.handle);
  gated_backward_packed("silu", Dtype::f32, dg, d, dx, 2 * d, gx_api, 2 * d, rows, d, st);
  bwd.launch_gated_backward({dg, d, 0}, {dx, 2 * d, 0}, {dx, 2 * d, d}, {gx_l, 2 * d, 0}, {gx_l, 2 * d, d}, rows, d,
                            st.handle);
  std::vector<float> a(g.size()), b(g.size()), c(x.size()), e(x.size());
  dev.download(a.data(), o_api, a.size() * 4);
  dev.download(b.data(), o_l, b.size() * 4);
  dev.download(c.data(), gx_api, c.size() * 4);
  dev.download(e.data(), gx_l, e.size() * 4);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
  CHECK(std::memcmp(c.data(), e.data(), c.size() * 4) == 0);
  CHECK(a[3] == static_cast<float>(reference::find("silu")->forward(x[3], nullptr) * static_cast<double>(x[d + 3])));
  // A gated launcher refuses the plain launch, and the other direction's.
  CHECK_THROWS_WITH_AS(fwd.launch(dx, nullptr, o_l, 10, st.handle), doctest::Contains("launch_gated_forward"), Error);
  CHECK_THROWS_WITH_AS(fwd.launch_gated_backward({dg, d, 0}, {dx, 2 * d, 0}, {dx, 2 * d, d}, {gx_l, 2 * d, 0},
                                                 {gx_l, 2 * d, d}, rows, d, st.handle),
                       doctest::Contains("this launcher is for the forward"), Error);
}
}  // namespace

TEST_SUITE("opencl") {
  TEST_CASE("API on OpenCL: gated activations in both layouts with pitches and in place; the Launcher") {
    std::string why;
    auto dev = test::opencl_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_gated_api_matrix(*dev);
    void* queue = dev->stream().handle;
    check_gated_launcher(*dev, Launcher::opencl("gated(silu)", Dtype::f32, Direction::forward, Saved::input, queue),
                         Launcher::opencl("gated(silu)", Dtype::f32, Direction::backward, Saved::input, queue));
    // FP8 on OpenCL: refused with a reason, nothing launched.
    void* buf = dev->allocate(4096);
    Fp8Output f8;
    f8.type = OutDtype::f8e4m3;
    CHECK_THROWS_WITH_AS(gated_forward("silu", Dtype::bf16, {buf, 16, 0}, {buf, 16, 8}, {dev->allocate(256), 8, 0}, 4,
                                       8, dev->stream(), f8),
                         doctest::Contains("FP8 output is for CUDA only"), Error);
  }

  TEST_CASE("kplay run, check, bench and autotune on gated activations (PoCL)") {
    const test::TempDir dir;
    const std::string env = "KPLAY_DB=" + dir.file("kernels.db");
    for (const char* args : {"run --act 'gated(silu)' --shape 64x2048 --backend opencl --check all",
                             "run --act 'gated(silu)' --shape 64x2048 --backend opencl --direction backward",
                             "run --act 'gated(silu)' --shape 3x4x2046 --backend opencl --dtype bf16 --two-tensors",
                             "run --act 'gated(gelu(approximate=tanh))' --shape 37x90 --backend opencl --dtype f16 "
                             "--pad 3 --in-offset 1 --out-offset 2 --check all --direction backward",
                             "run --act 'gated(relu)' --shape 16x64 --backend opencl --in-place --check all"}) {
      const test::CliResult r = test::run_cli(std::string(args) + " --repeat 3 --warmup 1", env);
      INFO("kplay " << args << "\n" << r.output);
      CHECK(r.status == 0);
      CHECK(r.has("verdict: PASS"));
      CHECK(r.has("ratio:"));
      CHECK(r.has("kplay_gated_"));
    }
    const test::CliResult c = test::run_cli("check --act 'gated(relu6)' --dtype bf16 --backend opencl", env);
    INFO(c.output);
    CHECK(c.status == 0);
    CHECK(c.has("64 values of b each"));
    CHECK(c.has("verdict: PASS"));
    const test::CliResult t =
        test::run_cli("autotune --act 'gated(relu)' --n 65536 --backend opencl --strategy fast --repeat 3", env);
    INFO(t.output);
    CHECK(t.status == 0);
    CHECK(t.has("0    gated(relu) forward"));  // the summary's row names it whole (it once cut it at 10)
    const test::CliResult b = test::run_cli("bench --act 'gated(relu)' --n 65536 --backend opencl --repeat 3", env);
    INFO(b.output);
    CHECK(b.status == 0);
    CHECK(b.has("gated(relu)"));
    const test::CliResult r = test::run_cli("run --act 'gated(relu)' --n 65536 --backend opencl --repeat 3", env);
    INFO(r.output);
    CHECK(r.has("tuned on this device"));  // the tuning is stored and served like any other
  }
}

TEST_SUITE("opencl") {
  TEST_CASE("kplay run --act 'gated(silu)' --shape 4096x28672, backward and bf16, passes on PoCL") {
    // The commands, each launch timed once (PoCL moves well under a GB/s).
    for (const char* more : {"", " --direction backward", " --dtype bf16", " --dtype bf16 --direction backward"}) {
      const test::CliResult r = test::run_cli(std::string("run --act 'gated(silu)' --shape 4096x28672 --backend opencl "
                                                          "--no-db --repeat 1 --warmup 0") +
                                              more);
      INFO("kplay run ...4096x28672" << more << "\n" << r.output);
      CHECK(r.status == 0);
      CHECK(r.has("4096x28672 = 117440512 elements"));
      CHECK(r.has("verdict: PASS"));
      CHECK(r.has("% of copy bandwidth"));
    }
  }
}

TEST_SUITE("cuda") {
  TEST_CASE("API on CUDA: gated activations in both layouts with pitches and in place; the Launcher; FP8") {
    std::string why;
    auto dev = test::cuda_user_device(&why);
    REQUIRE_MESSAGE(dev, why);
    check_gated_api_matrix(*dev);
    check_gated_launcher(*dev, Launcher::cuda("gated(silu)", Dtype::f32, Direction::forward, Saved::input, 0),
                         Launcher::cuda("gated(silu)", Dtype::f32, Direction::backward, Saved::input, 0));
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    // FP8 through the C API, the scale from device memory and by value alike.
    const std::int64_t rows = 3, d = 1000;
    std::vector<std::uint16_t> x(static_cast<std::size_t>(rows * 2 * d));
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = float_to_bf16_bits(static_cast<float>(std::sin(0.1 * static_cast<double>(i)) * 30));
    void* dx = dev->allocate(x.size() * 2);
    void* out = dev->allocate(static_cast<std::size_t>(rows * d));
    void* scale = dev->allocate(4);
    const float two = 2.0f;
    dev->upload(dx, x.data(), x.size() * 2);
    dev->upload(scale, &two, 4);
    std::vector<std::uint8_t> by_ptr(static_cast<std::size_t>(rows * d)), by_value(by_ptr.size());
    const kplay_status s1 =
        kplay_gated_forward_fp8(KPLAY_BACKEND_CUDA, "silu", KPLAY_BF16, KPLAY_FP8_E4M3, dx, 0, 2 * d, dx, d, 2 * d, out,
                                0, d, rows, d, static_cast<const float*>(scale), 0.0f, nullptr);
    if (!be->limits().fp8) {
      CHECK(s1 == KPLAY_ERROR_UNSUPPORTED);
      CHECK(last().find("sm_89") != std::string::npos);
      return;
    }
    REQUIRE_MESSAGE(s1 == KPLAY_OK, last());
    dev->download(by_ptr.data(), out, by_ptr.size());
    REQUIRE(kplay_gated_forward_fp8(KPLAY_BACKEND_CUDA, "silu", KPLAY_BF16, KPLAY_FP8_E4M3, dx, 0, 2 * d, dx, d, 2 * d,
                                    out, 0, d, rows, d, nullptr, 2.0f, nullptr) == KPLAY_OK);
    dev->download(by_value.data(), out, by_value.size());
    CHECK(by_ptr == by_value);
    std::size_t off = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < d; ++c) {
        const double a = bf16_bits_to_float(x[static_cast<std::size_t>(r * 2 * d + c)]);
        const double b = bf16_bits_to_float(x[static_cast<std::size_t>(r * 2 * d + d + c)]);
        const double exact = std::max(-448.0, std::min(448.0, reference::find("silu")->forward(a, nullptr) * b / 2.0));
        const double got = fp8_to_double(OutDtype::f8e4m3, by_ptr[static_cast<std::size_t>(r * d + c)]);
        off += std::fabs(got - exact) > kFp8BoundUlps * fp8_ulp(OutDtype::f8e4m3, exact);
      }
    CHECK(off == 0);
  }
}

#ifdef KPLAY_WITH_CUDA
TEST_SUITE("nvrtc") {
  TEST_CASE("gated kernels compile for sm_90, FP8 ones for sm_89 and sm_90 with one cvt.rn.satfinite each") {
    TargetLimits lim;
    lim.fp8 = true;
    auto compile = [&](const KernelSpec& s, int arch, Layout layout, bool ptx) {
      Dialect dialect = rt::dialect_of("cuda");
      dialect.fast_fp64 = true;
      const RenderedKernel k = render_kernel(s, resolve_config(s, {}, lim), dialect, layout);
      rt::cuda::CompileTarget t;
      t.arch = arch;
      t.ptx = ptx;
      return rt::cuda::Nvrtc::get().compile(k, t);
    };
    auto ptx = [&](const KernelSpec& s, int arch, Layout layout) { return compile(s, arch, layout, true).bytes; };
    for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
      for (Layout layout : {Layout::flat, Layout::general}) {
        for (Direction dir : {Direction::forward, Direction::backward}) {
          INFO(std::string(to_string(dtype))
               << " " << std::string(to_string(dir)) << " " << std::string(to_string(layout)));
          CHECK(ptx(gated("silu", dtype, dir), 90, layout).find(".entry kplay_gated_silu") != std::string::npos);
        }
        for (OutDtype out : {OutDtype::f8e4m3, OutDtype::f8e5m2})
          for (int arch : {89, 90}) {
            const std::string text = ptx(gated("gelu", dtype, Direction::forward, out), arch, layout);
            INFO(std::string(to_string(dtype))
                 << " " << std::string(to_string(out)) << " sm_" << arch << " " << std::string(to_string(layout)));
            CHECK(text.find(out == OutDtype::f8e4m3 ? "cvt.rn.satfinite.e4m3x2.f32" : "cvt.rn.satfinite.e5m2x2.f32") !=
                  std::string::npos);
            // ptxas takes it too: the cubin the runtime path builds for such a device.
            const rt::Binary cubin = compile(gated("gelu", dtype, Direction::forward, out), arch, layout, false);
            CHECK(cubin.format == "cubin");
            CHECK_FALSE(cubin.bytes.empty());
          }
        // The gated backward's second output, wide and element by element, through ptxas.
        CHECK(compile(gated("silu", dtype, Direction::backward), 90, layout, false).format == "cubin");
      }
  }

  TEST_CASE("gated FP8 output divides by the scale once per thread, not per element") {
    TargetLimits lim;
    lim.fp8 = true;
    Dialect dialect = rt::dialect_of("cuda");
    dialect.fast_fp64 = true;
    auto count = [](const std::string& text, const std::string& what) {
      std::size_t n = 0;
      for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    for (Dtype dtype : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
      for (Layout layout : {Layout::flat, Layout::general}) {
        KernelSpec s = gated("silu", dtype, Direction::forward, OutDtype::f8e5m2);
        KernelConfig c;
        c.per_thread = 2;
        const RenderedKernel k = render_kernel(s, resolve_config(s, c, lim), dialect, layout);
        rt::cuda::CompileTarget t;
        t.arch = 90;
        t.ptx = true;
        const std::string ptx = rt::cuda::Nvrtc::get().compile(k, t).bytes;
        INFO(std::string(to_string(dtype)) << " " << std::string(to_string(layout)));
        // The reciprocal: 1.0 / s in double (rcp.rn.f64) where the math is double, else an IEEE
        // float division; no other division.
        const bool wide = dtype == Dtype::f32 || dtype == Dtype::f64;
        CHECK(count(ptx, wide ? "rcp.rn.f64" : "div.rn.f32") == 1);
        CHECK(count(ptx, "div.rn.f64") == 0);
        CHECK(count(ptx, wide ? "div.rn.f32" : "rcp.rn.f64") == 0);
        CHECK(count(ptx, "cvt.rn.satfinite.e5m2x2.f32") >= 1);
      }
  }

  TEST_CASE("gated float16 kernels keep e^x's subnormal results, which meet an infinite b") {
    // Outside gated kernels float16 flushes them (MUFU.EX2 alone: narrow_math.h); inside, a
    // flushed silu(-90) = -7.4e-38 times b = inf would be NaN where the exact product is infinite.
    Dialect dialect = rt::dialect_of("cuda");
    auto ptx = [&](const KernelSpec& s) {
      rt::cuda::CompileTarget t;
      t.arch = 90;
      t.ptx = true;
      return rt::cuda::Nvrtc::get().compile(render_kernel(s, resolve_config(s, {}, TargetLimits{}), dialect), t).bytes;
    };
    for (const char* text : {"silu", "mish", "gelu(approximate=tanh)", "gelu", "sigmoid", "quick_gelu", "softplus"})
      for (Direction dir : {Direction::forward, Direction::backward}) {
        INFO(text << " " << std::string(to_string(dir)));
        CHECK(ptx(gated(text, Dtype::f16, dir)).find("ex2.approx.ftz.f32") == std::string::npos);
      }
    KernelSpec plain;
    plain.activation = "silu";
    plain.dtype = Dtype::f16;
    CHECK(ptx(plain).find("ex2.approx.ftz.f32") != std::string::npos);
  }
}
#endif
