// Which kernel a launch takes: the flat one for one aligned run below 2^31 elements (a row
// kernel's: rows of whole vectors), the general one for everything else, compiled on first need
// and then reused (src/launch_layout.hpp, Engine::kernel_for). A fake backend records what it
// compiled and launched.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/launch_layout.hpp"
#include "memoryless_backend.hpp"

using namespace kplay;

namespace {
rt::KernelArgs flat_args(std::uint64_t n, std::uint64_t out_addr = 4096, std::uint64_t in_addr = 8192) {
  rt::KernelArgs a;
  a.out = {out_addr, 0};
  a.in0 = a.in1 = {in_addr, 0};
  a.rows = 1;
  a.cols = a.ld_out = a.ld_in0 = a.ld_in1 = n;
  return a;
}

struct NamedKernel : rt::LoadedKernel {
  explicit NamedKernel(std::string e) : entry(std::move(e)) {}
  std::string entry;
};

class RecordingBackend : public test::MemorylessBackend {
 public:
  explicit RecordingBackend(const std::string& backend) : MemorylessBackend(backend) {}
  std::vector<std::string> compiled;
  struct Launch {
    std::string entry;
    rt::KernelArgs args;
    rt::LaunchDims dims;
  };
  std::vector<Launch> launches;

  rt::Binary compile(const RenderedKernel& k) override {
    compiled.push_back(k.entry);
    return {"fake", k.source, ""};
  }
  std::unique_ptr<rt::LoadedKernel> load(const rt::Binary&, const std::string& entry) override {
    return std::make_unique<NamedKernel>(entry);
  }
  void launch(rt::LoadedKernel& k, const rt::LaunchDims& dims, const rt::KernelArgs& args, void*) override {
    launches.push_back({static_cast<NamedKernel&>(k).entry, args, dims});
  }
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
}  // namespace

TEST_CASE("flat_elements: one aligned run below 2^31 elements, nothing else") {
  CHECK(flat_elements(flat_args(1000), false, 16, true) == 1000);
  CHECK(flat_elements(flat_args(1), false, 16, true) == 1);

  // An address or offset off the vector sends the launch to the general kernel.
  CHECK(flat_elements(flat_args(1000, 4096 + 4), false, 16, true) == 0);
  CHECK(flat_elements(flat_args(1000, 4096, 8192 + 8), false, 16, true) == 0);
  auto off = flat_args(1000);
  off.in0.offset = 16;
  CHECK(flat_elements(off, false, 16, true) == 1000);
  off.in0.offset = 2;
  CHECK(flat_elements(off, false, 16, true) == 0);
  CHECK(flat_elements(off, false, 2, true) == 1000);  // a 2-byte vector is aligned at any element

  // OpenCL: handles are cl_mem objects, not addresses; only the offsets count.
  CHECK(flat_elements(flat_args(1000, 4096 + 4, 8192 + 4), false, 16, false) == 1000);
  auto cl = flat_args(1000);
  cl.out.offset = 6;
  CHECK(flat_elements(cl, false, 16, false) == 0);

  // in1 is read by backward kernels only.
  auto grad = flat_args(1000);
  grad.in1 = {12345, 0};
  CHECK(flat_elements(grad, false, 16, true) == 1000);
  CHECK(flat_elements(grad, true, 16, true) == 0);

  // Rows: contiguous ones are one run; a pitch on any operand is not.
  rt::KernelArgs rows = flat_args(100);
  rows.rows = 30;
  CHECK(flat_elements(rows, true, 16, true) == 3000);
  rows.ld_in1 = 104;
  CHECK(flat_elements(rows, false, 16, true) == 3000);  // forward ignores in1
  CHECK(flat_elements(rows, true, 16, true) == 0);
  rows.ld_in1 = 100;
  rows.ld_out = 104;
  CHECK(flat_elements(rows, false, 16, true) == 0);

  // 32-bit indices: below 2^31 elements, also as rows x cols.
  CHECK(flat_elements(flat_args(kFlatMaxElements), false, 16, true) == kFlatMaxElements);
  CHECK(flat_elements(flat_args(kFlatMaxElements + 1), false, 16, true) == 0);
  rt::KernelArgs big = flat_args(1ull << 16);
  big.rows = 1ull << 15;
  CHECK(flat_elements(big, false, 16, true) == 0);
  big.rows = (1ull << 15) - 1;
  CHECK(flat_elements(big, false, 16, true) == ((1ull << 15) - 1) << 16);

  CHECK(flat_elements(flat_args(0), false, 16, true) == 0);
}

TEST_CASE("row kernels' whole-vector form: only where every row of every buffer starts on a vector and is whole") {
  rt::KernelArgs a;
  a.rows = 8;
  a.cols = a.ld_out = a.ld_in0 = a.ld_in1 = 64;
  a.out = {4096, 0};
  a.in0 = {8192, 0};
  a.in1 = {16384, 0};
  CHECK(row_whole(a, true, 16, 4, true));
  CHECK(row_whole(a, false, 16, 2, true));  // 8 lanes of 16 bits
  a.cols = 62;                              // rows of 64 floats apart, 62 of them used: a ragged end
  CHECK_FALSE(row_whole(a, true, 16, 4, true));
  CHECK(row_whole(a, true, 8, 4, true));  // two lanes a vector: 31 whole vectors
  a.cols = 64;
  a.ld_in1 = 66;  // backward's second buffer: its rows 66 floats apart, every other one off the vector
  CHECK_FALSE(row_whole(a, true, 16, 4, true));
  CHECK(row_whole(a, false, 16, 4, true));  // a forward does not read it
  a.ld_in1 = 64;
  a.out.offset = 4;  // a byte offset off the vector
  CHECK_FALSE(row_whole(a, true, 16, 4, true));
  a.out = {4096 + 4, 12};  // an address off the vector that the offset brings back
  CHECK(row_whole(a, true, 16, 4, true));
  CHECK_FALSE(row_whole(a, true, 16, 4, false));  // an OpenCL handle is not an address: the offset alone counts
}

TEST_CASE("engine: flat launches take the flat kernel, others its general twin, compiled once on first need") {
  RecordingBackend backend("cuda");
  Engine engine(backend);
  KernelSpec spec;  // selu forward f32: 16-byte vectors
  const auto k = engine.prepare(spec, KernelConfig{});
  CHECK(k->layout == Layout::flat);
  REQUIRE(backend.compiled.size() == 1);
  CHECK(ends_with(backend.compiled[0], "_flat"));
  CHECK(k->rendered.source.find("#define KP_FLAT 1") != std::string::npos);

  engine.launch(*k, flat_args(1000));
  REQUIRE(backend.launches.size() == 1);
  CHECK(backend.launches[0].entry == k->rendered.entry);
  CHECK(backend.compiled.size() == 1);  // no general kernel yet

  // Contiguous rows go flat as one row of rows x cols, with the grid for that one row.
  rt::KernelArgs rows = flat_args(100);
  rows.rows = 30;
  engine.launch(*k, rows);
  CHECK(backend.launches.back().entry == k->rendered.entry);
  CHECK(backend.launches.back().args.rows == 1);
  CHECK(backend.launches.back().args.cols == 3000);
  CHECK(backend.launches.back().args.ld_out == 3000);
  CHECK(backend.launches.back().dims.grid_y == 1);

  // A misaligned input: the general kernel, compiled now, with the arguments as given.
  engine.launch(*k, flat_args(1000, 4096, 8192 + 4));
  REQUIRE(backend.compiled.size() == 2);
  const std::string general = backend.compiled[1];
  CHECK_FALSE(ends_with(general, "_flat"));
  CHECK(backend.launches.back().entry == general);
  CHECK(backend.launches.back().args.in0.handle == 8192 + 4);
  CHECK(&engine.kernel_for(*k, flat_args(10, 4)) == k->general.get());
  CHECK(k->general->layout == Layout::general);
  CHECK(k->general->config == k->config);
  // The twin is the engine's, under the resolved config: a prepare of that finds it, not a compile
  // (the device suites' warm-up compiles twins ahead so).
  CHECK(engine.prepare(spec, k->config, Layout::general).get() == k->general.get());
  CHECK(backend.compiled.size() == 2);

  // Pitched rows: the general kernel again, not compiled again.
  rows.ld_out = 128;
  engine.launch(*k, rows);
  CHECK(backend.launches.back().entry == general);
  CHECK(backend.launches.back().args.rows == 30);
  CHECK(backend.compiled.size() == 2);

  // Back to an aligned run: flat.
  engine.launch(*k, flat_args(7));
  CHECK(backend.launches.back().entry == k->rendered.entry);

  // A kernel prepared as general stays general for every launch.
  const auto g = engine.prepare(spec, KernelConfig{}, Layout::general);
  CHECK(g->layout == Layout::general);
  CHECK(g->rendered.entry == general);
  engine.launch(*g, flat_args(1000));
  CHECK(backend.launches.back().entry == general);
}

TEST_CASE("engine: a config with flat off takes the general kernel for every launch, flat ones too") {
  RecordingBackend backend("cuda");
  Engine engine(backend);
  KernelSpec spec;
  KernelConfig general_only;
  general_only.flat = false;
  const auto k = engine.prepare(spec, general_only);
  CHECK(k->layout == Layout::general);
  REQUIRE(backend.compiled.size() == 1);
  CHECK_FALSE(ends_with(backend.compiled[0], "_flat"));
  engine.launch(*k, flat_args(1000));
  CHECK(backend.launches.back().entry == backend.compiled[0]);
  CHECK(backend.launches.back().args.rows == 1);
  CHECK(backend.compiled.size() == 1);
  // The same spec with flat on is another kernel, not the cached general one.
  CHECK(engine.prepare(spec, KernelConfig{})->layout == Layout::flat);
  CHECK(backend.compiled.size() == 2);
}

TEST_CASE("engine: on OpenCL a cl_mem handle does not count toward alignment") {
  RecordingBackend backend("opencl");
  Engine engine(backend);
  KernelSpec spec;
  const auto k = engine.prepare(spec, KernelConfig{});
  engine.launch(*k, flat_args(1000, 4096 + 4, 8192 + 12));  // handles are not addresses
  CHECK(backend.launches.back().entry == k->rendered.entry);
  auto off = flat_args(1000);
  off.out.offset = 4;
  engine.launch(*k, off);
  CHECK_FALSE(ends_with(backend.launches.back().entry, "_flat"));
}
