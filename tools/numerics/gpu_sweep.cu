// Full 2^32-input sweep of templates/common/precise_math.h on an NVIDIA GPU, against float64
// references evaluated on the GPU (CUDA's double math is accurate to ~1 ulp of double, 2^-29 ulp
// of float). Build and run (needs a GPU):
//   nvcc -O3 -arch=native -std=c++17 -I tools/numerics -I templates/common \
//        tools/numerics/gpu_sweep.cu -o gpu_sweep && ./gpu_sweep [name ...]
// Prints per function what kplay_numerics prints; exit status 1 if any function exceeds its bound
// (2 ulp; gelu 5)
// or mishandles a special value. Same conventions as numerics.cpp (see README.md).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>

#include "cuda_prelude_stub.cuh"
#include "precise_math.h"
// after precise_math.h, whose float-float helpers it uses
#include "precise_grad.h"

namespace {

__device__ double ref_sigmoid(float x) { return 1.0 / (1.0 + exp(-(double)x)); }
__device__ double ref_silu(float x) { return x / (1.0 + exp(-(double)x)); }
__device__ double ref_tanh(float x) { return tanh((double)x); }
__device__ double ref_tanhshrink(float x) {
  double v = x;
  if (x == 0.0f) return v - v;
  if (fabs(v) < 0.03) {  // x^3/3 - 2x^5/15 + 17x^7/315 - 62x^9/2835 + 1382x^11/155925
    double w = v * v;
    return v * w * (1.0 / 3 + w * (-2.0 / 15 + w * (17.0 / 315 + w * (-62.0 / 2835 + w * (1382.0 / 155925)))));
  }
  return v - tanh(v);
}
__device__ double softplus_ref(float x, float beta, float threshold) {
  if (x * beta > threshold) return x;
  return log1p(exp((double)x * beta)) / beta;
}
__device__ double ref_softplus(float x) { return softplus_ref(x, 1.0f, 20.0f); }
__device__ double ref_softplus_b2(float x) { return softplus_ref(x, 2.0f, 20.0f); }
__device__ double ref_logsigmoid(float x) {
  double v = x;
  if (isinf(v) && v > 0) return 0.0;
  return x < 0 ? v - log1p(exp(v)) : -log1p(exp(-v));
}
__device__ double ref_mish(float x) {
  double v = x;
  return v * tanh(log1p(exp(v)));
}
__device__ double ref_gelu_tanh(float x) {
  double v = x, u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
  return v / (1.0 + exp(-2.0 * u));
}
__device__ double ref_gelu(float x) {
  double v = x;
  return 0.5 * v * erfc(-v * 0.7071067811865476);
}
__device__ double ref_sigmoid_grad(float x) {
  double t = exp(-fabs((double)x));
  return t / ((1 + t) * (1 + t));
}
__device__ double ref_tanh_grad(float x) {
  double t = exp(-2 * fabs((double)x));
  return 4 * t / ((1 + t) * (1 + t));
}
__device__ double ref_silu_grad(float x) {
  double v = x, s = 1 / (1 + exp(-v)), sm = 1 / (1 + exp(v));
  return s * (1 + v * sm);
}
__device__ double ref_selu(float x) {
  if (x >= 0.0f) return 0x1.0cfabep+0f * x;
  return 1.7580993408473768599 * expm1((double)x);
}
__device__ float f_selu(float x) {
  if (x >= 0.0f) return 0x1.0cfabep+0f * x;
  float lo, hi = kp_expm1_ff(x, &lo);
  return fmaf(0x1.c212ccp+0f, hi, fmaf(0x1.c212ccp+0f, lo, 0x1.903c0cp-26f * hi));
}
// Backward functions g * f'(x) of precise_grad.h at g = 1 (bounded only where the true result
// is normal). gelu_tanh' in torch's form with 1 + t = 2 sigmoid(2u), 1 - t^2 = 4 s(2u) s(-2u).
__device__ float f_silu_grad_g1(float x) { return kp_precise_silu_grad(1.0f, x); }
__device__ float f_gelu_grad_g1(float x) { return kp_precise_gelu_grad(1.0f, x); }
__device__ float f_gelu_tanh_grad_g1(float x) { return kp_precise_gelu_tanh_grad(1.0f, x); }
__device__ float f_mish_grad_g1(float x) { return kp_precise_mish_grad(1.0f, x); }
__device__ double ref_gelu_grad(float x) {
  double v = x;
  return 0.5 * erfc(-v * 0.7071067811865476) + v * exp(-0.5 * v * v) * 0.3989422804014327;
}
__device__ double ref_gelu_tanh_grad(float x) {
  double v = x, u2 = 1.5957691216057308 * (v + 0.044715 * v * v * v);
  double s = 1 / (1 + exp(-u2)), sm = 1 / (1 + exp(u2));
  return s * (1 + 1.5957691216057308 * v * (1 + 3 * 0.044715 * v * v) * sm);
}
__device__ double ref_mish_grad(float x) {
  double v = x, t = tanh(log1p(exp(v))), s = 1 / (1 + exp(-v));
  return t + v * s * (1 - t * t);
}
__device__ float f_softplus(float x) { return kp_precise_softplus(x, 1.0f, 20.0f); }
__device__ float f_softplus_b2(float x) { return kp_precise_softplus(x, 2.0f, 20.0f); }

struct Stats {
  unsigned long long worst;  // (bits of the float error << 32) | bits of x
  unsigned long long over_half, over_one, over_two, nan_bad, inf_bad, zero_bad;
};

__device__ double ulp_error(float x, float y, double ref, Stats* st) {
  if (isnan(ref) || isnan(y)) {
    if (isnan(ref) != isnan(y)) atomicAdd(&st->nan_bad, 1ull);
    return -1;
  }
  float rf = (float)ref;
  if (isinf(rf) || isinf(y)) {
    if (y == rf) return -1;
    if (isinf(y) || isinf(ref)) {
      atomicAdd(&st->inf_bad, 1ull);
      return -1;
    }
    return fabs(y - ref) / 0x1p104;
  }
  if (y == 0.0f && rf == 0.0f) {
    if ((x == 0.0f || isinf(x)) && signbit(y) != signbit(ref)) atomicAdd(&st->zero_bad, 1ull);
    return fabs((double)y - ref) / 0x1p-149;
  }
  int e = ref == 0 ? -126 : ilogb(ref);
  if (e < -126) e = -126;
  return fabs((double)y - ref) / ldexp(1.0, e - 23);
}

template <float (*F)(float), double (*R)(float), bool NormalOnly>
__global__ void sweep(unsigned long long base, Stats* st) {
  unsigned long long i = base + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  float x = __uint_as_float((unsigned)i);
  double ref = R(x);
  double err = ulp_error(x, F(x), ref, st);
  if (err < 0) return;
  if (NormalOnly && fabs(ref) < 0x1p-126) return;
  if (err > 0.5) atomicAdd(&st->over_half, 1ull);
  if (err > 1) atomicAdd(&st->over_one, 1ull);
  if (err > 2) atomicAdd(&st->over_two, 1ull);
  unsigned long long key = ((unsigned long long)__float_as_uint((float)err) << 32) | __float_as_uint(x);
  atomicMax(&st->worst, key);
}

template <float (*F)(float), double (*R)(float), bool NormalOnly = false>
bool run(const char* name, int argc, char** argv, float bound = 2) {
  bool wanted = argc < 2;
  for (int i = 1; i < argc; ++i) wanted = wanted || std::strcmp(argv[i], name) == 0;
  if (!wanted) return true;
  Stats* st;
  cudaMallocManaged(&st, sizeof(Stats));
  std::memset(st, 0, sizeof(Stats));
  const unsigned block = 256;
  const unsigned long long chunk = 1ull << 28;
  for (unsigned long long base = 0; base < (1ull << 32); base += chunk)
    sweep<F, R, NormalOnly><<<(unsigned)(chunk / block), block>>>(base, st);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("%s: CUDA error %s\n", name, cudaGetErrorString(e));
    return false;
  }
  unsigned eb = (unsigned)(st->worst >> 32), xb = (unsigned)st->worst;
  float err, x;
  std::memcpy(&err, &eb, 4);
  std::memcpy(&x, &xb, 4);
  std::printf("%-18s max %8.4f ulp at x=%-15.9g (%a) | >0.5:%llu >1:%llu >2:%llu nan:%llu inf:%llu -0:%llu\n", name,
              err, x, x, st->over_half, st->over_one, st->over_two, st->nan_bad, st->inf_bad, st->zero_bad);
  bool ok = err <= bound && st->nan_bad == 0 && st->inf_bad == 0 && st->zero_bad == 0;
  cudaFree(st);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  bool ok = true;
  ok &= run<f_selu, ref_selu>("selu", argc, argv);
  ok &= run<kp_precise_sigmoid, ref_sigmoid>("sigmoid", argc, argv);
  ok &= run<kp_precise_silu, ref_silu>("silu", argc, argv);
  ok &= run<kp_precise_tanh, ref_tanh>("tanh", argc, argv);
  ok &= run<kp_precise_tanhshrink, ref_tanhshrink>("tanhshrink", argc, argv);
  ok &= run<f_softplus, ref_softplus>("softplus", argc, argv);
  ok &= run<f_softplus_b2, ref_softplus_b2>("softplus_b2", argc, argv);
  ok &= run<kp_precise_logsigmoid, ref_logsigmoid>("logsigmoid", argc, argv);
  ok &= run<kp_precise_mish, ref_mish>("mish", argc, argv);
  ok &= run<kp_precise_gelu_tanh, ref_gelu_tanh>("gelu_tanh", argc, argv);
  ok &= run<kp_precise_gelu, ref_gelu>("gelu", argc, argv, 5);  // float alone: held to 5 ulp
  ok &= run<kp_precise_sigmoid_grad, ref_sigmoid_grad>("sigmoid_grad", argc, argv);
  ok &= run<kp_precise_tanh_grad, ref_tanh_grad>("tanh_grad", argc, argv);
  ok &= run<kp_precise_silu_derivative, ref_silu_grad>("silu_grad", argc, argv);
  ok &= run<f_silu_grad_g1, ref_silu_grad, true>("silu_grad_g", argc, argv);
  ok &= run<f_gelu_grad_g1, ref_gelu_grad, true>("gelu_grad_g", argc, argv);
  ok &= run<f_gelu_tanh_grad_g1, ref_gelu_tanh_grad, true>("gelu_tanh_grad_g", argc, argv);
  ok &= run<f_mish_grad_g1, ref_mish_grad, true>("mish_grad_g", argc, argv);
  return ok ? 0 : 1;
}
