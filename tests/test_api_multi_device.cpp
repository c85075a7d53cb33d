// Several CUDA devices served from one process: every device at once, two threads per device, each
// thread with its own context push and its own non-blocking stream, as a multi-GPU user would
// call kplay. Every element of every call is checked against the reference. With one device this
// still runs (threads and streams); the two-GPU check is this test on two GPUs.
#include <doctest/doctest.h>

#ifdef KPLAY_WITH_CUDA
#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api_buffers.hpp"
#include "check/verification.hpp"
#include "kplay/kplay.hpp"
#include "runtime/cuda/cuda_driver.hpp"
#include "util/host_dtype.hpp"

using namespace kplay;
using rt::cuda::CU_STREAM_NON_BLOCKING;  // kplay's declarations of the driver API (cuda_api.hpp)
using rt::cuda::CUcontext;
using rt::cuda::CUdevice;
using rt::cuda::CUdeviceptr;
using rt::cuda::CUstream;

namespace {
struct Outcome {
  std::mutex mutex;
  std::vector<std::string> failures;
  std::atomic<int> calls{0};
  void fail(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back(what);
  }
};

// One thread's work on `ordinal`: its own stream; a few specs; every result checked.
void serve_device(int ordinal, int thread, Outcome& outcome) {
  const auto& d = rt::cuda::driver();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  rt::cuda::check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  rt::cuda::check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  rt::cuda::check(d.cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
  rt::cuda::check(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  const std::vector<KernelSpec> specs = [] {
    std::vector<KernelSpec> v(4);
    v[0].activation = "selu";
    v[1].activation = "gelu";
    v[2].activation = "silu";
    v[2].dtype = Dtype::bf16;
    v[3].activation = "selu";
    v[3].direction = Direction::backward;
    return v;
  }();
  const std::int64_t n = 100003 + thread;  // threads differ in size, so in tails too
  for (int round = 0; round < 3; ++round)
    for (const KernelSpec& spec : specs) {
      const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(spec.dtype);
      ReferenceProblem ref(spec, std::random_device{}());
      std::vector<unsigned char> a(bytes), b(bytes), out(bytes, 0xCD);
      for (std::int64_t i = 0; i < n; ++i) {
        store_element(spec.dtype, a.data(), i, ref.in0(i));
        store_element(spec.dtype, b.data(), i, ref.in1(i));
      }
      CUdeviceptr da = 0, db = 0, dout = 0;
      rt::cuda::check(d.cuMemAlloc(&da, bytes), "cuMemAlloc");
      rt::cuda::check(d.cuMemAlloc(&db, bytes), "cuMemAlloc");
      rt::cuda::check(d.cuMemAlloc(&dout, bytes), "cuMemAlloc");
      rt::cuda::check(d.cuMemcpyHtoDAsync(da, a.data(), bytes, stream), "cuMemcpyHtoDAsync");
      rt::cuda::check(d.cuMemcpyHtoDAsync(db, b.data(), bytes, stream), "cuMemcpyHtoDAsync");
      rt::cuda::check(d.cuMemcpyHtoDAsync(dout, out.data(), bytes, stream), "cuMemcpyHtoDAsync");
      auto ptr = [](CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p)); };
      const Stream s{Backend::cuda, stream};
      if (spec.direction == Direction::forward)
        forward(spec.activation, spec.dtype, ptr(da), ptr(dout), n, s);
      else
        backward(spec.activation, spec.dtype, ptr(da), ptr(db), spec.saved, ptr(dout), n, s);
      rt::cuda::check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
      rt::cuda::check(d.cuMemcpyDtoH(out.data(), dout, bytes), "cuMemcpyDtoH");
      for (CUdeviceptr p : {da, db, dout}) d.cuMemFree(p);
      ErrorStats st(spec.dtype, ulp_bound(spec), spec.direction == Direction::backward);
      for (std::int64_t i = 0; i < n; ++i)
        st.add(i, load_element(spec.dtype, out.data(), i), ref.expected(i), ref.error_scale(i));
      ++outcome.calls;
      if (st.mismatches != 0)
        outcome.fail("device " + std::to_string(ordinal) + " thread " + std::to_string(thread) + " " + to_string(spec) +
                     ": " + st.summary());
    }
  d.cuStreamDestroy(stream);
  CUcontext popped = nullptr;
  d.cuCtxPopCurrent(&popped);
  d.cuDevicePrimaryCtxRelease(dev);
}
}  // namespace

TEST_SUITE("cuda") {
  TEST_CASE("API on CUDA: every device at once, two threads per device, a stream each") {
    std::string why;
    REQUIRE_MESSAGE(test::cuda_user_device(&why), why);
    int count = 0;
    rt::cuda::check(rt::cuda::driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
    MESSAGE("CUDA devices in this process: " << count);
    Outcome outcome;
    std::vector<std::thread> threads;
    for (int dev = 0; dev < count; ++dev)
      for (int t = 0; t < 2; ++t)
        threads.emplace_back([&, dev, t] {
          try {
            serve_device(dev, t, outcome);
          } catch (const std::exception& e) {
            outcome.fail("device " + std::to_string(dev) + " thread " + std::to_string(t) + ": " + e.what());
          }
        });
    for (auto& t : threads) t.join();
    for (const auto& f : outcome.failures) MESSAGE(f);
    CHECK(outcome.failures.empty());
    CHECK(outcome.calls == count * 2 * 3 * 4);
  }
}
#endif
