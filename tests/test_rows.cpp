// The row activations (softmax, log_softmax, softmin): the host reference's edges (unit), every
// strategy, dtype and direction on PoCL against the row reference with its edge rows (opencl),
// the CLI's handling of them, and the CUDA source of every strategy through NVRTC (nvrtc).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "codegen/row_codegen.hpp"
#include "device_checks.hpp"
#include "engine/launch_geometry.hpp"
#include "kplay/error.hpp"
#include "row_spec.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "spec/row_reference.hpp"
#include "tuner/row_defaults.hpp"

#ifdef KPLAY_WITH_CUDA
#include "runtime/cuda/nvrtc_compiler.hpp"
#endif

using namespace kplay;
using kplay::test::row_spec;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

KernelConfig row_config(RowStrategy row, int block, int per_thread, int vec = 0) {
  KernelConfig c;
  c.row = row;
  c.block = block;
  c.per_thread = per_thread;
  c.vec = vec;
  return c;
}

std::vector<double> forward_of(const char* act, std::vector<double> x) {
  std::vector<double> y(x.size());
  reference::row_forward<double>(find_activation(act).row_form, x.data(), x.size(), y.data());
  return y;
}
}  // namespace

TEST_CASE("row reference: torch's edges and the family's identities") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // +inf: inf - inf in the max-subtracting formula, the whole row NaN; NaN likewise; all -inf too.
  for (const char* act : {"softmax", "log_softmax", "softmin"}) {
    for (const auto& row :
         {std::vector<double>{1, kInf, 2}, std::vector<double>{1, nan, 2}, std::vector<double>{-kInf, -kInf}}) {
      const bool negate = find_activation(act).row_form.negate;
      std::vector<double> x = row;
      if (negate)  // softmin meets +inf where softmax meets -inf
        for (double& v : x) v = -v;
      for (double y : forward_of(act, x)) CHECK(std::isnan(y));
    }
  }
  // -inf elements of an ordinary row: 0, and -inf for log_softmax; a dim of length 1: 1 and 0.
  const auto s = forward_of("softmax", {-kInf, 0.0, 0.0});
  CHECK(s[0] == 0.0);
  CHECK(s[1] == doctest::Approx(0.5));
  CHECK(forward_of("log_softmax", {-kInf, 3.0})[0] == -kInf);
  CHECK(forward_of("softmax", {-7.5})[0] == 1.0);
  CHECK(forward_of("log_softmax", {123.0})[0] == 0.0);
  // softmin is softmax of -x; exp(log_softmax) is softmax.
  const std::vector<double> x = {0.25, -3.0, 7.0, 1e-3};
  const auto a = forward_of("softmin", x), b = forward_of("softmax", {-0.25, 3.0, -7.0, -1e-3});
  const auto l = forward_of("log_softmax", x), p = forward_of("softmax", x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-15));
    CHECK(std::exp(l[i]) == doctest::Approx(p[i]).epsilon(1e-14));
  }
}

TEST_CASE("row reference: backward matches a finite difference of the forward") {
  const std::vector<double> x = {0.5, -1.25, 2.0, 0.125, -0.75};
  const std::vector<double> g = {1.0, -2.0, 0.5, 3.0, -0.25};
  for (const char* act : {"softmax", "log_softmax", "softmin"}) {
    const RowForm form = find_activation(act).row_form;
    const auto y = forward_of(act, x);
    std::vector<double> grad(x.size());
    reference::row_backward<double>(form, g.data(), y.data(), x.size(), grad.data());
    for (std::size_t j = 0; j < x.size(); ++j) {
      const double h = 1e-6;
      std::vector<double> up = x, down = x;
      up[j] += h;
      down[j] -= h;
      const auto yu = forward_of(act, up), yd = forward_of(act, down);
      double d = 0;  // d(sum_i g_i y_i) / dx_j
      for (std::size_t i = 0; i < x.size(); ++i) d += g[i] * (yu[i] - yd[i]) / (2 * h);
      INFO(act << " element " << j);
      CHECK(grad[j] == doctest::Approx(d).epsilon(1e-7));
    }
  }
}

TEST_CASE("row activations: in the registry apart, refused where they have no meaning") {
  CHECK(resolve_activation("softmax").is_row());
  CHECK_FALSE(resolve_activation("selu").is_row());
  for (const auto& a : activations()) CHECK_FALSE(a.is_row);  // --act all stays element-wise
  for (const auto& t : all_activation_texts()) CHECK_FALSE(resolve_activation(t).is_row());
  CHECK_THROWS_AS(resolve_activation("gated(softmax)"), Error);
  // The backward takes the saved output; --row and --cluster belong to row kernels.
  KernelSpec s = row_spec("softmax", Dtype::f32, Direction::backward);
  s.saved = Saved::input;
  CHECK_THROWS_AS(resolve_config(s, KernelConfig{}, TargetLimits{}), Error);
  KernelSpec selu;
  CHECK_THROWS_AS(resolve_config(selu, row_config(RowStrategy::online, 256, 1), TargetLimits{}), Error);
  // Clusters only where the device has them (OpenCL: never).
  TargetLimits opencl;
  opencl.backend = "opencl";
  const KernelSpec f = row_spec("softmax", Dtype::f32, Direction::forward);
  CHECK_THROWS_AS(resolve_config(f, row_config(RowStrategy::cluster, 256, 1), opencl), Error);
  TargetLimits hopper;
  hopper.max_cluster = 16;
  KernelConfig c = row_config(RowStrategy::cluster, 256, 1);
  c.cluster = 3;
  CHECK_THROWS_AS(resolve_config(f, c, hopper), Error);
  // Registers across a cluster: where clusters exist, one-shot only, its row split over the blocks.
  KernelConfig spread = row_config(RowStrategy::registers, 1024, 6);
  spread.vec = 4;
  spread.cluster = 16;
  CHECK_THROWS_WITH_AS(resolve_config(f, spread, opencl), doctest::Contains("clusters"), Error);
  const KernelConfig spread_ok = resolve_config(f, spread, hopper);
  CHECK(row_entry_name(f, spread_ok).find("_reg_cl16") != std::string::npos);
  const rt::LaunchDims spread_dims = row_launch_dims(f, spread_ok, 5, 393216, hopper);
  CHECK(spread_dims.cluster == 16);
  CHECK(spread_dims.grid_x == 5 * 16);
  CHECK_THROWS_WITH_AS(row_launch_dims(f, spread_ok, 5, 393217, hopper), doctest::Contains("longer than"), Error);
  spread.grid = GridPolicy::grid_stride;
  CHECK_THROWS_WITH_AS(resolve_config(f, spread, hopper), doctest::Contains("one-shot"), Error);
  // Online across a cluster: any row, a slice a block; where clusters exist.
  KernelConfig split = row_config(RowStrategy::online, 512, 2);
  split.cluster = 8;
  CHECK_THROWS_WITH_AS(resolve_config(f, split, opencl), doctest::Contains("clusters"), Error);
  const KernelConfig split_ok = resolve_config(f, split, hopper);
  CHECK(row_entry_name(f, split_ok).find("_onl_cl8") != std::string::npos);
  const rt::LaunchDims split_dims = row_launch_dims(f, split_ok, 3, 1u << 20, hopper);
  CHECK(split_dims.cluster == 8);
  CHECK(split_dims.grid_x == 3 * 8);
  split.cluster = 1;
  CHECK(resolve_config(f, split, hopper) == resolve_config(f, row_config(RowStrategy::online, 512, 2), hopper));
  KernelConfig one = row_config(RowStrategy::registers, 256, 2);
  one.cluster = 1;
  CHECK(resolve_config(f, one, opencl) == resolve_config(f, row_config(RowStrategy::registers, 256, 2), opencl));
  one.cluster = 2;
  one.row_threads = 32;
  CHECK_THROWS_WITH_AS(resolve_config(f, one, hopper), doctest::Contains("--row-threads"), Error);
  // A row longer than the strategy holds is refused at launch, naming what would hold it.
  const KernelConfig reg = resolve_config(f, row_config(RowStrategy::registers, 32, 2), opencl);
  CHECK_NOTHROW(row_launch_dims(f, reg, 4, 256, opencl));
  CHECK_THROWS_AS(row_launch_dims(f, reg, 4, 257, opencl), Error);
  // A persistent grid (--grid grid-stride:WAVES) is for registers, whose groups load their next row
  // while they reduce this one: waves x the blocks resident at once, never more than the rows need.
  KernelConfig online = row_config(RowStrategy::online, 256, 1);
  online.grid = GridPolicy::grid_stride;
  online.waves = 1;
  CHECK_THROWS_WITH_AS(resolve_config(f, online, opencl), doctest::Contains("--row registers"), Error);
  KernelConfig persistent = row_config(RowStrategy::registers, 32, 2);
  persistent.grid = GridPolicy::grid_stride;
  persistent.waves = 2;
  TargetLimits gpu;
  gpu.compute_units = 10;
  gpu.max_threads_per_unit = 2048;
  const KernelConfig p = resolve_config(f, persistent, gpu);
  CHECK(row_launch_dims(f, p, 100000, 256, gpu).grid_x == 2 * 10 * (2048 / 32));
  CHECK(row_launch_dims(f, p, 7, 256, gpu).grid_x == 7);
  CHECK(row_launch_dims(f, reg, 100000, 256, gpu).grid_x == 100000);
  // That grid counts threads alone; the backend lowers it to the waves of blocks its registers
  // let reside (a one-shot grid is every row's block, whatever resides).
  CHECK(row_launch_dims(f, p, 100000, 256, gpu).resident_waves == 2);
  CHECK(row_launch_dims(f, reg, 100000, 256, gpu).resident_waves == 0);
  // The pipelined cluster kernel holds two stages of its slice, and its grid is a bound the
  // backend lowers to the clusters resident at once; a cluster of one block is one too.
  TargetLimits h200 = gpu;
  h200.max_cluster = 16;
  h200.max_shared_optin = 227 * 1024;
  KernelConfig pipe = row_config(RowStrategy::cluster, 512, 1);
  pipe.cluster = 16;
  pipe.grid = GridPolicy::grid_stride;
  pipe.waves = 1;
  const KernelSpec lf = row_spec("log_softmax", Dtype::f32, Direction::forward);
  const KernelConfig pr = resolve_config(lf, pipe, h200);
  KernelConfig one_shot = pr;
  one_shot.grid = GridPolicy::one_shot;
  one_shot.waves = 0;
  const rt::LaunchDims pd = row_launch_dims(lf, pr, 4096, 393216, h200);
  CHECK(pd.shared_bytes == 2 * row_launch_dims(lf, one_shot, 4096, 393216, h200).shared_bytes);
  CHECK(pd.resident_waves == 1);
  CHECK(pd.grid_x % 16 == 0);
  CHECK(pd.grid_x < 4096 * 16);
  CHECK(row_launch_dims(lf, one_shot, 4096, 393216, h200).resident_waves == 0);
  // float32 softmax and softmin keep each term for the results: a byte an element more, the top
  // byte of each term's low word (log_softmax's results need no exp, the backward's no terms,
  // 16-bit keeps none).
  CHECK_FALSE(row_keeps_stage_terms(lf, pr));
  CHECK_FALSE(row_keeps_stage_terms(row_spec("softmax", Dtype::f32, Direction::backward), pr));
  CHECK_FALSE(row_keeps_stage_terms(row_spec("softmax", Dtype::bf16, Direction::forward), pr));
  CHECK_FALSE(row_keeps_stage_terms(f, one_shot));
  // Its float32 forward across more than one block sends a row's max with its sum: one exchange
  // a row (16-bit not yet: its default has not run it on a GPU).
  CHECK(row_exchanges_once(lf, pr));
  CHECK_FALSE(row_exchanges_once(row_spec("softmax", Dtype::bf16, Direction::forward), pr));
  setenv("KPLAY_ROW_XCHG1", "all", 1);  // the switch that tests them
  CHECK(row_exchanges_once(row_spec("softmax", Dtype::bf16, Direction::forward), pr));
  CHECK_FALSE(row_exchanges_once(row_spec("softmax", Dtype::f64, Direction::forward), pr));
  setenv("KPLAY_ROW_XCHG1", "0", 1);
  CHECK_FALSE(row_exchanges_once(lf, pr));
  unsetenv("KPLAY_ROW_XCHG1");
  CHECK_FALSE(row_exchanges_once(row_spec("softmax", Dtype::f64, Direction::forward), pr));
  CHECK_FALSE(row_exchanges_once(row_spec("softmax", Dtype::f32, Direction::backward), pr));
  CHECK_FALSE(row_exchanges_once(f, one_shot));
  KernelConfig block_a_row = pr;
  block_a_row.cluster = 1;
  CHECK_FALSE(row_exchanges_once(f, block_a_row));
  for (const char* member : {"softmax", "softmin"}) {
    const KernelSpec kf = row_spec(member, Dtype::f32, Direction::forward);
    CHECK(row_keeps_stage_terms(kf, pr));
    const std::uint64_t sixteenth = row_launch_dims(kf, one_shot, 4096, 131072, h200).shared_bytes;
    CHECK(row_launch_dims(kf, pr, 4096, 131072, h200).shared_bytes == 2 * sixteenth + sixteenth / 4);
    // A 393216-float row's sixteenth (96 KiB): two stages and the terms (216 KiB) fit beside the
    // buffers of a row's one exchange, (sum, max) pairs, of blocks of 256 and 512 (8 KiB), not of
    // 1024 (16 KiB), which get one stage and the terms.
    const std::uint64_t big = row_launch_dims(kf, one_shot, 4096, 393216, h200).shared_bytes;
    CHECK(row_launch_dims(kf, pr, 4096, 393216, h200).shared_bytes == 2 * big + big / 4);
    KernelConfig quarter_block = pr;
    quarter_block.block = 256;
    CHECK(row_launch_dims(kf, quarter_block, 4096, 393216, h200).shared_bytes == 2 * big + big / 4);
    KernelConfig whole_block = pr;
    whole_block.block = 1024;
    CHECK(row_launch_dims(kf, whole_block, 4096, 393216, h200).shared_bytes == big + big / 4);
    // An eighth's stage and terms (240 KiB) do not: refused, saying why.
    KernelConfig eighth = pr;
    eighth.cluster = 8;
    CHECK_THROWS_WITH_AS(row_launch_dims(kf, eighth, 4096, 393216, h200), doctest::Contains("kept terms"), Error);
    // --recompute-terms: two stages and no terms, a second exp; 393216 in 16 then holds two stages.
    KernelConfig again = pr;
    again.recompute_terms = true;
    CHECK_FALSE(row_keeps_stage_terms(kf, again));
    CHECK(row_launch_dims(kf, resolve_config(kf, again, h200), 4096, 393216, h200).shared_bytes ==
          2 * row_launch_dims(kf, one_shot, 4096, 393216, h200).shared_bytes);
    CHECK(row_entry_name(kf, again) != row_entry_name(kf, pr));
  }
  // Refused where no term is kept: log_softmax, bfloat16, the backward, the one-shot kernel.
  KernelConfig again = pipe;
  again.recompute_terms = true;
  CHECK_NOTHROW(resolve_config(f, again, h200));
  CHECK_THROWS_WITH_AS(resolve_config(lf, again, h200), doctest::Contains("--recompute-terms"), Error);
  CHECK_THROWS_AS(resolve_config(row_spec("softmax", Dtype::bf16, Direction::forward), again, h200), Error);
  CHECK_THROWS_AS(resolve_config(row_spec("softmax", Dtype::f32, Direction::backward), again, h200), Error);
  again.grid = GridPolicy::one_shot;
  CHECK_THROWS_AS(resolve_config(f, again, h200), Error);
  KernelSpec selu_spec;
  KernelConfig selu_again;
  selu_again.recompute_terms = true;
  CHECK_THROWS_WITH_AS(resolve_config(selu_spec, selu_again, h200), doctest::Contains("row activations"), Error);
  // Two stages of a 393216-float row's eighth do not fit, one does; a quarter's stage does not:
  // refused, naming the stages.
  pipe.cluster = 8;
  const KernelConfig pe = resolve_config(lf, pipe, h200);
  KernelConfig one_eighth = pe;
  one_eighth.grid = GridPolicy::one_shot;
  one_eighth.waves = 0;
  CHECK(row_launch_dims(lf, pe, 4096, 393216, h200).shared_bytes ==
        row_launch_dims(lf, one_eighth, 4096, 393216, h200).shared_bytes);
  pipe.cluster = 4;
  CHECK_THROWS_WITH_AS(row_launch_dims(lf, resolve_config(lf, pipe, h200), 4096, 393216, h200),
                       doctest::Contains("a stage of the slice"), Error);
  pipe.cluster = 1;
  CHECK(row_launch_dims(f, resolve_config(f, pipe, h200), 100000, 4096, h200).cluster == 1);
  one_shot.cluster = 1;
  CHECK_NOTHROW(resolve_config(f, one_shot, h200));
}

namespace {
// Every member, dtype and direction on `backend` against the row reference with its edge rows:
// rows of one element, ragged rows (no multiple of any vector: misaligned row starts), a thousand,
// and rows long enough to loop (online) or to need many slots. Part `plain`: the online and
// default configs, registers and shared for short rows. Part `clusters` (a device with them):
// clusters of 1 (pipelined), 2, 8 and 16 blocks (16: the non-portable size) for the long rows
// where the slice fits, and registers and online across clusters of 2 and 16 for every row of
// more than one element (16: more blocks than a 33-element row has vectors, so some slices are
// empty). every_config false (PoCL, where each kernel costs a second or two of CPU to compile):
// the extra strategies and the longest rows in float32 and bfloat16 only, the online and default
// configs in every dtype.
// `dtypes`: the dtypes to run (a GPU's test cases split by dtype, so that they can run side by side).
enum class FamilyPart { plain, clusters };
void check_row_family(const char* backend, bool every_config, FamilyPart part = FamilyPart::plain,
                      std::vector<Dtype> dtypes = {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64}) {
  rt::Backend* be = test::shared_backend(backend);
  REQUIRE(be != nullptr);
  Engine& engine = test::shared_engine(backend);
  struct Shape {
    std::uint64_t rows, cols;
  };
  const Shape shapes[] = {{3, 1}, {7, 33}, {9, 1000}, {2, 70001}};
  for (const char* act : {"softmax", "log_softmax", "softmin"})
    for (Dtype d : dtypes)
      for (Direction dir : {Direction::forward, Direction::backward})
        for (const Shape& sh : shapes) {
          const bool all = every_config || d == Dtype::f32 || d == Dtype::bf16;
          if (!all && sh.cols > 1000) continue;
          const KernelSpec spec = row_spec(act, d, dir);
          std::vector<KernelConfig> configs;
          if (part == FamilyPart::plain) {
            configs.push_back(row_config(RowStrategy::online, 64, 2));
            configs.push_back(default_row_config(spec, sh.cols, be->limits()));
            if (sh.cols <= 1000 && all) {
              configs.push_back(row_config(RowStrategy::registers, 128, 4));
              configs.push_back(row_config(RowStrategy::shared, 64, 8));
            }
          }
          if (part == FamilyPart::clusters && sh.cols > 1000)
            for (int cluster : {1, 2, 8, 16})
              for (bool pipelined : {false, true}) {
                if (cluster == 1 && !pipelined) continue;
                KernelConfig c = row_config(RowStrategy::cluster, 256, pipelined ? 1 : 4);
                c.cluster = cluster;
                if (pipelined) {
                  c.grid = GridPolicy::grid_stride;
                  c.waves = 1;
                }
                try {  // a cluster whose slice is beyond the device's shared memory is refused, rightly
                  row_launch_dims(spec, resolve_config(spec, c, be->limits()), sh.rows, sh.cols, be->limits());
                  configs.push_back(c);
                } catch (const Error&) {
                }
              }
          // Registers (the fewest vectors a thread that hold the row) and online across clusters.
          if (part == FamilyPart::clusters && sh.cols > 1 && all)
            for (int cluster : {2, 16}) {
              KernelConfig on = row_config(RowStrategy::online, 128, 2);
              on.cluster = cluster;
              configs.push_back(on);
              for (int pt : {1, 2, 4, 8}) {
                KernelConfig c = row_config(RowStrategy::registers, 256, pt);
                c.cluster = cluster;
                try {  // too few vectors a thread for the row: refused, rightly; the next holds more
                  row_launch_dims(spec, resolve_config(spec, c, be->limits()), sh.rows, sh.cols, be->limits());
                  configs.push_back(c);
                  break;
                } catch (const Error&) {
                }
              }
            }
          for (const KernelConfig& c : configs) {
            ProblemShape ps;
            ps.rows = sh.rows;
            ps.n = sh.rows * sh.cols;
            KPLAY_CHECK_PROBLEM(engine, spec, c, ps);
          }
        }
}
// The persistent registers kernel (--grid grid-stride: each group loads its next row before it
// reduces this one) over more rows than its grid holds, so that every group takes several rows:
// ragged rows of 33 elements (no row but the first starts on a vector), a group per row and
// several rows a block, every member and direction.
void check_row_prefetch(const char* backend) {
  rt::Backend* be = test::shared_backend(backend);
  REQUIRE(be != nullptr);
  Engine& engine = test::shared_engine(backend);
  for (const char* act : {"softmax", "log_softmax", "softmin"})
    for (Dtype d : {Dtype::f32, Dtype::bf16})
      for (Direction dir : {Direction::forward, Direction::backward})
        for (int row_threads : {0, 8}) {
          if (d == Dtype::bf16 && std::string(act) != "softmax") continue;  // the float path once
          const KernelSpec spec = row_spec(act, d, dir);
          KernelConfig c = row_config(RowStrategy::registers, 32, 4);
          c.row_threads = row_threads;
          c.grid = GridPolicy::grid_stride;
          c.waves = 1;
          const std::uint64_t cols = 33;
          const rt::LaunchDims dims =
              row_launch_dims(spec, resolve_config(spec, c, be->limits()), 1ull << 30, cols, be->limits());
          const std::uint64_t per_block = row_threads ? 32 / row_threads : 1;
          ProblemShape ps;
          ps.rows = 3 * dims.grid_x * per_block + 5;
          ps.n = ps.rows * cols;
          INFO("grid " << dims.grid_x << ", rows " << ps.rows);
          KPLAY_CHECK_PROBLEM(engine, spec, c, ps);
        }
}
// The pipelined cluster kernel (--row cluster --grid grid-stride: persistent clusters whose
// blocks reduce one row from shared memory while the bulk copy engine loads the next) over more
// rows than the clusters resident at once, so that each cluster takes several rows through both
// stages: rows whose slices the engine copies whole (65536 columns), rows it copies but for a
// ragged tail or not at all (misaligned starts: 8193 and 70001 columns), a cluster of one block
// and of 2 and 16, every member and direction, with the edge rows. Where two stages do not fit,
// one (393219 columns in 16 in blocks of 1024: float32 softmax's stage and kept terms, whose two
// stages fit beside the exchange buffers of blocks of 256 and 512; the backward's g and y; 70001
// in 2: float32 log_softmax's forward); blocks of 512 there: two stages beside the buffers of a
// row's one exchange of (sum, max) pairs at their largest.
// One dtype and direction a call, so that a device run can take them a test case at a time.
void check_row_pipelined(const char* backend, Dtype d, Direction dir) {
  rt::Backend* be = test::shared_backend(backend);
  REQUIRE(be != nullptr);
  if (be->limits().max_cluster < 16) return;  // sm_90 and newer
  Engine& engine = test::shared_engine(backend);
  for (const char* act : {"softmax", "log_softmax", "softmin"})
    for (int cluster : {1, 2, 16})
      for (std::uint64_t cols : {8193ull, 65536ull, 70001ull, 393219ull})
        for (int block : {256, 512, 1024}) {
          if (d == Dtype::bf16 && std::string(act) != "softmax") continue;  // the float path once
          if (block != 256 && !(cols == 393219 && cluster == 16)) continue;
          const KernelSpec spec = row_spec(act, d, dir);
          KernelConfig c = row_config(RowStrategy::cluster, block, 1);
          c.cluster = cluster;
          c.grid = GridPolicy::grid_stride;
          c.waves = 1;
          // float32 softmax and softmin keep their terms, or (--recompute-terms) not
          for (bool again : {false, true}) {
            if (again && !row_terms_can_be_kept(spec, c)) continue;
            c.recompute_terms = again;
            rt::LaunchDims dims;
            try {
              dims = row_launch_dims(spec, resolve_config(spec, c, be->limits()), 1ull << 30, cols, be->limits());
            } catch (const Error&) {
              continue;  // the slice beyond the shared memory: refused, rightly
            }
            // Twice the rows of the grid's bound, which the backend lowers to the clusters
            // resident at once.
            ProblemShape ps;
            ps.rows = 2 * (dims.grid_x / static_cast<std::uint64_t>(cluster)) + 5;
            ps.n = ps.rows * cols;
            INFO("cluster " << cluster << ", blocks of " << block << ", rows " << ps.rows << " x " << cols << ", terms "
                            << (again ? "recomputed" : "kept") << ", shared " << dims.shared_bytes);
            KPLAY_CHECK_PROBLEM(engine, spec, c, ps);
          }
        }
  // Each member's default at these lengths where it is this kernel (float32 log_softmax's forward
  // up to 65536 columns: four vectors a thread, which the configs above do not take).
  for (const char* act : {"softmax", "log_softmax", "softmin"})
    for (std::uint64_t cols : {8193ull, 65536ull, 70001ull, 393219ull}) {
      const KernelSpec spec = row_spec(act, d, dir);
      const KernelConfig c = default_row_config(spec, cols, be->limits());
      if (c.row != RowStrategy::cluster || c.grid != GridPolicy::grid_stride) continue;
      const rt::LaunchDims dims =
          row_launch_dims(spec, resolve_config(spec, c, be->limits()), 1ull << 30, cols, be->limits());
      ProblemShape ps;
      ps.rows = 2 * (dims.grid_x / static_cast<std::uint64_t>(c.cluster)) + 5;
      ps.n = ps.rows * cols;
      INFO("the default, " << to_string(c));
      KPLAY_CHECK_PROBLEM(engine, spec, c, ps);
    }
}
// Strided rows (softmax over a dimension that is not the last: [outer, cols, inner]) against the
// row reference with its edge rows (every ninth row a kind, so each outer block holds several):
// the strided default (a thread a row, a group of 4 lanes beyond 128 columns), online in groups of
// 4 lanes (a thread a row up to 16 columns) and registers across groups of 8 up to 128 columns, in
// blocks of 64; rows of one element, of 13 (registers, a thread a row), 21 (inner a power of two),
// 100 (45 apart: a warp's rows cross outer blocks) and 300 (the default's groups; inner 3:
// neighbouring rows share a warp's loads unevenly), with an input and output offset off any
// vector. every_config false (PoCL, whose compiles set the suite's time): the defaults in float32
// in every member and direction and in the other dtypes in a member and direction each; the rows of
// 100 and the groups' other configs in float32 softmax both ways and log_softmax forward (softmin
// differs from softmax by a sign; the groups' reductions are every member's).
void check_row_strided(const char* backend, bool every_config) {
  rt::Backend* be = test::shared_backend(backend);
  REQUIRE(be != nullptr);
  Engine& engine = test::shared_engine(backend);
  struct Shape {
    std::uint64_t outer, cols, inner;
  };
  const Shape shapes[] = {{4, 1, 7}, {3, 13, 35}, {2, 21, 64}, {3, 100, 45}, {2, 300, 3}};
  for (const char* act : {"softmax", "log_softmax", "softmin"})
    for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
      for (Direction dir : {Direction::forward, Direction::backward}) {
        if (!every_config && d != Dtype::f32) {
          const bool picked = (d == Dtype::bf16 && std::string(act) == "softmax") ||
                              (d == Dtype::f16 && std::string(act) == "log_softmax" && dir == Direction::backward) ||
                              (d == Dtype::f64 && std::string(act) == "softmin" && dir == Direction::forward);
          if (!picked) continue;
        }
        const KernelSpec spec = row_spec(act, d, dir);
        const bool groups =
            every_config || (d == Dtype::f32 && (std::string(act) == "softmax" ||
                                                 (std::string(act) == "log_softmax" && dir == Direction::forward)));
        for (const Shape& sh : shapes) {
          if (sh.cols == 100 && !groups) continue;
          std::vector<KernelConfig> configs{strided_row_config(spec, sh.cols)};
          KernelConfig on = row_config(RowStrategy::online, 64, 2, 1);
          on.row_threads = sh.cols <= 16 ? 1 : 4;
          if (sh.cols <= 16 || groups) configs.push_back(on);
          if (groups && sh.cols > 16 && sh.cols <= 8 * 16) {
            KernelConfig held = row_config(RowStrategy::registers, 64, 16, 1);
            held.row_threads = 8;
            configs.push_back(held);
          }
          for (const KernelConfig& c : configs) {
            ProblemShape ps;
            ps.rows = sh.outer * sh.inner;
            ps.inner = sh.inner;
            ps.n = sh.outer * sh.cols * sh.inner;
            ps.in_offset = 1;
            ps.out_offset = 3;
            KPLAY_CHECK_PROBLEM(engine, spec, c, ps);
          }
        }
      }
}
// The float32 forward at torch's accuracy (accuracy=torch: each member with a tier in the
// registry) against the row reference with its edge rows, held to the tier's
// bound and what rounding x - max costs torch's formula (row_problem.cpp): rows of one element,
// ragged, a thousand and long; online, the default, registers (the kept terms) and shared, the
// persistent registers kernel in groups of 8 over many rows, strided rows, and on a device with
// clusters the pipelined kernel (a block a row and clusters of 16) and registers across 2.
void check_row_tier(const char* backend) {
  rt::Backend* be = test::shared_backend(backend);
  REQUIRE(be != nullptr);
  Engine& engine = test::shared_engine(backend);
  const bool clusters = be->limits().max_cluster >= 16;
  for (const Activation& a : row_activations()) {
    if (a.torch_tier_forward <= 0) continue;
    const std::string text = a.name + "(accuracy=torch)";
    const KernelSpec spec = row_spec(text.c_str(), Dtype::f32, Direction::forward);
    REQUIRE(row_torch_tier(spec));
    CHECK(resolve_activation(text).bounds().f32_forward == a.torch_tier_forward);
    for (std::uint64_t cols : {1ull, 33ull, 1000ull, 70001ull}) {
      std::vector<KernelConfig> configs{row_config(RowStrategy::online, 64, 2),
                                        default_row_config(spec, cols, be->limits())};
      if (cols <= 1000) {
        configs.push_back(row_config(RowStrategy::registers, 128, 4));
        configs.push_back(row_config(RowStrategy::shared, 64, 8));
      }
      if (cols == 33) {
        KernelConfig p = row_config(RowStrategy::registers, 32, 4);
        p.row_threads = 8;
        p.grid = GridPolicy::grid_stride;
        p.waves = 1;
        configs.push_back(p);
      }
      if (clusters && cols == 70001) {
        for (int cluster : {1, 2, 16}) {
          KernelConfig c = row_config(RowStrategy::cluster, 256, 1);
          c.cluster = cluster;
          c.grid = GridPolicy::grid_stride;
          c.waves = 1;
          try {  // a block a row: the slice beyond the device's shared memory, refused, rightly
            row_launch_dims(spec, resolve_config(spec, c, be->limits()), 1, cols, be->limits());
            configs.push_back(c);
          } catch (const Error&) {
          }
        }
        KernelConfig r = row_config(RowStrategy::registers, 256, 8);
        r.cluster = 16;
        configs.push_back(r);
      }
      for (const KernelConfig& c : configs) {
        ProblemShape ps;
        ps.rows = cols == 33 ? 3001 : cols == 70001 ? 40 : 18;
        ps.n = ps.rows * cols;
        INFO(text << ", " << cols << " columns, " << to_string(c));
        KPLAY_CHECK_PROBLEM(engine, spec, c, ps);
      }
    }
    ProblemShape strided;
    strided.rows = 3 * 45;
    strided.inner = 45;
    strided.n = 3 * 100 * 45;
    KPLAY_CHECK_PROBLEM(engine, spec, strided_row_config(spec, 100), strided);
    // The backward: log_softmax's tier kernel (torch's g - exp(y) sum g in float), held to its
    // bound over short, long and strided rows; the others' the exact kernel, held to the exact bound.
    const KernelSpec back = row_spec(text.c_str(), Dtype::f32, Direction::backward);
    CHECK(row_torch_tier(back) == (a.torch_tier_backward > 0));
    if (a.torch_tier_backward > 0) CHECK(resolve_activation(text).bounds().f32_backward == a.torch_tier_backward);
    for (std::uint64_t cols : {1ull, 1000ull, 70001ull}) {
      ProblemShape ps;
      ps.rows = cols == 70001 ? 9 : 18;
      ps.n = ps.rows * cols;
      INFO(text << " backward, " << cols << " columns");
      KPLAY_CHECK_PROBLEM(engine, back, default_row_config(back, cols, be->limits()), ps);
      if (a.torch_tier_backward > 0 && cols == 1000)
        KPLAY_CHECK_PROBLEM(engine, back, row_config(RowStrategy::online, 64, 2), ps);
    }
    if (a.torch_tier_backward > 0) KPLAY_CHECK_PROBLEM(engine, back, strided_row_config(back, 100), strided);
  }
}
}  // namespace

TEST_SUITE("cuda") {
  TEST_CASE("CUDA: strided rows (a dim that is not the last), every member, dtype and direction") {
    test::with_kernels_warmed([] { check_row_strided("cuda", true); });
  }
  TEST_CASE("CUDA: the pipelined cluster kernel, each cluster over several rows: float32 forward") {
    test::with_kernels_warmed([] { check_row_pipelined("cuda", Dtype::f32, Direction::forward); });
  }
  TEST_CASE("CUDA: the pipelined cluster kernel, each cluster over several rows: float32 backward") {
    test::with_kernels_warmed([] { check_row_pipelined("cuda", Dtype::f32, Direction::backward); });
  }
  TEST_CASE("CUDA: the pipelined cluster kernel, each cluster over several rows: bfloat16") {
    test::with_kernels_warmed([] {
      check_row_pipelined("cuda", Dtype::bf16, Direction::forward);
      check_row_pipelined("cuda", Dtype::bf16, Direction::backward);
    });
  }
  TEST_CASE("CUDA: softmax, log_softmax and softmin in float32, every strategy and direction, with the edge rows") {
    test::with_kernels_warmed([] { check_row_family("cuda", true, FamilyPart::plain, {Dtype::f32}); });
  }
  TEST_CASE("CUDA: softmax, log_softmax and softmin in float16, every strategy and direction, with the edge rows") {
    test::with_kernels_warmed([] { check_row_family("cuda", true, FamilyPart::plain, {Dtype::f16}); });
  }
  TEST_CASE("CUDA: softmax, log_softmax and softmin in bfloat16, every strategy and direction, with the edge rows") {
    test::with_kernels_warmed([] { check_row_family("cuda", true, FamilyPart::plain, {Dtype::bf16}); });
  }
  TEST_CASE("CUDA: softmax, log_softmax and softmin in float64, every strategy and direction, with the edge rows") {
    test::with_kernels_warmed([] { check_row_family("cuda", true, FamilyPart::plain, {Dtype::f64}); });
  }
  TEST_CASE("CUDA: the row family across thread-block clusters (sm_90), every strategy, dtype and direction") {
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    if (be->limits().max_cluster < 16) {
      MESSAGE("skipped: the device has no clusters of 16 (sm_90 and newer)");
      return;
    }
    test::with_kernels_warmed([] { check_row_family("cuda", true, FamilyPart::clusters); });
  }
  TEST_CASE("CUDA: the persistent registers kernel, each group over several rows") {
    test::with_kernels_warmed([] { check_row_prefetch("cuda"); });
  }
  TEST_CASE("CUDA: the softmax family at torch's accuracy (float32 forward), every strategy, with the edge rows") {
    test::with_kernels_warmed([] { check_row_tier("cuda"); });
  }
  TEST_CASE(
      "CUDA: a cluster slice of exactly 48 KiB of shared memory launches (with the kernel's static shared memory)") {
    // The default limit, 48 KiB, counts static and dynamic shared memory together: a slice of
    // exactly 48 KiB needs the opt-in too (it failed with CUDA_ERROR_INVALID_VALUE).
    rt::Backend* be = test::shared_backend("cuda");
    REQUIRE(be != nullptr);
    if (be->limits().max_cluster < 2) {
      MESSAGE("skipped: the device has no clusters (sm_90 and newer)");
      return;
    }
    Engine engine(*be);
    for (Dtype d : {Dtype::f32, Dtype::bf16}) {
      KernelConfig c = row_config(RowStrategy::cluster, 256, 4);
      c.cluster = 2;
      ProblemShape ps;
      ps.rows = 3;
      ps.n = 3 * 2 * (48 * 1024 / dtype_size(d));  // two slices of 48 KiB a row
      for (Direction dir : {Direction::forward, Direction::backward})
        KPLAY_CHECK_PROBLEM(engine, row_spec("softmax", d, dir), c, ps);
    }
  }
}

TEST_SUITE("opencl") {
  TEST_CASE("OpenCL: softmax, log_softmax and softmin, every strategy, dtype and direction, with the edge rows") {
    check_row_family("opencl", false);
  }
  TEST_CASE("OpenCL: the persistent registers kernel, each group over several rows") { check_row_prefetch("opencl"); }
  TEST_CASE("OpenCL: the softmax family at torch's accuracy (float32 forward), every strategy, with the edge rows") {
    check_row_tier("opencl");
  }
  TEST_CASE("OpenCL: strided rows (a dim that is not the last), every member and direction") {
    check_row_strided("opencl", false);
  }

  TEST_CASE("OpenCL: a row kernel runs its whole-vector form on whole rows and its general twin elsewhere") {
    rt::Backend* be = test::shared_backend("opencl");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    const KernelSpec spec = row_spec("log_softmax", Dtype::f32, Direction::backward);
    const auto kernel = engine.prepare(spec, row_config(RowStrategy::registers, 64, 2), Layout::flat);
    struct Case {
      std::uint64_t cols, in_offset;
      bool whole;
    };
    for (const Case c : {Case{64, 0, true}, Case{63, 0, false}, Case{64, 1, false}, Case{64, 4, true}}) {
      ProblemShape ps;
      ps.rows = 6;
      ps.n = 6 * c.cols;
      ps.in_offset = c.in_offset;
      const auto problem = make_problem(*be, spec, ps);
      const PreparedKernel& runs = engine.kernel_for(*kernel, problem->args());
      INFO(c.cols << " columns, input offset " << c.in_offset << ": " << runs.rendered.entry);
      CHECK((runs.rendered.entry.size() > 2 && runs.rendered.entry.substr(runs.rendered.entry.size() - 2) == "_w") ==
            c.whole);
      problem->launch(engine, *kernel);
      be->synchronize();
      const auto stats = problem->verify(false);
      CHECK(stats.mismatches == 0);
      CHECK(stats.checked == ps.n);
    }
  }

  TEST_CASE("OpenCL: row kernels on misaligned buffers and with scalar vectors") {
    rt::Backend* be = test::shared_backend("opencl");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    for (Direction dir : {Direction::forward, Direction::backward})
      for (RowStrategy row : {RowStrategy::registers, RowStrategy::online}) {
        const KernelSpec spec = row_spec("softmax", Dtype::f32, dir);
        for (int vec : {1, 4}) {
          ProblemShape ps;
          ps.rows = 5;
          ps.n = 5 * 64;
          ps.in_offset = 1;
          ps.out_offset = 3;
          KPLAY_CHECK_PROBLEM(engine, spec, row_config(row, 32, 2, vec), ps);
        }
      }
  }

  TEST_CASE("OpenCL: a row problem of ordinary rows has no edge row; kplay run times row activations on such") {
    rt::Backend* be = test::shared_backend("opencl");
    REQUIRE(be != nullptr);
    Engine engine(*be);
    const KernelSpec spec = row_spec("softmax", Dtype::f32, Direction::forward);
    const auto kernel = engine.prepare(spec, default_row_config(spec, 100, be->limits()), Layout::flat);
    for (bool ordinary : {false, true}) {
      ProblemShape ps;
      ps.rows = 16;
      ps.n = 16 * 100;
      ps.seed = 7;
      ps.ordinary = ordinary;
      const auto problem = make_problem(*be, spec, ps);
      problem->launch(engine, *kernel);
      be->synchronize();
      CHECK(problem->verify(false).mismatches == 0);
      std::vector<float> y(ps.n);
      be->download(y.data(), problem->args().out, ps.n * sizeof(float));
      // The check's rows holding +inf or NaN, or every element -inf, are NaN throughout (torch's
      // edges); ordinary rows have none.
      const auto nans = std::count_if(y.begin(), y.end(), [](float v) { return std::isnan(v); });
      CHECK((nans > 0) == !ordinary);
    }
    const test::CliResult r = test::run_cli("run --backend opencl --act log_softmax --shape 8x300 --no-db --repeat 2");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.has("timed:  on ordinary rows"));
  }

  TEST_CASE("OpenCL: 16-bit log_softmax online keeps sum - 1 where a thread's max rises far above its earlier max") {
    // The check's row 1 at this seed (wide spread, one element 64 above the rest, bfloat16) gives
    // a thread of the online pass an earlier max 64 below the row's: its terms, rescaled, make up
    // sum - 1, which the result next to 0 is (-log1p(sum - 1): 4.8e-28, 51 ulp when the rescaled
    // terms were absorbed by the new max's term of 1). Fixed inputs, as the failure needs them.
    rt::Backend* be = test::shared_backend("opencl");
    REQUIRE(be != nullptr);
    Engine& engine = test::shared_engine("opencl");
    const KernelSpec spec = row_spec("log_softmax", Dtype::bf16, Direction::forward);
    const auto kernel = engine.prepare(spec, row_config(RowStrategy::online, 64, 2), Layout::flat);
    ProblemShape ps;
    ps.rows = 2;
    ps.n = 2 * 70001;
    ps.seed = 17686203679737112137ull;
    const auto problem = make_problem(*be, spec, ps);
    problem->launch(engine, *kernel);
    be->synchronize();
    const ErrorStats e = problem->verify(false);
    INFO(e.summary());
    CHECK(e.mismatches == 0);
  }

  TEST_CASE("OpenCL: kplay run, check, emit and list take the row activations, over any --dim; bad --dim exits 2") {
    test::CliResult r = test::run_cli(
        "run --backend opencl --act softmax,log_softmax,softmin --shape 16x3000 --repeat 1 --warmup 0 --no-db");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("verdict: PASS") != std::string::npos);
    r = test::run_cli(
        "run --backend opencl --act softmax --direction backward --dtype bf16 --shape 4x5000 --repeat 1 --warmup 0 "
        "--no-db");
    INFO(r.output);
    CHECK(r.status == 0);
    // check: rows of 1 to 1,000,003 elements, then strided rows, every element against the reference.
    r = test::run_cli("check --backend opencl --act log_softmax");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("rows 2 x 1000003") != std::string::npos);
    CHECK(r.output.find("(strided, 4096 apart)") != std::string::npos);
    CHECK(r.output.find("verdict: PASS") != std::string::npos);
    r = test::run_cli("run --backend opencl --act softmax --shape 4x5 --dim 2 --no-db");
    CHECK(r.status == 2);
    CHECK(r.output.find("--dim 2") != std::string::npos);
    // Another dimension: strided rows, checked like any (Softmax2d's channels of [N, C, H, W]).
    r = test::run_cli(
        "run --backend opencl --act softmax,log_softmax --shape 2x6x3x5 --dim 1 --no-db --repeat 1 --warmup 0");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("_st,") != std::string::npos);
    CHECK(r.output.find("(strided: 15 apart)") != std::string::npos);
    CHECK(r.output.find("verdict: FAIL") == std::string::npos);
    r = test::run_cli(
        "run --backend opencl --act softmin --direction backward --shape 6x7 --dim -2 --no-db --repeat 1 --warmup 0 "
        "--row registers --per-thread 8");
    CHECK(r.status == 0);
    r = test::run_cli(
        "bench --backend opencl --act log_softmax --direction backward --shape 2x6x3x5 --dim 1 --no-db --repeat 1 "
        "--warmup 0");
    INFO(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("2x6x3x5@1") != std::string::npos);
    CHECK(r.output.find("row-threads=1") != std::string::npos);
    CHECK(r.output.find("WRONG OUTPUT") == std::string::npos);
    r = test::run_cli("run --backend opencl --act softmax --shape 4x5 --dim 0 --no-db --row online --vec 4");
    CHECK(r.status == 2);
    CHECK(r.output.find("--vec 1") != std::string::npos);
    r = test::run_cli("run --backend opencl --act softmax --shape 4x5 --dim -1 --no-db --repeat 1 --warmup 0");
    CHECK(r.status == 0);
    r = test::run_cli("run --backend opencl --act softmax --shape 4x5 --row cluster --no-db");
    CHECK(r.status == 2);
    r = test::run_cli("run --backend opencl --act softmax --shape 2x5000 --row registers --block 32 --no-db");
    CHECK(r.status == 2);
    CHECK(r.output.find("longer than --row registers holds") != std::string::npos);
    CHECK(r.output.find("kernel:") == std::string::npos);  // refused before a kernel is compiled
    r = test::run_cli(
        "run --backend opencl --act softmax --shape 2x5000 --row registers --grid grid-stride --no-db "
        "--block 32 --per-thread 1");
    CHECK(r.status == 2);
    r = test::run_cli("run --backend opencl --act softmax --shape 2x5000 --row online --grid grid-stride --no-db");
    CHECK(r.status == 2);
    CHECK(r.output.find("--grid grid-stride is for --row registers") != std::string::npos);
    r = test::run_cli("run --backend opencl --act selu --n 100 --row online --no-db");
    CHECK(r.status == 2);
    r = test::run_cli("emit --backend opencl --act log_softmax --row online");
    CHECK(r.status == 0);
    CHECK(r.output.find("#define KP_ROW_LOG 1") != std::string::npos);
    // emit prints the config run launches: a row activation's is that of --shape's rows, and with
    // --layout strided that of strided rows of the last dimension's length (run's --dim 1 here).
    auto config_of = [](const std::string& output) {
      const std::size_t at = output.find("\nconfig: ");
      return at == std::string::npos ? std::string() : output.substr(at + 1, output.find('\n', at + 1) - at - 1);
    };
    for (const auto& [ran, emitted] :
         std::vector<std::pair<std::string, std::string>>{{"--shape 65536x128", "--shape 65536x128"},
                                                          {"--shape 16x3000", "--shape 16x3000"},
                                                          {"--shape 2x6x5 --dim 1", "--shape 10x6 --layout strided"}}) {
      const std::string common = "--backend opencl --act softmax --no-db ";
      const test::CliResult a = test::run_cli("run " + common + ran + " --repeat 1 --warmup 0");
      const test::CliResult b = test::run_cli("emit " + common + emitted);
      INFO(a.output << b.output);
      REQUIRE(a.status == 0);
      REQUIRE(b.status == 0);
      CHECK_FALSE(config_of(b.output).empty());
      CHECK(config_of(a.output) == config_of(b.output));
    }
    r = test::run_cli("list");
    CHECK(r.output.find("softmax") != std::string::npos);
    r = test::run_cli("list --names");
    CHECK(r.output.find("softmax") == std::string::npos);  // --names: what --act all runs
  }
}

#ifdef KPLAY_WITH_CUDA
namespace {
// The static shared memory a kernel's PTX declares (`.shared .align A .b8 name[N];`, each placed
// at its alignment), which launch_geometry counts as row_static_shared_bytes beside the dynamic
// stages: an estimate below it would launch a config the device refuses.
std::uint64_t ptx_static_shared(const std::string& ptx) {
  std::uint64_t total = 0;
  for (std::size_t at = ptx.find(".shared .align "); at != std::string::npos;
       at = ptx.find(".shared .align ", at + 1)) {
    if (at >= 8 && ptx.compare(at - 8, 8, ".extern ") == 0) continue;  // the dynamic stages
    const std::uint64_t align = std::strtoull(ptx.c_str() + at + 15, nullptr, 10);
    const std::size_t open = ptx.find('[', at), close = ptx.find(']', at);
    REQUIRE(open < close);
    total = (total + align - 1) / align * align + std::strtoull(ptx.c_str() + open + 1, nullptr, 10);
  }
  return total;
}
}  // namespace

TEST_SUITE("nvrtc") {
  TEST_CASE("the torch tier's row kernel (float32) compiles for sm_90 with every strategy, in float") {
    TargetLimits hopper;
    hopper.max_cluster = 16;
    for (const Activation& a : row_activations())
      for (Direction d : {Direction::forward, Direction::backward}) {
        const std::string text = a.name + "(accuracy=torch)";
        if (a.torch_tier_forward <= 0 || !resolve_activation(text).torch_tier_kernel(d)) continue;
        const KernelSpec spec = row_spec(text.c_str(), Dtype::f32, d);
        for (RowStrategy row :
             {RowStrategy::registers, RowStrategy::shared, RowStrategy::online, RowStrategy::cluster}) {
          KernelConfig c = row_config(row, 256, row == RowStrategy::shared ? 2 : 4);
          if (row == RowStrategy::cluster) {
            c.cluster = 16;
            c.grid = GridPolicy::grid_stride;
            c.waves = 1;
          }
          const KernelConfig rc = resolve_config(spec, c, hopper);
          const RenderedKernel k = render_kernel(spec, rc, rt::dialect_of("cuda"));
          const RenderedKernel exact =
              render_kernel(row_spec(a.name.c_str(), Dtype::f32, d), rc, rt::dialect_of("cuda"));
          INFO(k.entry);
          CHECK(k.entry == exact.entry + "_tt");
          rt::cuda::CompileTarget t;
          t.arch = 90;
          t.ptx = true;
          std::string ptx;
          CHECK_NOTHROW(ptx = rt::cuda::Nvrtc::get().compile(k, t).bytes);
          CHECK(ptx_static_shared(ptx) <= row_static_shared_bytes(spec, rc));
          // the terms by the hardware's ex2 in float; no exp table (the exact kernel's doubles)
          CHECK(ptx.find("ex2.approx") != std::string::npos);
          CHECK(rt::cuda::Nvrtc::get().compile(exact, t).bytes.find("ex2.approx") == std::string::npos);
          // the kept terms and the one exchange are the exact kernel's (its doubles)
          CHECK_FALSE(row_keeps_stage_terms(spec, rc));
          CHECK_FALSE(row_exchanges_once(spec, rc));
        }
      }
  }
  TEST_CASE("the row kernel compiles for sm_80 and sm_90 with every strategy (clusters: sm_90)") {
    TargetLimits hopper;
    hopper.max_cluster = 16;
    for (int arch : {80, 90})
      for (const char* act : {"softmax", "log_softmax", "softmin"})
        for (Dtype d : {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64})
          for (Direction dir : {Direction::forward, Direction::backward})
            for (RowStrategy row :
                 {RowStrategy::registers, RowStrategy::shared, RowStrategy::online, RowStrategy::cluster}) {
              if (row == RowStrategy::cluster && arch < 90) continue;
              const KernelSpec spec = row_spec(act, d, dir);
              KernelConfig c = row_config(row, 256, row == RowStrategy::shared ? 2 : 4);
              if (row == RowStrategy::cluster) c.cluster = 8;
              const KernelConfig rc = resolve_config(spec, c, hopper);
              const RenderedKernel k = render_kernel(spec, rc, rt::dialect_of("cuda"));
              rt::cuda::CompileTarget t;
              t.arch = arch;
              t.ptx = true;
              INFO(k.entry << " sm_" << arch);
              std::string ptx;
              CHECK_NOTHROW(ptx = rt::cuda::Nvrtc::get().compile(k, t).bytes);
              CHECK(ptx_static_shared(ptx) <= row_static_shared_bytes(spec, rc));
              // 16-byte accesses where the row allows them.
              CHECK((ptx.find("ld.global.v4.u32") != std::string::npos ||
                     ptx.find("ld.global.v2.u64") != std::string::npos));
              if (row == RowStrategy::cluster) CHECK(ptx.find("barrier.cluster") != std::string::npos);
              // a cluster's reductions by pushes into distributed shared memory, completing on mbarriers
              if (row == RowStrategy::cluster && c.cluster > 1)
                CHECK(ptx.find("st.async.shared::cluster.mbarrier::complete_tx") != std::string::npos);
              if (row == RowStrategy::cluster && arch >= 90) {  // and pipelined: the bulk copy engine's loads
                c.grid = GridPolicy::grid_stride;
                c.waves = 1;
                for (int block : {256, 512}) {  // 512: one exchange a row's buffers at their largest
                  if (block == 512 && (d != Dtype::f32 || dir != Direction::forward)) continue;
                  c.block = block;
                  const KernelConfig pc = resolve_config(spec, c, hopper);
                  const RenderedKernel pk = render_kernel(spec, pc, rt::dialect_of("cuda"));
                  INFO(pk.entry);
                  CHECK_NOTHROW(ptx = rt::cuda::Nvrtc::get().compile(pk, t).bytes);
                  CHECK(ptx_static_shared(ptx) <= row_static_shared_bytes(spec, pc));
                }
                c.block = 256;
                const RenderedKernel p = render_kernel(spec, resolve_config(spec, c, hopper), rt::dialect_of("cuda"));
                CHECK_NOTHROW(ptx = rt::cuda::Nvrtc::get().compile(p, t).bytes);
                CHECK(ptx.find("cp.async.bulk.shared::cluster.global.mbarrier") != std::string::npos);
                CHECK(ptx.find("mbarrier.try_wait.parity") != std::string::npos);
              }
              if ((row == RowStrategy::registers || row == RowStrategy::online) &&
                  arch >= 90) {  // registers or online across a cluster
                c.cluster = 4;
                const RenderedKernel r = render_kernel(spec, resolve_config(spec, c, hopper), rt::dialect_of("cuda"));
                INFO(r.entry);
                CHECK_NOTHROW(ptx = rt::cuda::Nvrtc::get().compile(r, t).bytes);
                CHECK(ptx.find("barrier.cluster") != std::string::npos);
                CHECK(ptx.find("ld.shared::cluster.f64") != std::string::npos);
              }
              // Strided rows: their own loads, addressing and (across threads) reductions; the math
              // is the dtype's, so float32 and bfloat16 cover both paths.
              if ((row == RowStrategy::registers || row == RowStrategy::online) && arch >= 90 &&
                  (d == Dtype::f32 || d == Dtype::bf16))
                for (int group : {1, 8}) {
                  if (group > 1 && d != Dtype::f32) continue;  // the groups reduce doubles in every dtype
                  KernelConfig s = row_config(row, 256, 4, 1);
                  s.row_threads = group;
                  const RenderedKernel r =
                      render_kernel(spec, resolve_config(spec, s, hopper), rt::dialect_of("cuda"), Layout::strided);
                  INFO(r.entry);
                  CHECK(r.entry.find("_st") != std::string::npos);
                  CHECK_NOTHROW(ptx = rt::cuda::Nvrtc::get().compile(r, t).bytes);
                  // Element by element: no vector loads; a group's values by shuffles (its neighbouring
                  // lanes), none for a thread a row.
                  CHECK(ptx.find("ld.global.v") == std::string::npos);
                  CHECK((ptx.find("shfl.sync") != std::string::npos) == (group > 1));
                }
            }
  }
}
#endif
