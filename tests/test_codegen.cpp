// Rendering: the source is self-contained, marked with #line per template, and its hash moves
// exactly when something that affects the binary moves.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "temp_templates.hpp"

using namespace kplay;

namespace {
RenderedKernel render(const KernelSpec& s, KernelConfig c = {}, const Dialect& d = rt::dialect_of("cuda")) {
  return render_kernel(s, resolve_config(s, c, TargetLimits{}), d);
}
}  // namespace

TEST_CASE("rendered source carries the knobs and #line markers for every template") {
  KernelSpec s;
  const RenderedKernel k = render(s);
  CHECK(k.entry == "kplay_selu_fwd_f32_v4_b256_p1_cd_pm");
  CHECK(k.source.find("#define KP_ENTRY kplay_selu_fwd_f32_v4_b256_p1_cd_pm") != std::string::npos);
  CHECK(k.source.find("#define KP_VEC_BYTES 16") != std::string::npos);
  CHECK(k.source.find("#line 1 \"cuda/prelude.cuh\"") != std::string::npos);
  CHECK(k.source.find("#line 1 \"activations/selu.h\"") != std::string::npos);
  CHECK(k.source.find("#line 1 \"common/elementwise.h\"") != std::string::npos);
  CHECK(k.source.find("#line 1 \"common/precise_math.h\"") != std::string::npos);  // float32
  CHECK(k.options_string() == "-default-device -fmad=false");                      // float-float math: no contraction
  CHECK(k.hash.size() == 16);
  KernelSpec h = s;
  h.dtype = Dtype::bf16;
  CHECK(render(h).options_string() == "-default-device -prec-div=false");  // 16-bit: full-range division
  CHECK(render(h).source.find("#line 1 \"common/precise_math.h\"") == std::string::npos);
}

TEST_CASE("the hash is stable and changes with every knob that changes the code") {
  KernelSpec s;
  const std::string base = render(s).hash;
  CHECK(render(s).hash == base);
  KernelConfig c;
  c.block = 128;
  CHECK(render(s, c).hash != base);
  c = {};
  c.vec = 2;
  CHECK(render(s, c).hash != base);
  c = {};
  c.per_thread = 2;
  CHECK(render(s, c).hash != base);
  c = {};
  c.fast_math = true;
  const RenderedKernel fast = render(s, c);
  CHECK(fast.hash != base);
  CHECK(fast.options_string().find("--use_fast_math") != std::string::npos);
  c = {};
  c.cache = CacheHint::streaming;
  CHECK(render(s, c).hash != base);
  KernelSpec r = s;
  r.activation = "relu";
  CHECK(render(r).hash != base);
  c = {};
  c.flat = false;  // a launch choice: the general kernel renders as it always does
  CHECK(render(s, c).hash == base);
  KernelSpec b = s;
  b.direction = Direction::backward;
  CHECK(render(b).hash != base);
  c = {};
  c.late_gradient = true;
  const RenderedKernel late = render(b, c);
  CHECK(late.hash != render(b).hash);
  CHECK(late.source.find("#define KP_LATE_GRAD 1") != std::string::npos);
  CHECK(late.entry.find("_lg") != std::string::npos);
  CHECK(render(b).source.find("#define KP_LATE_GRAD 0") != std::string::npos);
  b.saved = Saved::output;
  CHECK(render(b).hash != render([] {
                            KernelSpec t;
                            t.direction = Direction::backward;
                            return t;
                          }())
                              .hash);
}

TEST_CASE("the grid policy changes only the launch, so it shares the binary") {
  KernelSpec s;
  KernelConfig c;
  c.grid = GridPolicy::grid_stride;
  c.waves = 8;
  CHECK(render(s, c).hash == render(s).hash);
}

TEST_CASE("KPLAY_TEMPLATE_DIR: an edited template changes the source and the hash") {
  KernelSpec s;
  const RenderedKernel before = render(s);
  test::TempTemplates dir;
  CHECK(render(s).hash == before.hash);  // same text from disk: same key
  dir.write("activations/selu.h", template_text("activations/selu.h") + "\n/* edited */\n");
  const RenderedKernel after = render(s);
  CHECK(after.hash != before.hash);
  CHECK(after.source.find("/* edited */") != std::string::npos);
}

TEST_CASE("a missing template in KPLAY_TEMPLATE_DIR is reported with its path") {
  test::TempTemplates dir;
  std::filesystem::remove(std::filesystem::path(dir.dir()) / "activations" / "relu.h");
  KernelSpec s;
  s.activation = "relu";
  CHECK_THROWS_WITH_AS(render(s), doctest::Contains("activations/relu.h"), Error);
}

TEST_CASE("every dtype and direction renders for both dialects") {
  for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
    for (Direction dir : {Direction::forward, Direction::backward}) {
      KernelSpec s;
      s.dtype = d;
      s.direction = dir;
      CHECK(render(s).source.find(std::string("#define KP_DTYPE_") +
                                  (d == Dtype::f32    ? "F32"
                                   : d == Dtype::f16  ? "F16"
                                   : d == Dtype::bf16 ? "BF16"
                                                      : "F64") +
                                  " 1") != std::string::npos);
    }
}

TEST_CASE("the fast-FP64 trait reaches the kernel as KP_FAST_FP64 and moves the hash") {
  KernelSpec s;
  s.activation = "gelu";
  Dialect fast = rt::dialect_of("cuda");
  fast.fast_fp64 = true;
  const RenderedKernel slow_k = render(s);
  const RenderedKernel fast_k = render(s, {}, fast);
  CHECK(slow_k.source.find("#define KP_FAST_FP64 0") != std::string::npos);
  CHECK(fast_k.source.find("#define KP_FAST_FP64 1") != std::string::npos);
  CHECK(fast_k.source.find("#line 1 \"common/fp64_math.h\"") != std::string::npos);
  CHECK(slow_k.entry == fast_k.entry);  // same knobs, different code: the hash tells them apart
  CHECK(slow_k.hash != fast_k.hash);
  s.dtype = Dtype::bf16;  // no double path: the same kernel on every device
  CHECK(render(s).hash == render(s, {}, fast).hash);
  s.dtype = Dtype::f32;
  KernelConfig fm;
  fm.fast_math = true;
  CHECK(render(s, fm).hash == render(s, fm, fast).hash);
}

TEST_CASE("float32 IEEE kernels take the lean float routines unless KPLAY_F32_LEAN=0") {
  KernelSpec s;
  s.activation = "silu";
  unsetenv("KPLAY_F32_LEAN");
  const RenderedKernel lean = render(s);
  CHECK(lean.source.find("#define KP_F32_LEAN 1") != std::string::npos);
  CHECK(lean.source.find("#line 1 \"common/f32_math.h\"") != std::string::npos);
  setenv("KPLAY_F32_LEAN", "0", 1);
  const RenderedKernel off = render(s);
  unsetenv("KPLAY_F32_LEAN");
  CHECK(off.source.find("#define KP_F32_LEAN 0") != std::string::npos);
  CHECK(off.hash != lean.hash);
  // other dtypes and fast-math never name it: their sources and hashes stay as they were
  KernelSpec h = s;
  h.dtype = Dtype::bf16;
  CHECK(render(h).source.find("#define KP_F32_LEAN") == std::string::npos);
  KernelConfig c;
  c.fast_math = true;
  CHECK(render(s, c).source.find("#define KP_F32_LEAN") == std::string::npos);
}

TEST_CASE("accuracy=torch: the snippets' float formula, torch's compiler options, and float32 only") {
  KernelSpec exact;
  exact.activation = "silu";
  KernelSpec tier = exact;
  tier.activation = "silu(accuracy=torch)";
  Dialect fast = rt::dialect_of("cuda");
  fast.fast_fp64 = true;
  const RenderedKernel e = render(exact, {}, fast);
  const RenderedKernel t = render(tier, {}, fast);
  CHECK(e.source.find("#define KP_F32_IEEE 1") != std::string::npos);
  CHECK(t.source.find("#define KP_F32_IEEE 0") != std::string::npos);
  CHECK(t.source.find("#define KP_TORCH_TIER 1") != std::string::npos);
  CHECK(t.source.find("#define KP_FAST_FP64 0") != std::string::npos);  // no double path either
  CHECK(t.source.find("#define KP_F32_LEAN") == std::string::npos);
  const auto has = [](const RenderedKernel& k, const std::string& o) {
    return std::find(k.options.begin(), k.options.end(), o) != k.options.end();
  };
  CHECK(has(e, "-fmad=false"));
  CHECK_FALSE(has(t, "-fmad=false"));  // contraction on, as torch's nvcc builds
  CHECK(e.entry != t.entry);
  // accuracy=exact is the default: the same kernel as no parameter
  KernelSpec named = exact;
  named.activation = resolve_activation("silu(accuracy=exact)").canonical;  // as every caller passes it
  CHECK(render(named).hash == render(exact).hash);
  for (Dtype d : {Dtype::f16, Dtype::bf16, Dtype::f64}) {
    KernelSpec other = tier;
    other.dtype = d;
    CAPTURE(to_string(d));
    CHECK_THROWS_WITH_AS(render(other), doctest::Contains("float32 tier"), Error);
  }
  KernelConfig fm;
  fm.fast_math = true;
  CHECK_THROWS_WITH_AS(render(tier, fm), doctest::Contains("pick one"), Error);
}
