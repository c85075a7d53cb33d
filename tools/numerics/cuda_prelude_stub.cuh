/* The macros precise_math.h needs, as the CUDA prelude is meant to define them (see README.md);
 * used by gpu_sweep.cu. */
#define KP_FN static __device__ __forceinline__
#define KP_FMAF(a, b, c) fmaf(a, b, c)
#define KP_FABSF(x) fabsf(x)
#define KP_AS_INT(f) __float_as_int(f)
#define KP_AS_FLOAT(i) __int_as_float(i)
static __device__ __forceinline__ float kp_rcp_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
#define KP_RCP_APPROXF(x) kp_rcp_approx(x)
static __device__ __forceinline__ float kp_ex2_approx(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
#define KP_EX2_APPROXF(x) kp_ex2_approx(x)
