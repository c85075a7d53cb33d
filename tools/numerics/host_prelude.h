/* Host stand-in for the GPU preludes, so templates/common/precise_math.h compiles as C++17 and
 * performs the same IEEE float operations (build with -ffp-contract=off: no implicit fma). */
#ifndef KP_NUMERICS_HOST_PRELUDE_H
#define KP_NUMERICS_HOST_PRELUDE_H
#include <cmath>
#include <cstdint>
#include <cstring>

#define KP_FN static inline
#define KP_FMAF(a, b, c) std::fmaf(a, b, c)
#define KP_FABSF(x) std::fabs(x)

static inline int kp_host_as_int(float f) {
  int i;
  std::memcpy(&i, &f, sizeof i);
  return i;
}
static inline float kp_host_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
#define KP_AS_INT(f) kp_host_as_int(f)
#define KP_AS_FLOAT(i) kp_host_as_float(i)

/* GPUs may return an approximate reciprocal; the harness can nudge the correctly rounded one by
 * a few ulps (--rcp-nudge) to show the results do not depend on its last bits. */
extern int kp_host_rcp_nudge;
static inline float kp_host_rcp(float x) {
  float r = 1.0f / x;
  int n = kp_host_rcp_nudge;
  return n == 0 ? r : kp_host_as_float(kp_host_as_int(r) + n);
}
#define KP_RCP_APPROXF(x) kp_host_rcp(x)

/* GPUs compute 2^x (|x| <= 1/2) in hardware, not correctly rounded (MUFU.EX2; CUDA states 2 ulp
 * for exp2f); --ex2-nudge N moves the correctly rounded host value by N ulps, so the sweep can show
 * a bound with such an error in it (CTest runs gelu at +-1). */
extern int kp_host_ex2_nudge;
static inline float kp_host_ex2(float x) {
  float r = static_cast<float>(std::exp2(static_cast<double>(x)));
  return kp_host_as_float(kp_host_as_int(r) + kp_host_ex2_nudge);
}
#define KP_EX2_APPROXF(x) kp_host_ex2(x)
#endif
