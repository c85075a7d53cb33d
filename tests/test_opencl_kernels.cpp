// Kernels launched on OpenCL (PoCL on the CPU where there is no GPU, NVIDIA's driver where there
// is) and checked element by element against the double reference, plus what is particular to
// the OpenCL backend: build logs that name template lines, storable binaries, element offsets
// of cl_mem buffers, 2-D launches with pitches, concurrent launches, profiling-event timing, and
// backends made from a caller's command queue (the public API's way in).
// The "opencl" suite runs only where an OpenCL device is present (ctest's "opencl" test;
// skipped, with the reason, elsewhere); the log-mapping case needs no device.
#include <doctest/doctest.h>

#ifdef KPLAY_WITH_OPENCL
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CL/cl.h>

#include "check/exhaustive_check.hpp"
#include "cli_runner.hpp"
#include "codegen/config_validation.hpp"
#include "device_checks.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "runtime/opencl/opencl_backend.hpp"
#include "runtime/opencl/opencl_program.hpp"
#include "temp_templates.hpp"
#include "util/host_dtype.hpp"

using namespace kplay;

TEST_CASE("OpenCL build logs: '<kernel>:LINE' locations map back to template files and lines") {
  const std::string source =
      "#define KP_VEC 4\n"                     // 1
      "#line 1 \"opencl/prelude.cl\"\n"        // 2
      "typedef float KP_C;\n"                  // 3 -> prelude.cl:1
      "#define KP_FN static inline\n"          // 4 -> prelude.cl:2
      "#line 1 \"activations/selu.h\"\n"       // 5
      "/* SELU */\n"                           // 6 -> selu.h:1
      "KP_FN KP_C kp_act_forward(KP_C x) {\n"  // 7 -> selu.h:2
      "  return oops;\n";                      // 8 -> selu.h:3
  const std::string log =
      "<kernel>:8:10: error: use of undeclared identifier 'oops'\n"
      "error: <source>:4:1: warning here\n"
      "<kernel>:1:1: note: before any marker stays as it is\n"
      "activations/selu.h:3:10: error: already mapped by the driver";
  const std::string mapped = rt::opencl::map_log_locations(log, source);
  CHECK(mapped.find("activations/selu.h:3:10: error: use of undeclared identifier 'oops'") != std::string::npos);
  CHECK(mapped.find("error: opencl/prelude.cl:2:1: warning here") != std::string::npos);
  CHECK(mapped.find("<kernel>:1:1: note") != std::string::npos);
  CHECK(mapped.find("activations/selu.h:3:10: error: already mapped") != std::string::npos);
  CHECK(rt::opencl::first_error_line(mapped) == "activations/selu.h:3:10: error: use of undeclared identifier 'oops'");
}

TEST_CASE("OpenCL kernels take element offsets: the element size follows from the entry name") {
  CHECK(rt::opencl::entry_element_size("kplay_selu_fwd_f32_v4_b256_p1_cd_pm") == 4);
  CHECK(rt::opencl::entry_element_size("kplay_relu_bwdx_f16_v8_b32_p3_cd_fm") == 2);
  CHECK(rt::opencl::entry_element_size("kplay_relu_bwdy_bf16_v8_b32_p3_cd_pm") == 2);
  CHECK(rt::opencl::entry_element_size("kplay_selu_fwd_f64_v2_b1024_p16_cd_pm") == 8);
  CHECK_THROWS_AS(rt::opencl::entry_element_size("my_kernel"), Error);
}

TEST_SUITE("opencl") {
  namespace {
  rt::Backend& opencl_backend() {
    rt::Backend* be = test::shared_backend("opencl");
    REQUIRE(be != nullptr);
    return *be;
  }

  // A BinaryStore in memory: what the kernel database does, without the database.
  class MemoryStore : public BinaryStore {
   public:
    bool get(const std::string& key, rt::Binary& out) override {
      std::lock_guard<std::mutex> lock(m_);
      auto it = binaries.find(key);
      if (it == binaries.end()) return false;
      out = it->second;
      return true;
    }
    void put(const std::string& key, const rt::Binary& b) override {
      std::lock_guard<std::mutex> lock(m_);
      binaries[key] = b;
    }
    void drop(const std::string& key) override {
      std::lock_guard<std::mutex> lock(m_);
      binaries.erase(key);
      ++drops;
    }
    std::unique_ptr<KeyLock> lock(const std::string&) override { return nullptr; }
    std::map<std::string, rt::Binary> binaries;
    int drops = 0;

   private:
    std::mutex m_;
  };

  // Reads a popen()ed command's output to the end, closes it, returns its exit status.
  int finish(FILE* p, std::string& output) {
    char buf[4096];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) output.append(buf, n);
    const int raw = pclose(p);
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  }

  // kplay's command line (tests/cli_runner.hpp): its exit status, its output appended to `output`.
  int run_cli(const std::string& args, std::string& output) {
    const test::CliResult r = test::run_cli(args);
    output += r.output;
    return r.status;
  }
  }  // namespace

  TEST_CASE("OpenCL: every activation, direction, dtype, size, tail, offset and in-place matches the reference") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    const std::vector<Dtype>& dtypes = be.limits().dtypes;  // float64 only with cl_khr_fp64
    const bool f64 = std::find(dtypes.begin(), dtypes.end(), Dtype::f64) != dtypes.end();
    MESSAGE("OpenCL device " << be.info().name << ": " << dtypes.size() << " dtypes"
                             << std::string(f64 ? "" : " (no cl_khr_fp64: float64 not offered)"));
    test::check_backend_kernels(engine, dtypes);
  }

  TEST_CASE("OpenCL: float32 transcendental activations pass by both math paths, double and float-float") {
    rt::Backend& be = opencl_backend();
    const bool cpu_fp64 =
        std::find(be.limits().dtypes.begin(), be.limits().dtypes.end(), Dtype::f64) != be.limits().dtypes.end();
    MESSAGE("OpenCL device " << be.info().name << ": fast FP64 " << std::string(be.info().fast_fp64 ? "yes" : "no"));
    // PoCL runs on the CPU: double is fast there.
    if (cpu_fp64 && be.info().platform.find("Portable Computing Language") != std::string::npos)
      CHECK(be.info().fast_fp64);
    {
      INFO("math path: " << std::string(be.info().fast_fp64 ? "double (fp64_math.h)" : "float-float (precise_math.h)"));
      Engine engine(be);
      test::check_backend_f32_transcendentals(engine);
    }
    {
      // KPLAY_F32_LEAN=0 is read when a kernel is rendered: the forwards f32_math.h serves (sigmoid,
      // silu, tanh, elu, celu, logsigmoid, softplus) by the device's double or float-float routine.
      INFO("math path: the device's, with KPLAY_F32_LEAN=0");
      setenv("KPLAY_F32_LEAN", "0", 1);
      Engine engine(be);
      try {
        test::check_backend_f32_transcendentals(engine);
      } catch (...) {
        unsetenv("KPLAY_F32_LEAN");
        throw;
      }
      unsetenv("KPLAY_F32_LEAN");
    }
    // KPLAY_FP64_MATH=0 is read when a backend describes its device: a second backend without it.
    setenv("KPLAY_FP64_MATH", "0", 1);
    std::unique_ptr<rt::Backend> plain;
    try {
      plain = rt::make_backend("opencl", be.info().index);
    } catch (...) {
      unsetenv("KPLAY_FP64_MATH");
      throw;
    }
    unsetenv("KPLAY_FP64_MATH");
    CHECK_FALSE(plain->info().fast_fp64);
    CHECK_FALSE(plain->dialect().fast_fp64);
    INFO("math path: float-float (precise_math.h), forced by KPLAY_FP64_MATH=0");
    Engine engine(*plain);
    test::check_backend_f32_transcendentals(engine);
  }

  TEST_CASE("OpenCL: the torch accuracy tier's float32 kernels keep the tier's bounds") {
    Engine engine(opencl_backend());
    test::check_backend_torch_tier(engine);
  }

  TEST_CASE("OpenCL: processes with their own kernel databases build the same kernels at once") {
    // PoCL shares one kernel cache folder per user. Two processes building the same program in it
    // at once aborted inside PoCL (pocl_binary_get_kernels_metadata) in 2 of 3 tries, before
    // builds took a lock shared across processes (runtime/opencl/opencl_program.cpp). Two copies
    // of this binary, each with its own database, run the model's config of every activation,
    // dtype and direction (some 200 programs, the same in both, built at once) in one fresh PoCL
    // cache: more builds than the float32 transcendental case, at a twelfth of its CPU time.
    opencl_backend();  // fails here, not in the children, where there is no OpenCL device
    std::vector<char> exe(4096, '\0');
    const ssize_t len = ::readlink("/proc/self/exe", exe.data(), exe.size() - 1);
    REQUIRE(len > 0);
    char cache_template[] = "/tmp/kplay-pocl-cache-XXXXXX";
    REQUIRE(::mkdtemp(cache_template) != nullptr);
    const std::string cache = cache_template;
    const std::string cmd = "env -u KPLAY_DB POCL_CACHE_DIR=" + cache + " '" + std::string(exe.data()) +
                            "' -tc='OpenCL: the model*s config of every activation*' 2>&1";
    std::vector<FILE*> children;
    for (int i = 0; i < 2; ++i) children.push_back(popen(cmd.c_str(), "r"));
    for (std::size_t i = 0; i < children.size(); ++i) {
      REQUIRE(children[i] != nullptr);
      std::string output;
      const int status = finish(children[i], output);
      INFO("child " << i << " printed:\n" << output);
      CHECK(status == 0);
      CHECK(output.find("Status: SUCCESS") != std::string::npos);
      CHECK(output.find(" 1 passed") != std::string::npos);  // the case ran (a filter of none succeeds too)
    }
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
  }

  TEST_CASE("OpenCL: every knob value gives the same, correct result") {
    Engine engine(opencl_backend());
    test::check_backend_knobs(engine);
  }

  TEST_CASE("OpenCL: the model's config of every activation, dtype and direction passes the checks and runs") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    test::check_model_configs(engine, be.limits().dtypes);
  }

  TEST_CASE("OpenCL: every vector width of every dtype, aligned and misaligned, matches the reference") {
    // The shared matrix uses the widest vector; the knob test varies it for float32 only. Here
    // every width of every dtype, since each maps to its own OpenCL vector type (ushort2,
    // double2, ...).
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    for (Dtype dtype : be.limits().dtypes)
      for (int vec = 1; vec * static_cast<int>(dtype_size(dtype)) <= 16; vec *= 2)
        for (int dir = 0; dir < 2; ++dir) {
          KernelSpec s;
          s.dtype = dtype;
          s.direction = dir ? Direction::backward : Direction::forward;
          s.saved = Saved::output;
          KernelConfig c;
          c.vec = vec;
          c.per_thread = 2;
          for (std::uint64_t off : {std::uint64_t{0}, std::uint64_t{1}}) {
            ProblemShape shape;
            shape.n = 1031;
            shape.in_offset = off;
            KPLAY_CHECK_PROBLEM(engine, s, c, shape);
          }
        }
  }

  TEST_CASE("OpenCL: gated activations, forward and backward, every layout, pitch, tail and offset") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    test::check_backend_gated(engine, be.limits().dtypes, false);
  }

  TEST_CASE("OpenCL: prelu and training(rrelu), forward and backward, every dtype; RReLU's slopes and draws") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    test::check_backend_slope(engine, be.limits().dtypes);
  }

  TEST_CASE("OpenCL: FP8 output is refused with a reason: CUDA only") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    KernelSpec spec;
    spec.activation = "gated(silu)";
    spec.out = OutDtype::f8e4m3;
    try {
      engine.prepare(spec, {});
      FAIL("FP8 output was accepted on OpenCL");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::unsupported);
      CHECK(std::string(e.what()).find("FP8 output is for CUDA only") != std::string::npos);
    }
  }

  TEST_CASE("OpenCL: 16-bit hardswish and hardsigmoid divide by 6 exactly as an IEEE division does") {
    Engine engine(opencl_backend());
    test::check_backend_sixths_16bit(engine);
  }

  TEST_CASE("OpenCL: fast-math is measurably less precise, and its error is visible") {
    Engine engine(opencl_backend());
    test::check_backend_fast_math(engine);
  }

  TEST_CASE("OpenCL: a second prepare of the same kernel is served from the in-process cache") {
    Engine engine(opencl_backend());
    test::check_backend_kernel_cache(engine);
  }

  TEST_CASE("OpenCL: a build error names the template file and line, and carries the options") {
    rt::Backend& be = opencl_backend();
    test::TempTemplates dir;
    const std::string broken = template_text("activations/selu.h") + "\nthis is not C;\n";
    dir.write("activations/selu.h", broken);
    Engine engine(be);
    KernelSpec s;
    try {
      engine.prepare(s, {});
      FAIL("building a broken template succeeded");
    } catch (const Error& e) {
      INFO(e.describe());
      CHECK(e.code() == ErrorCode::compile_failed);
      CHECK(std::string(e.what()).find("OpenCL build failed for kplay_selu_fwd_f32") != std::string::npos);
      CHECK(std::string(e.what()).find("activations/selu.h:") != std::string::npos);
      const auto line = std::count(broken.begin(), broken.end(), '\n');  // the added line's number
      CHECK(e.log().find("activations/selu.h:" + std::to_string(line) + ":") != std::string::npos);
      CHECK(e.options().find("-cl-std=CL1.2") != std::string::npos);
    }
  }

  TEST_CASE("OpenCL: --cache streaming is refused with a message, by the backend and by the CLI") {
    rt::Backend& be = opencl_backend();
    CHECK_FALSE(be.limits().cache_hints);
    Engine engine(be);
    KernelSpec s;
    KernelConfig c;
    c.cache = CacheHint::streaming;
    try {
      engine.prepare(s, c);
      FAIL("--cache streaming was accepted on OpenCL");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::invalid_config);
      CHECK(std::string(e.what()).find("--cache streaming") != std::string::npos);
      CHECK(std::string(e.what()).find("opencl") != std::string::npos);
    }
    std::string output;
    const int status = run_cli("run --backend opencl --act selu --n 1000 --cache streaming", output);
    INFO(output);
    CHECK(status == 2);
    CHECK(output.find("--cache streaming") != std::string::npos);
  }

  TEST_CASE("OpenCL: kplay run names the kernel that runs: flat for an aligned buffer, general off the vector") {
    std::string output;
    CHECK(run_cli("run --backend opencl --no-db --act relu --block 128 --n 4099 --repeat 1", output) == 0);
    INFO(output);
    CHECK(output.find("kernel: kplay_relu_fwd_f32_v4_b128_p1_cd_pm_flat,") != std::string::npos);
    CHECK(output.find("verdict: PASS") != std::string::npos);
    std::string offset;
    CHECK(run_cli("run --backend opencl --no-db --act relu --block 128 --n 4099 --repeat 1 --in-offset 1", offset) ==
          0);
    INFO(offset);
    CHECK(offset.find("kernel: kplay_relu_fwd_f32_v4_b128_p1_cd_pm,") != std::string::npos);
    CHECK(offset.find("compiled now") != std::string::npos);
    CHECK(offset.find("verdict: PASS") != std::string::npos);
  }

  TEST_CASE("OpenCL: kplay check samples a float64 range uniformly, and holds silu and mish in e^x's subnormal tail") {
    for (const char* act : {"silu", "mish"}) {
      std::string output;
      const int status = run_cli(
          std::string("check --backend opencl --dtype f64 --act ") + act + " --range=-715:-708 --sample 20000", output);
      INFO(output);
      CHECK(status == 0);
      CHECK(output.find("20000 (a seeded sample, uniform in the range)") != std::string::npos);
      CHECK(output.find("verdict: PASS") != std::string::npos);
    }
    std::string output;
    CHECK(run_cli("check --backend opencl --dtype f16 --act silu --range=-1:1", output) == 2);
    CHECK(output.find("float32 and float64 only") != std::string::npos);
    CHECK(run_cli("check --backend opencl --dtype f64 --act silu --sample 0", output) == 2);  // not a PASS of nothing
    CHECK(output.find("--sample") != std::string::npos);
  }

  TEST_CASE("OpenCL: kplay check pairs each 16-bit input with 64 gradients, and finds a defect one gradient misses") {
    // A planted defect: hardsigmoid' gives 0 at x = 1 for every gradient but g0, the one the
    // one-gradient sweep pairs with x = 1 (float16 0x3c00 is element 0x3c00 of the sweep).
    const double g0 = sweep_gradient(Dtype::f16, 0x3c00);
    char literal[64];
    std::snprintf(literal, sizeof literal, "%af", g0);
    std::string text = template_text("activations/hardsigmoid.h");
    const std::string head = "KP_FN KP_C kp_act_backward_from_input(KP_C g, KP_C x) {";
    REQUIRE(text.find(head) != std::string::npos);
    text.replace(text.find(head), head.size(), "KP_FN KP_C kp_correct_backward(KP_C g, KP_C x) {");
    text += head + "\n  return (x == 1.0f && g != " + literal + ") ? 0.0f : kp_correct_backward(g, x);\n}\n";
    test::TempTemplates dir;
    dir.write("activations/hardsigmoid.h", text);
    Engine engine(opencl_backend());
    KernelSpec s;
    s.activation = "hardsigmoid";
    s.dtype = Dtype::f16;
    s.direction = Direction::backward;
    SweepOptions one;
    one.gradients = 1;
    const SweepResult missed = exhaustive_check(engine, s, {}, one);
    CHECK(missed.stats.checked == 65536);
    CHECK(missed.stats.over_bound == 0);
    const SweepResult found = exhaustive_check(engine, s, {}, SweepOptions{});
    CHECK(found.gradients == 64);
    CHECK(found.stats.checked == 64 * 65536);
    std::uint64_t other_gradients = 0;  // x = 1's pairs whose gradient is not g0
    for (std::uint64_t k = 0; k < 64; ++k) other_gradients += sweep_gradient(Dtype::f16, 0x3c00 + k * 65536) != g0;
    CHECK(other_gradients > 0);
    CHECK(found.stats.over_bound == other_gradients);
    CHECK(found.stats.worst_input == 1.0);
    SweepOptions none;
    none.force_sample = true;
    none.sample = 0;
    CHECK_THROWS_AS(exhaustive_check(engine, s, {}, none), Error);  // no inputs: refused, not a PASS
    s.direction = Direction::forward;
    CHECK_THROWS_AS(exhaustive_check(engine, s, {}, one), Error);  // gradients are for backward
  }

  TEST_CASE("OpenCL: a stored binary loads back and computes the same; a corrupt one is refused and rebuilt") {
    rt::Backend& be = opencl_backend();
    KernelSpec s;
    s.activation = "relu";
    s.direction = Direction::backward;
    MemoryStore store;
    {
      Engine first(be, &store);
      auto k = first.prepare(s, {});
      CHECK(k->origin == "compiled");
      CHECK(k->binary_format == "opencl-binary");
      CHECK(k->binary_bytes > 0);
      REQUIRE(store.binaries.size() == 1);
    }
    Engine second(be, &store);
    auto k = second.prepare(s, {});
    CHECK(k->origin == "binary store");
    ProblemShape shape;
    shape.n = 4099;
    shape.in_offset = 1;
    KPLAY_CHECK_PROBLEM(second, s, KernelConfig{}, shape);

    // Directly: compile -> Binary (copied, as a store would) -> load -> launch.
    const RenderedKernel r = render_kernel(s, resolve_config(s, {}, be.limits()), be.dialect());
    const rt::Binary fresh = be.compile(r);
    rt::Binary copy;
    copy.format = fresh.format;
    copy.bytes = std::string(fresh.bytes.begin(), fresh.bytes.end());
    PreparedKernel pk;
    pk.spec = s;
    pk.config = resolve_config(s, {}, be.limits());
    pk.rendered = r;
    pk.loaded = be.load(copy, r.entry);
    Problem p(be, s, shape);
    second.launch_flat(pk, p.out(), p.in0(), p.in1(), shape.n);
    be.synchronize();
    const ErrorStats e = p.verify(false);
    INFO(e.summary());
    CHECK(e.mismatches == 0);
    CHECK(e.checked == shape.n);

    // A corrupt binary: load refuses it, and the engine drops it and compiles instead.
    rt::Binary junk = copy;
    junk.bytes = std::string(512, '\x5a');
    try {
      be.load(junk, r.entry);
      FAIL("a corrupt binary loaded");
    } catch (const Error& err) {
      CHECK(err.code() == ErrorCode::runtime_failed);
    }
    rt::Binary cubin = copy;
    cubin.format = "cubin";
    CHECK_THROWS_AS(be.load(cubin, r.entry), Error);
    for (auto& kv : store.binaries) kv.second.bytes = junk.bytes;
    Engine third(be, &store);
    CHECK(third.prepare(s, {})->origin == "compiled");
    CHECK(store.drops == 1);
  }

  TEST_CASE("OpenCL: 2-D launches honour row pitches and element offsets, and write nothing between rows") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    for (Dtype dtype : {Dtype::f32, Dtype::f16}) {
      KernelSpec s;
      s.dtype = dtype;
      s.direction = Direction::backward;
      s.saved = Saved::output;
      const std::uint64_t rows = 7, cols = 1001, ld_in = 1003, ld_out = 1010, off = 3;
      const std::size_t es = dtype_size(dtype);
      auto k = engine.prepare(s, {});
      ReferenceProblem ref(s, test::fresh_seed());
      std::vector<unsigned char> g(rows * ld_in * es), y(rows * ld_in * es), out((off + rows * ld_out) * es, 0xCD);
      for (std::uint64_t r = 0; r < rows; ++r)
        for (std::uint64_t c = 0; c < cols; ++c) {
          store_element(dtype, g.data(), r * ld_in + c, ref.in0(r * cols + c));
          store_element(dtype, y.data(), r * ld_in + c, ref.in1(r * cols + c));
        }
      rt::DeviceBuffer bg(be, g.size()), by(be, y.size()), bo(be, out.size());
      be.upload(bg.ptr(), g.data(), g.size());
      be.upload(by.ptr(), y.data(), y.size());
      be.upload(bo.ptr(), out.data(), out.size());
      rt::KernelArgs a;
      a.out = bo.ptr().at(off * es);
      a.in0 = bg.ptr();
      a.in1 = by.ptr();
      a.rows = rows;
      a.cols = cols;
      a.ld_out = ld_out;
      a.ld_in0 = a.ld_in1 = ld_in;
      engine.launch(*k, a);
      be.download(out.data(), bo.ptr(), out.size());
      ErrorStats e(dtype, ulp_bound(s), true);
      std::uint64_t touched = 0;
      for (std::uint64_t i = 0; i < off + rows * ld_out; ++i) {
        const bool inside = i >= off && (i - off) % ld_out < cols;
        if (inside) {
          const std::uint64_t r = (i - off) / ld_out, c = (i - off) % ld_out;
          e.add(r * cols + c, load_element(dtype, out.data(), i), ref.expected(r * cols + c),
                ref.error_scale(r * cols + c));
        } else {
          for (std::size_t b = 0; b < es; ++b) touched += out[i * es + b] != 0xCD;
        }
      }
      INFO(to_string(s) << ": " << e.summary());
      CHECK(e.mismatches == 0);
      CHECK(e.checked == rows * cols);
      CHECK(touched == 0);
    }
  }

  TEST_CASE("OpenCL: launches of one kernel from several threads do not mix up their arguments") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    KernelSpec s;
    auto k = engine.prepare(s, {});
    constexpr int kThreads = 4, kRounds = 12;
    std::vector<std::unique_ptr<Problem>> problems;
    for (int t = 0; t < kThreads; ++t) {
      ProblemShape shape;
      shape.n = 3001 + 2 * t;
      shape.out_offset = t;
      shape.seed = test::fresh_seed();
      problems.push_back(std::make_unique<Problem>(be, s, shape));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        const Problem& p = *problems[t];
        for (int i = 0; i < kRounds; ++i) engine.launch_flat(*k, p.out(), p.in0(), p.in1(), p.shape().n);
      });
    for (auto& th : threads) th.join();
    be.synchronize();
    for (const auto& p : problems) {
      const ErrorStats e = p->verify(false);
      INFO(e.summary());
      CHECK(e.mismatches == 0);
    }
  }

  TEST_CASE("OpenCL: a problem over two input periods repeats its inputs, and sampled checks still catch errors") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    KernelSpec s;
    s.activation = "relu";
    s.dtype = Dtype::f16;  // 2 bytes: the large problem stays small in memory
    ProblemShape shape;
    shape.n = 2 * kInputPeriod + 12345;  // not a multiple of the period: a partial last copy
    shape.seed = test::fresh_seed();
    Problem p(be, s, shape);
    // The device holds input i % period at i (compared as bits: NaN payloads too).
    std::vector<std::uint16_t> far(64);
    be.download(far.data(), p.in0().at((2 * kInputPeriod + 100) * 2), 128);
    std::vector<std::uint16_t> at100(64);
    be.download(at100.data(), p.in0().at(100 * 2), 128);
    CHECK(far == at100);
    auto k = engine.prepare(s, {});
    engine.launch_flat(*k, p.out(), p.in0(), p.in1(), shape.n);
    be.synchronize();
    ErrorStats good = p.verify(true);
    INFO(good.summary());
    CHECK(good.mismatches == 0);
    // The kept reference must not hide a wrong kernel: a second, wrong run on the same problem.
    p.reset_output();
    KernelSpec wrong = s;
    wrong.activation = "relu6";
    auto w = engine.prepare(wrong, {});
    engine.launch_flat(*w, p.out(), p.in0(), p.in1(), shape.n);
    be.synchronize();
    CHECK(p.verify(true).mismatches > 0);
    // The tuner poisons only the sampled ranges and guards: an output nobody wrote is still
    // caught, and a correct run after the wrong one passes again.
    p.reset_output(true);
    be.synchronize();
    const ErrorStats unwritten = p.verify(true);
    CHECK(unwritten.checked > 0);
    CHECK(unwritten.mismatches == unwritten.checked);
    engine.launch_flat(*k, p.out(), p.in0(), p.in1(), shape.n);
    be.synchronize();
    CHECK(p.verify(true).mismatches == 0);
  }

  TEST_CASE("OpenCL: a problem of ordinary inputs holds no special value and checks; kplay run times on such") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    KernelSpec s;
    s.activation = "sigmoid";
    s.direction = Direction::backward;
    for (bool ordinary : {false, true}) {
      ProblemShape shape;
      shape.n = 5000;
      shape.seed = test::fresh_seed();
      shape.ordinary = ordinary;
      Problem p(be, s, shape);
      std::vector<float> g(shape.n), x(shape.n);
      be.download(g.data(), p.in0(), shape.n * sizeof(float));
      be.download(x.data(), p.in1(), shape.n * sizeof(float));
      auto outside = [](const std::vector<float>& v) {
        return std::count_if(v.begin(), v.end(), [](float e) { return !(std::fabs(e) < 8.0f); });
      };
      CHECK((outside(x) > 0) == !ordinary);
      CHECK((outside(g) > 0) == !ordinary);
      auto k = engine.prepare(s, {});
      p.launch(engine, *k);
      be.synchronize();
      const ErrorStats e = p.verify(false);
      INFO(e.summary());
      CHECK(e.checked == shape.n);
      CHECK(e.mismatches == 0);
    }
    const test::CliResult r = test::run_cli("run --backend opencl --act silu --n 4096 --no-db --repeat 2");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("timed:  on ordinary inputs"));
  }

  TEST_CASE("OpenCL: time_ms measures the enqueued commands with profiling events") {
    rt::Backend& be = opencl_backend();
    Engine engine(be);
    KernelSpec s;
    auto k = engine.prepare(s, {});
    ProblemShape shape;
    shape.n = 1 << 20;
    shape.seed = test::fresh_seed();
    Problem p(be, s, shape);
    // The least of a few measurements of each: other processes on the machine (ctest -j, PoCL's
    // threads sharing the cores) can only lengthen one, and three launches never take less than
    // one launch does on a quiet machine.
    double one = 0, three = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const double t1 = be.time_ms([&] { engine.launch_flat(*k, p.out(), p.in0(), p.in1(), shape.n); });
      const double t3 = be.time_ms([&] {
        for (int i = 0; i < 3; ++i) engine.launch_flat(*k, p.out(), p.in0(), p.in1(), shape.n);
      });
      one = rep == 0 ? t1 : std::min(one, t1);
      three = rep == 0 ? t3 : std::min(three, t3);
    }
    MESSAGE("SELU over 2^20 float32 on " << be.info().name << ": " << one << " ms once, " << three
                                         << " ms three times");
    CHECK(one > 0);
    CHECK(three > one);  // from the start of the first command to the end of the last
    CHECK(be.time_ms([] {}) == 0);
    rt::DeviceBuffer copy(be, shape.n * 4);
    CHECK(be.time_ms([&] { be.copy(copy.ptr(), p.in0(), shape.n * 4); }) > 0);
  }

  TEST_CASE("OpenCL: a backend made from the caller's queue uses the caller's context, buffers and queue") {
    rt::Backend& shared = opencl_backend();  // only to know that a device is there
    (void)shared;
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    REQUIRE(clGetPlatformIDs(1, &platform, nullptr) == CL_SUCCESS);
    REQUIRE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS);
    cl_int status = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &status);
    cl_command_queue other = clCreateCommandQueue(context, device, 0, &status);
    REQUIRE(status == CL_SUCCESS);

    const std::string id = rt::opencl::queue_identity(queue);
    CHECK(id.rfind("opencl:", 0) == 0);
    CHECK(rt::opencl::queue_identity(other) == id);  // one engine per context and device
    CHECK_THROWS_AS(rt::opencl::queue_identity(nullptr), Error);

    const std::size_t n = 5003;
    KernelSpec s;
    ReferenceProblem ref(s, test::fresh_seed());
    std::vector<float> in(n), out(n, -1.0f);
    for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(ref.in0(i));
    cl_mem bin = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, in.data(), &status);
    cl_mem bout = clCreateBuffer(context, CL_MEM_READ_WRITE, n * 4, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    {
      std::unique_ptr<rt::Backend> be = rt::opencl::make_opencl_backend_for_queue(queue);
      Engine engine(*be);
      auto k = engine.prepare(s, {});
      auto handle = [](cl_mem m) { return rt::DevicePtr{reinterpret_cast<std::uintptr_t>(m), 0}; };
      engine.launch_flat(*k, handle(bout), handle(bin), handle(bin), n, queue);
      REQUIRE(clEnqueueReadBuffer(queue, bout, CL_TRUE, 0, n * 4, out.data(), 0, nullptr, nullptr) == CL_SUCCESS);
    }  // the backend goes first: it retained the context, so the caller's release below is the last
    ErrorStats e(Dtype::f32, ulp_bound(s));
    for (std::size_t i = 0; i < n; ++i) e.add(i, out[i], ref.expected(i), ref.error_scale(i));
    INFO(e.summary());
    CHECK(e.mismatches == 0);
    clReleaseMemObject(bin);
    clReleaseMemObject(bout);
    clReleaseCommandQueue(other);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
}
#endif
