// See api_buffers.hpp.
#include "api_buffers.hpp"

#include <mutex>

#include "device_fixture.hpp"
#include "kplay/error.hpp"
#ifdef KPLAY_WITH_OPENCL
#include <CL/cl.h>
#endif

namespace kplay::test {
namespace {
class CudaUserDevice : public UserDevice {
 public:
  explicit CudaUserDevice(rt::Backend& be) : be_(be) {}
  ~CudaUserDevice() override {
    for (auto& p : owned_) be_.release(p);
  }
  void* allocate(std::size_t bytes) override {
    const rt::DevicePtr p = be_.allocate(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    owned_.push_back(p);
    return reinterpret_cast<void*>(p.handle);
  }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    be_.upload({reinterpret_cast<std::uint64_t>(dst), 0}, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    finish();
    be_.download(dst, {reinterpret_cast<std::uint64_t>(src), 0}, bytes);
  }
  void finish() override { be_.synchronize(); }
  // The legacy default stream: downloads through the backend synchronize with it.
  Stream stream() override { return {Backend::cuda, nullptr}; }
  void* offset(void* base, std::size_t bytes) override { return static_cast<char*>(base) + bytes; }
  std::vector<Dtype> dtypes() override { return {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64}; }

 private:
  rt::Backend& be_;
  std::mutex mutex_;
  std::vector<rt::DevicePtr> owned_;
};

#ifdef KPLAY_WITH_OPENCL
class OpenclUserDevice : public UserDevice {
 public:
  OpenclUserDevice(cl_context ctx, cl_command_queue q, bool fp64) : ctx_(ctx), q_(q), fp64_(fp64) {}
  ~OpenclUserDevice() override {
    for (cl_mem m : owned_) clReleaseMemObject(m);
    clReleaseCommandQueue(q_);
    clReleaseContext(ctx_);
  }
  void* allocate(std::size_t bytes) override {
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx_, CL_MEM_READ_WRITE, bytes ? bytes : 1, nullptr, &err);
    if (err != CL_SUCCESS) throw Error(ErrorCode::runtime_failed, "clCreateBuffer failed in the test");
    std::lock_guard<std::mutex> lock(mutex_);
    owned_.push_back(m);
    return m;
  }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) clEnqueueWriteBuffer(q_, static_cast<cl_mem>(dst), CL_TRUE, 0, bytes, src, 0, nullptr, nullptr);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    if (bytes)
      clEnqueueReadBuffer(q_, static_cast<cl_mem>(const_cast<void*>(src)), CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr);
  }
  void finish() override { clFinish(q_); }
  Stream stream() override { return {Backend::opencl, q_}; }
  void* offset(void* base, std::size_t bytes) override { return bytes ? nullptr : base; }
  std::vector<Dtype> dtypes() override {
    std::vector<Dtype> d = {Dtype::f32, Dtype::f16, Dtype::bf16};
    if (fp64_) d.push_back(Dtype::f64);
    return d;
  }

 private:
  cl_context ctx_;
  cl_command_queue q_;
  bool fp64_;
  std::mutex mutex_;
  std::vector<cl_mem> owned_;
};
#endif
}  // namespace

std::unique_ptr<UserDevice> cuda_user_device(std::string* why) {
  rt::Backend* be = shared_backend("cuda");
  if (!be) {
    backend_available("cuda", why);
    return nullptr;
  }
  return std::make_unique<CudaUserDevice>(*be);
}

std::unique_ptr<UserDevice> opencl_user_device(std::string* why) {
#ifdef KPLAY_WITH_OPENCL
  cl_platform_id platform = nullptr;
  cl_uint count = 0;
  if (clGetPlatformIDs(1, &platform, &count) != CL_SUCCESS || count == 0) {
    if (why) *why = "no OpenCL platform";
    return nullptr;
  }
  cl_device_id device = nullptr;
  if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &count) != CL_SUCCESS || count == 0) {
    if (why) *why = "no OpenCL device";
    return nullptr;
  }
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
  char ext[8192] = {};
  clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, nullptr);
  return std::make_unique<OpenclUserDevice>(ctx, q, std::string(ext).find("cl_khr_fp64") != std::string::npos);
#else
  if (why) *why = "kplay was built without OpenCL";
  return nullptr;
#endif
}

}  // namespace kplay::test
