// Runs templates/common/precise_math.h through an OpenCL device (PoCL in CI) and compares every
// result bit for bit with the host build, over a sample of float inputs: shows the header compiles
// as OpenCL C 1.2 and that the device performs the same operations. Exit 77 without a device.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host_prelude.h"
#include "precise_math.h"

#include "precise_grad.h"  // needs precise_math.h first: a block of its own keeps include sorting off it

int kp_host_rcp_nudge = 0;
int kp_host_ex2_nudge = 0;

namespace {

struct Fn {
  const char* name;
  float (*host)(float);
};
float softplus_b2(float x) { return kp_precise_softplus(x, 2.0f, 20.0f); }
float expm1_sum(float x) {
  float lo, hi = kp_expm1_ff(x, &lo);
  return hi + lo;
}
const Fn kFns[] = {{"expm1_sum", expm1_sum},
                   {"kp_precise_sigmoid", kp_precise_sigmoid},
                   {"kp_precise_silu", kp_precise_silu},
                   {"kp_precise_tanh", kp_precise_tanh},
                   {"kp_precise_tanhshrink", kp_precise_tanhshrink},
                   {"softplus_b2", softplus_b2},
                   {"kp_precise_logsigmoid", kp_precise_logsigmoid},
                   {"kp_precise_mish", kp_precise_mish},
                   {"kp_precise_gelu_tanh", kp_precise_gelu_tanh},
                   {"kp_precise_gelu", kp_precise_gelu},
                   {"kp_precise_sigmoid_grad", kp_precise_sigmoid_grad},
                   {"kp_precise_tanh_grad", kp_precise_tanh_grad},
                   {"kp_precise_silu_derivative", kp_precise_silu_derivative}};

// Backward functions of precise_grad.h, g * f'(x): g from a second buffer.
struct GradFn {
  const char* name;
  float (*host)(float, float);
};
const GradFn kGradFns[] = {{"kp_precise_silu_grad", kp_precise_silu_grad},
                           {"kp_precise_gelu_grad", kp_precise_gelu_grad},
                           {"kp_precise_gelu_tanh_grad", kp_precise_gelu_tanh_grad},
                           {"kp_precise_mish_grad", kp_precise_mish_grad}};

// Both headers in one program, as kplay's kernels have them.
std::string kernel_source(const std::string& header, const std::string& grad_header) {
  std::ostringstream os;
  // No contraction, as the host build: then every bit must agree. (With contraction on, the
  // default, a few last bits differ; the -mfma -ffp-contract=fast host sweep bounds that case.)
  // 2^x through double, rounded once, as the host's: a float exp2 need not be correctly rounded
  // (PoCL's differs in the last bit for 748 of 2^20 gelu inputs), and this checks the rest.
  os << "#pragma OPENCL FP_CONTRACT OFF\n"
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
        "#define KP_FN static inline\n"
        "#define KP_FMAF(a, b, c) fma(a, b, c)\n"
        "#define KP_FABSF(x) fabs(x)\n"
        "#define KP_AS_INT(f) as_int(f)\n"
        "#define KP_AS_FLOAT(i) as_float(i)\n"
        "#define KP_RCP_APPROXF(x) (1.0f / (x))\n"
        "#define KP_EX2_APPROXF(x) ((float)exp2((double)(x)))\n"
     << header << (grad_header.empty() ? "" : "\n#undef kp_precise_silu_grad\n") << grad_header
     << "\nstatic inline float softplus_b2(float x) { return kp_precise_softplus(x, 2.0f, 20.0f); }\n"
        "static inline float expm1_sum(float x) { float lo, hi = kp_expm1_ff(x, &lo); return hi + lo; }\n";
  for (const Fn& f : kFns)
    os << "__kernel void k_" << f.name << "(__global const float* in, __global float* out) {"
       << " size_t i = get_global_id(0); out[i] = " << f.name
       << (grad_header.empty() || std::string(f.name) != "kp_precise_silu_grad" ? "" : "_1arg") << "(in[i]); }\n";
  if (!grad_header.empty())
    for (const GradFn& f : kGradFns)
      os << "__kernel void kg_" << f.name
         << "(__global const float* in, __global float* out, __global const float* g) {"
         << " size_t i = get_global_id(0); out[i] = " << f.name << "(g[i], in[i]); }\n";
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s path/to/precise_math.h [path/to/precise_grad.h]\n", argv[0]);
    return 2;
  }
  std::stringstream header, grad_header;
  for (int a = 1; a < argc; ++a) {
    std::ifstream in(argv[a]);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", argv[a]);
      return 2;
    }
    (a == 1 ? header : grad_header) << in.rdbuf();
  }
  cl_platform_id platform;
  cl_uint n_platforms = 0;
  cl_device_id device;
  cl_uint n_devices = 0;
  if (clGetPlatformIDs(1, &platform, &n_platforms) != CL_SUCCESS || n_platforms == 0 ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &n_devices) != CL_SUCCESS || n_devices == 0) {
    std::printf("no OpenCL device: skipped\n");
    return 77;
  }
  cl_int err;
  cl_context ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
  cl_command_queue queue = clCreateCommandQueue(ctx, device, 0, &err);
  std::string src = kernel_source(header.str(), grad_header.str());
  const char* srcp = src.c_str();
  cl_program prog = clCreateProgramWithSource(ctx, 1, &srcp, nullptr, &err);
  if (clBuildProgram(prog, 1, &device, "-cl-std=CL1.2", nullptr, nullptr) != CL_SUCCESS) {
    size_t len = 0;
    clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &len);
    std::string log(len, '\0');
    clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, len, &log[0], nullptr);
    std::fprintf(stderr, "OpenCL build failed:\n%s\n", log.c_str());
    return 1;
  }
  // Every 4096th bit pattern (all signs, zeros, infinities, NaNs among them).
  const size_t n = size_t(1) << 20;
  std::vector<float> xs(n), ys(n);
  for (size_t i = 0; i < n; ++i) xs[i] = kp_host_as_float(static_cast<int>(uint32_t(i) << 12));
  cl_mem din = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, xs.data(), &err);
  cl_mem dout = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, n * 4, nullptr, &err);
  bool ok = true;
  for (const Fn& f : kFns) {
    cl_kernel k = clCreateKernel(prog, (std::string("k_") + f.name).c_str(), &err);
    clSetKernelArg(k, 0, sizeof din, &din);
    clSetKernelArg(k, 1, sizeof dout, &dout);
    clEnqueueNDRangeKernel(queue, k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr);
    clEnqueueReadBuffer(queue, dout, CL_TRUE, 0, n * 4, ys.data(), 0, nullptr, nullptr);
    size_t differ = 0;
    float first = 0;
    for (size_t i = 0; i < n; ++i) {
      float h = f.host(xs[i]);
      bool same = kp_host_as_int(h) == kp_host_as_int(ys[i]) || (h != h && ys[i] != ys[i]);
      if (!same && differ++ == 0) first = xs[i];
    }
    std::printf("%-26s %zu of %zu results differ from the host%s", f.name, differ, n, differ ? "" : "\n");
    if (differ) std::printf(" (first at x=%a)\n", first);
    ok = ok && differ == 0;
    clReleaseKernel(k);
  }
  // Backward functions: g cycles through a few gradients (signs, tiny, large).
  const float kG[] = {1.0f, -0.75f, 3.3e-5f, 1.7e3f, -3e38f};
  std::vector<float> gs(n);
  for (size_t i = 0; i < n; ++i) gs[i] = kG[i % 5];
  cl_mem dg = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, gs.data(), &err);
  for (const GradFn& f : kGradFns) {
    if (argc != 3) break;
    cl_kernel k = clCreateKernel(prog, (std::string("kg_") + f.name).c_str(), &err);
    clSetKernelArg(k, 0, sizeof din, &din);
    clSetKernelArg(k, 1, sizeof dout, &dout);
    clSetKernelArg(k, 2, sizeof dg, &dg);
    clEnqueueNDRangeKernel(queue, k, 1, nullptr, &n, nullptr, 0, nullptr, nullptr);
    clEnqueueReadBuffer(queue, dout, CL_TRUE, 0, n * 4, ys.data(), 0, nullptr, nullptr);
    size_t differ = 0;
    float first = 0;
    for (size_t i = 0; i < n; ++i) {
      float h = f.host(gs[i], xs[i]);
      bool same = kp_host_as_int(h) == kp_host_as_int(ys[i]) || (h != h && ys[i] != ys[i]);
      if (!same && differ++ == 0) first = xs[i];
    }
    std::printf("%-26s %zu of %zu results (g * f') differ from the host%s", f.name, differ, n, differ ? "" : "\n");
    if (differ) std::printf(" (first at x=%a)\n", first);
    ok = ok && differ == 0;
    clReleaseKernel(k);
  }
  clReleaseMemObject(dg);
  clReleaseMemObject(din);
  clReleaseMemObject(dout);
  clReleaseProgram(prog);
  clReleaseCommandQueue(queue);
  clReleaseContext(ctx);
  return ok ? 0 : 1;
}
