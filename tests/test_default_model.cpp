// The default-config model by its invariants, not its outputs: more bandwidth per SM or dearer
// math never means fewer bytes in flight; a small problem never gets more vectors per thread than
// fill one wave; every answer passes the command line's checks for every activation, dtype and
// direction. The measured defaults are data (the shipped tunings), not this model's business.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "activation_cases.hpp"
#include "codegen/config_validation.hpp"
#include "hopper_device.hpp"
#include "spec/activation_costs.hpp"
#include "tuner/default_model.hpp"

using namespace kplay;

namespace {

const Dtype kDtypes[] = {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64};
const Direction kDirections[] = {Direction::forward, Direction::backward};

DefaultModelInputs device(double gbps, int sms = 132, double ghz = 1.98) {
  DefaultModelInputs d = model_inputs(test::hopper_device(gbps));
  d.sms = sms;
  d.clock_ghz = ghz;
  return d;
}

KernelConfig model(const ModelKernel& k, const DefaultModelInputs& d, std::uint64_t n = 0) {
  KernelConfig c;
  REQUIRE(model_config(k, d, n, c));
  return c;
}

// Bytes of loads a config keeps in flight per SM when every thread has issued its loads.
double bytes_in_flight(const ModelKernel& k, const KernelConfig& c, const DefaultModelInputs& d) {
  return static_cast<double>(resident_threads(d, c.block)) * c.per_thread * c.vec * dtype_size(k.dtype) * k.loads;
}

// Every built-in activation text of the test table and its gated form, each dtype and direction
// it has, and the saved output where the derivative follows from it.
std::vector<KernelSpec> every_spec() {
  std::vector<KernelSpec> out;
  std::vector<std::string> texts;
  for (const auto& text : test::activation_cases()) {
    texts.push_back(text);
    texts.push_back("gated(" + text + ")");
  }
  for (const auto& text : texts) {
    const ResolvedActivation a = resolve_activation(text);
    for (Dtype dt : kDtypes)
      for (Direction dir : kDirections) {
        if (dir == Direction::backward && !a.has_backward()) continue;
        KernelSpec s;
        s.activation = a.canonical;
        s.dtype = dt;
        s.direction = dir;
        out.push_back(s);
        if (dir == Direction::backward && a.has_grad_from_output()) {
          s.saved = Saved::output;
          out.push_back(s);
        }
      }
  }
  return out;
}

// Streams read and written per element: forward; backward or gated forward; gated backward.
const std::pair<int, int> kStreams[] = {{1, 1}, {2, 1}, {3, 2}};

}  // namespace

TEST_CASE("default model: more bandwidth per SM never means fewer bytes in flight") {
  for (Dtype dt : kDtypes)
    for (const auto& [loads, stores] : kStreams)
      for (double cost : {0.0, 1.0, 8.0, 40.0, 120.0, 400.0})
        for (double ghz : {0.0, 1.0, 2.0}) {
          const ModelKernel k{dt, loads, stores, cost};
          double last = 0;
          for (double gbps = 50; gbps <= 40000; gbps *= 1.25) {
            const DefaultModelInputs d = device(gbps, 132, ghz);
            const double bytes = bytes_in_flight(k, model(k, d), d);
            CAPTURE(gbps);
            CAPTURE(cost);
            CHECK(bytes >= last);
            last = bytes;
          }
          // The same bandwidth over fewer SMs is more per SM.
          last = 0;
          for (int sms = 512; sms >= 4; sms /= 2) {
            const DefaultModelInputs d = device(3000, sms, ghz);
            const double bytes = bytes_in_flight(k, model(k, d), d);
            CHECK(bytes >= last);
            last = bytes;
          }
        }
}

TEST_CASE("default model: dearer math never means fewer bytes in flight") {
  for (double gbps : {300.0, 1000.0, 3350.0, 4800.0, 8000.0})
    for (Dtype dt : kDtypes)
      for (const auto& [loads, stores] : kStreams) {
        const DefaultModelInputs d = device(gbps);
        double last = 0;
        for (double cost = 0; cost <= 600; cost += 2.5) {
          const ModelKernel k{dt, loads, stores, cost};
          const double bytes = bytes_in_flight(k, model(k, d), d);
          CAPTURE(cost);
          CHECK(bytes >= last);
          last = bytes;
        }
      }
  // With the clock unknown the math takes no time: its cost changes nothing.
  const DefaultModelInputs no_clock = device(3350, 132, 0);
  CHECK(model({Dtype::f32, 1, 1, 0}, no_clock) == model({Dtype::f32, 1, 1, 500}, no_clock));
}

TEST_CASE("default model: a small problem never gets more vectors per thread than fill one wave") {
  for (double gbps : {500.0, 3350.0, 8000.0})
    for (Dtype dt : kDtypes)
      for (const auto& [loads, stores] : kStreams)
        for (double cost : {0.0, 60.0, 300.0}) {
          const DefaultModelInputs d = device(gbps);
          const ModelKernel k{dt, loads, stores, cost};
          for (int log2n = 0; log2n <= 36; ++log2n) {
            const std::uint64_t n = std::uint64_t{1} << log2n;
            const KernelConfig c = model(k, d, n);
            const std::uint64_t wave = static_cast<std::uint64_t>(d.sms) * resident_threads(d, c.block);
            CAPTURE(n);
            if (n <= wave * static_cast<std::uint64_t>(c.vec)) CHECK(c.per_thread == 1);
            if (c.per_thread > 1) CHECK(n / (static_cast<std::uint64_t>(c.vec) * c.per_thread) >= wave);
            CHECK(c.per_thread <= model(k, d).per_thread);  // never more than for a large problem
          }
        }
}

TEST_CASE("default model: every answer passes the config checks, for every activation, dtype and direction") {
  // The CUDA limits of an H100-like target (and of the same device with a slower and a faster
  // memory); the PoCL device's own are checked in the opencl suite (device_checks.cpp).
  for (double gbps : {900.0, 3350.0, 4800.0}) {
    const rt::DeviceInfo dev = test::hopper_device(gbps);
    TargetLimits limits;
    limits.backend = "cuda";
    limits.max_block = dev.max_block;
    for (const KernelSpec& s : every_spec())
      for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{4097}, std::uint64_t{1} << 20, std::uint64_t{1} << 24,
                              std::uint64_t{1610612736}}) {
        CAPTURE(to_string(s));
        CAPTURE(n);
        std::string why;
        const KernelConfig c = device_default_config(s, dev, n, &why);
        CHECK_NOTHROW(resolve_config(s, c, limits));
        CHECK(why.find("device model") != std::string::npos);
        CHECK(c.grid == GridPolicy::one_shot);
        CHECK(c.cache == CacheHint::normal);
        CHECK(c.flat);
        CHECK_FALSE(c.late_gradient);
        CHECK(c.per_thread * c.vec * static_cast<int>(dtype_size(s.dtype)) <= 128);  // the tuner's register bound
      }
  }
}

TEST_CASE("default model: the block lets an SM hold its threads, an eighth of them at most") {
  DefaultModelInputs d = device(3350);
  CHECK(model({}, d).block * 8 == d.max_threads_per_sm);
  d.max_threads_per_sm = 1536;  // 16 blocks of at most 96 threads would leave threads unused
  d.max_blocks_per_sm = 16;
  const KernelConfig c = model({}, d);
  CHECK(c.block * d.max_blocks_per_sm >= d.max_threads_per_sm);
  CHECK(resident_threads(d, c.block) == 1536);
  d.max_block = 64;
  CHECK(model({}, d).block == 64);
}

TEST_CASE("default model: a device without bandwidth gets the static table") {
  rt::DeviceInfo cpu;
  cpu.compute_units = 2;
  cpu.max_threads_per_unit = 1024;
  KernelSpec s;
  s.activation = "selu";
  s.dtype = Dtype::f16;
  KernelConfig unused;
  CHECK_FALSE(model_config(model_kernel(s, model_inputs(cpu)), model_inputs(cpu), 0, unused));
  std::string why;
  CHECK(device_default_config(s, cpu, 0, &why) == default_config(s));
  CHECK(why.find("static table") != std::string::npos);
}

TEST_CASE("activation costs: counted per dtype, path and direction; an uncounted activation costs the most") {
  // Every row names an activation kplay has (a renamed one must be recounted), and every built-in
  // costs at least nothing.
  for (const auto& text : test::activation_cases()) {
    const ResolvedActivation a = resolve_activation(text);
    for (Dtype dt : kDtypes)
      for (Direction dir : kDirections)
        for (bool fp64 : {false, true}) {
          const double most = dearest_counted_cost(dt, dir, fp64);
          const auto c = counted_cost(a, dt, dir, fp64);
          if (!c) continue;  // a built-in added since the last count: the model takes `most`
          CHECK(*c >= 0);
          CHECK(*c <= most);
        }
  }
  // The model's kernel: the count, or the dearest where there is none.
  KernelSpec s;
  s.activation = "gelu(approximate=tanh)";
  const DefaultModelInputs d = device(3350);
  const auto counted = counted_cost(resolve_activation(s.activation), s.dtype, s.direction, d.fp64_math);
  REQUIRE(counted);
  CHECK(model_kernel(s, d).cost == *counted);
  // gelu's approximate selects another formula, and so another count; leaky_relu's slope does not.
  CHECK(counted_cost(resolve_activation("gelu"), Dtype::f16, Direction::forward, true) !=
        counted_cost(resolve_activation("gelu(approximate=tanh)"), Dtype::f16, Direction::forward, true));
  CHECK(counted_cost(resolve_activation("leaky_relu(negative_slope=0.2)"), Dtype::f32, Direction::forward, true) ==
        counted_cost(resolve_activation("leaky_relu"), Dtype::f32, Direction::forward, true));
}
