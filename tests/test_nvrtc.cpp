// NVRTC without a GPU: every activation and knob compiles for sm_80 and sm_90, the float32
// vector-4 kernel really does 16-byte accesses, and compile errors point at the template line.
#include <doctest/doctest.h>

#include "activation_cases.hpp"

#ifdef KPLAY_WITH_CUDA
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "runtime/cuda/nvrtc_compiler.hpp"
#include "spec/activations.hpp"
#include "temp_templates.hpp"

using namespace kplay;
using rt::cuda::choose_target;
using rt::cuda::CompileTarget;
using rt::cuda::Nvrtc;

TEST_CASE("target choice: own cubin, PTX fallback for newer devices, error naming both versions") {
  const std::vector<int> archs = {75, 80, 86, 89, 90};
  CompileTarget t = choose_target(90, archs, "13.0", "13.0");
  CHECK(t.arch == 90);
  CHECK_FALSE(t.ptx);
  CHECK(t.describe() == "sm_90 cubin");
  t = choose_target(120, archs, "12.4", "13.0");
  CHECK(t.ptx);
  CHECK(t.arch == 90);
  CHECK(t.note.find("NVRTC 12.4 does not know sm_120") != std::string::npos);
  try {
    choose_target(60, archs, "13.0", "12.8");
    FAIL("sm_60 was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("NVRTC 13.0") != std::string::npos);
    CHECK(std::string(e.what()).find("driver 12.8") != std::string::npos);
  }
}

TEST_SUITE("nvrtc") {
  namespace {
  std::string ptx_for(const KernelSpec& s, const KernelConfig& c, int arch, bool fast_fp64 = false,
                      const TargetLimits& limits = TargetLimits{}) {
    Dialect dialect = rt::dialect_of("cuda");
    dialect.fast_fp64 = fast_fp64;
    const RenderedKernel k = render_kernel(s, resolve_config(s, c, limits), dialect);
    CompileTarget t;
    t.arch = arch;
    t.ptx = true;
    return Nvrtc::get().compile(k, t).bytes;
  }
  }  // namespace

  TEST_CASE("NVRTC reports its version and architectures, sm_80 and sm_90 among them") {
    const auto archs = Nvrtc::get().supported_archs();
    CHECK(std::find(archs.begin(), archs.end(), 80) != archs.end());
    CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
    CHECK_FALSE(Nvrtc::get().version().empty());
  }

  TEST_CASE("every knob combination compiles for sm_80 and sm_90") {
    // The full product of the knobs that change the code (the grid policy does not; see
    // test_codegen) for float32 forward, split over threads since NVRTC is thread-safe. The knobs
    // shape the generic kernel, not the activation math, so two activations cover them (every
    // activation compiles in the test below).
    std::vector<std::pair<KernelSpec, KernelConfig>> jobs;
    for (const char* act : {"selu", "relu"})
      for (int vec : {1, 2, 4})
        for (int block : {32, 64, 128, 256, 512, 1024})
          for (int pt : {1, 2, 4, 8})
            for (bool fast : {false, true})
              for (CacheHint cache : {CacheHint::normal, CacheHint::streaming}) {
                KernelSpec s;
                s.activation = act;
                KernelConfig c;
                c.vec = vec;
                c.block = block;
                c.per_thread = pt;
                c.fast_math = fast;
                c.cache = cache;
                jobs.emplace_back(s, c);
              }
    std::atomic<std::size_t> next{0}, failures{0};
    std::mutex m;
    std::string first_failure;
    auto worker = [&] {
      for (std::size_t i; (i = next++) < jobs.size();) {
        for (int arch : {80, 90}) {
          try {
            ptx_for(jobs[i].first, jobs[i].second, arch);
          } catch (const Error& e) {
            std::lock_guard<std::mutex> lock(m);
            if (failures++ == 0) first_failure = e.describe();
          }
        }
      }
    };
    std::vector<std::thread> threads;
    const unsigned n = std::max(2u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    INFO(first_failure);
    CHECK(failures == 0);
    CHECK(jobs.size() == 2 * 3 * 6 * 4 * 2 * 2);
  }

  TEST_CASE("every row strategy compiles for sm_90, each member, dtype and direction, with fast FP64 and without") {
    // The CUDA-only forms too (clusters, the pipelined kernel and its kept terms), which a machine
    // without an sm_90 GPU runs nowhere else. float16 takes bfloat16's float path.
    TargetLimits h200;
    h200.backend = "cuda";
    h200.max_cluster = 16;
    h200.max_shared_optin = 227 * 1024;
    struct Form {
      RowStrategy row;
      int cluster, per_thread;
      bool pipelined;
    };
    const Form forms[] = {{RowStrategy::registers, 0, 4, false}, {RowStrategy::registers, 0, 2, true},
                          {RowStrategy::shared, 0, 4, false},    {RowStrategy::online, 0, 4, false},
                          {RowStrategy::cluster, 4, 4, false},   {RowStrategy::cluster, 16, 4, true},
                          {RowStrategy::registers, 8, 2, false}, {RowStrategy::online, 16, 2, false}};
    for (const auto& member : row_activations())
      for (Dtype d : {Dtype::f32, Dtype::bf16, Dtype::f64})
        for (Direction dir : {Direction::forward, Direction::backward})
          for (const Form& f : forms)
            for (bool fast_fp64 : {true, false}) {
              if (!fast_fp64 && d != Dtype::f32) continue;  // the dialect's choice matters below float64 only
              KernelSpec s;
              s.activation = member.name;
              s.dtype = d;
              s.direction = dir;
              s.saved = Saved::output;
              KernelConfig c;
              c.row = f.row;
              c.cluster = f.cluster;
              c.block = 256;
              c.per_thread = f.per_thread;
              if (f.pipelined) {
                c.grid = GridPolicy::grid_stride;
                c.waves = 1;
              }
              CAPTURE(to_string(s));
              CAPTURE(to_string(f.row));
              CAPTURE(f.cluster);
              CAPTURE(f.pipelined);
              CAPTURE(fast_fp64);
              CHECK_NOTHROW(ptx_for(s, c, 90, fast_fp64, h200));
            }
    // The pipelined kernel's forms that codegen takes only when asked: float32 softmax computing
    // its terms again (--recompute-terms), and the 16-bit forward's one exchange a row.
    auto pipelined = [&](const std::string& act, Dtype d, bool recompute, const char* define) {
      KernelSpec s;
      s.activation = act;
      s.dtype = d;
      KernelConfig c;
      c.row = RowStrategy::cluster;
      c.cluster = 16;
      c.block = 256;
      c.per_thread = 4;
      c.grid = GridPolicy::grid_stride;
      c.waves = 1;
      c.recompute_terms = recompute;
      CAPTURE(to_string(s));
      CHECK(render_kernel(s, resolve_config(s, c, h200), rt::dialect_of("cuda")).source.find(define) !=
            std::string::npos);
      CHECK_NOTHROW(ptx_for(s, c, 90, true, h200));
    };
    for (const char* member : {"softmax", "softmin"}) pipelined(member, Dtype::f32, true, "#define KP_STAGE_KEEP 0");
    setenv("KPLAY_ROW_XCHG1", "all", 1);
    for (const auto& member : row_activations()) pipelined(member.name, Dtype::bf16, false, "#define KP_XCHG1 1");
    unsetenv("KPLAY_ROW_XCHG1");
  }

  TEST_CASE("every activation case, dtype and direction compiles") {
    for (const auto& text : test::activation_cases())
      for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
        for (int dir = 0; dir < 3; ++dir) {
          if (dir == 2 && !resolve_activation(text).has_grad_from_output()) continue;
          KernelSpec s;
          s.activation = resolve_activation(text).canonical;
          s.dtype = d;
          s.direction = dir == 0 ? Direction::forward : Direction::backward;
          s.saved = dir == 2 ? Saved::output : Saved::input;
          CAPTURE(to_string(s));
          CHECK_NOTHROW(ptx_for(s, {}, 90));
        }
  }

  TEST_CASE("with fast FP64, the float32 transcendental kernels compile and do their math in double (or lean float)") {
    for (const auto& text : test::activation_cases())
      for (int dir = 0; dir < 2; ++dir) {
        KernelSpec s;
        s.activation = resolve_activation(text).canonical;
        s.direction = dir == 0 ? Direction::forward : Direction::backward;
        CAPTURE(to_string(s));
        std::string ptx;
        CHECK_NOTHROW(ptx = ptx_for(s, {}, 90, true));
        const std::string name = resolve_activation(text).act->name;
        // float32 gelu (erf) forward is float alone on every device; its backward and gelu(tanh)
        // stay in double, gelu(tanh) forward for its exponent only (precise_math.h, fp64_math.h).
        const bool gelu_forward = name == "gelu" && s.direction == Direction::forward;
        const bool float_alone = gelu_forward && resolve_activation(text).params[0] == 0;
        // sigmoid, silu, tanh, elu, celu (alpha = 1), logsigmoid and softplus (beta = 1) forward
        // take f32_math.h's float routines (KP_F32_LEAN).
        const double p0 = resolve_activation(text).params.empty() ? 0.0 : resolve_activation(text).params[0];
        const bool lean = s.direction == Direction::forward &&
                          (name == "silu" || name == "sigmoid" || name == "tanh" || name == "elu" ||
                           name == "logsigmoid" || ((name == "celu" || name == "softplus") && p0 == 1.0));
        const bool in_double =
            !lean && ((name == "gelu" && !float_alone) || name == "silu" || name == "quick_gelu" || name == "sigmoid" ||
                      name == "tanh" || name == "softplus" || name == "logsigmoid" || name == "tanhshrink" ||
                      name == "mish" || name == "selu" || name == "elu" || name == "celu");
        const bool exp_only = name == "selu" || name == "elu" || name == "celu" || gelu_forward;  // no reciprocal
        if (in_double) CHECK(ptx.find(exp_only ? ".f64" : "rcp.approx.ftz.f64") != std::string::npos);
        if (!in_double) CHECK(ptx.find(".f64") == std::string::npos);
      }
  }

  TEST_CASE("float32 hardsigmoid and hardswish divide by 6 without div.rn.f32 (f32_math.h's kp_f_div6)") {
    for (const char* name : {"hardsigmoid", "hardswish"})
      for (int dir = 0; dir < 2; ++dir) {
        KernelSpec s;
        s.activation = name;
        s.direction = dir == 0 ? Direction::forward : Direction::backward;
        CAPTURE(to_string(s));
        CHECK(ptx_for(s, {}, 90).find("div.rn.f32") == std::string::npos);
        // float64 keeps its own division.
        s.dtype = Dtype::f64;
        CHECK(ptx_for(s, {}, 90).find("div.rn.f64") != std::string::npos);
      }
  }

  TEST_CASE("a float32 vector-4 kernel does 16-byte global loads and stores") {
    KernelSpec s;
    const std::string ptx = ptx_for(s, {}, 90);
    CHECK(ptx.find("ld.global.v4.") != std::string::npos);
    CHECK(ptx.find("st.global.v4.") != std::string::npos);
    KernelConfig streaming;
    streaming.cache = CacheHint::streaming;
    const std::string cs = ptx_for(s, streaming, 90);
    CHECK(cs.find("ld.global.cs.v4.") != std::string::npos);
    CHECK(cs.find("st.global.cs.v4.") != std::string::npos);
    KernelConfig scalar;
    scalar.vec = 1;
    CHECK(ptx_for(s, scalar, 90).find(".v4.") == std::string::npos);
  }

  TEST_CASE("precise SELU calls expm1, not exp(x)-1; fast-math uses the hardware exponential") {
    KernelSpec s;
    const std::string precise = ptx_for(s, {}, 90);
    KernelConfig fast;
    fast.fast_math = true;
    const std::string approx = ptx_for(s, fast, 90);
    CHECK(approx.find("ex2.approx") != std::string::npos);
    CHECK(precise != approx);
  }

  TEST_CASE("prelu and training(rrelu) compile in every dtype, direction and layout, prelu's weight gradient too") {
    for (const char* act : {"prelu", "training(rrelu(lower=0.1, upper=0.6))"})
      for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
        for (Direction dir : {Direction::forward, Direction::backward}) {
          KernelSpec s;
          s.activation = act;
          s.dtype = d;
          s.direction = dir;
          std::vector<Layout> layouts = {Layout::flat, Layout::general};
          if (dir == Direction::backward && std::string(act) == "prelu")
            layouts.insert(layouts.end(), {Layout::wgrad_parts, Layout::wgrad_sum});
          for (Layout layout : layouts) {
            INFO(to_string(s) << " " << std::string(to_string(layout)));
            const RenderedKernel k =
                render_kernel(s, resolve_config(s, {}, TargetLimits{}), rt::dialect_of("cuda"), layout);
            CompileTarget t;
            t.arch = 90;
            t.ptx = true;
            const std::string ptx = Nvrtc::get().compile(k, t).bytes;
            CHECK(ptx.find(k.entry) != std::string::npos);
            // The weight gradient sums through shared memory with barriers, and never atomically.
            if (layout == Layout::wgrad_parts) {
              CHECK(ptx.find(".shared") != std::string::npos);
              CHECK(ptx.find("bar.sync") != std::string::npos);
            }
            if (layout == Layout::wgrad_parts || layout == Layout::wgrad_sum)
              CHECK(ptx.find("atom.") == std::string::npos);
          }
        }
  }

  TEST_CASE("a compile error carries the log with the template file and line, and the options") {
    test::TempTemplates dir;
    const std::string broken = template_text("activations/selu.h") + "\nthis is not C;\n";
    dir.write("activations/selu.h", broken);
    KernelSpec s;
    try {
      ptx_for(s, {}, 90);
      FAIL("compiling a broken template succeeded");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::compile_failed);
      CHECK(std::string(e.what()).find("activations/selu.h(") != std::string::npos);
      const auto line = std::count(broken.begin(), broken.end(), '\n');  // the added line's number
      CHECK(e.log().find("activations/selu.h(" + std::to_string(line) + ")") != std::string::npos);
      CHECK(e.options().find("--gpu-architecture=compute_90") != std::string::npos);
    }
  }
}
#endif
