/* CUDA prelude: maps the dtype chosen by codegen (KP_DTYPE_*) onto a storage type KP_T, a
 * compute type KP_C and the conversions between them, gives the activation snippets their math
 * macros, and ends with the kernel dialect that templates/common/elementwise.h is written in
 * (templates/opencl/prelude.cl defines the same names). float16 and bfloat16 are stored as raw
 * 16-bit words and converted explicitly, so no CUDA header is needed and math runs in float32 with
 * one rounding on store. */
#define KP_FN static __device__ __forceinline__
/* A rare path kept out of line, so that its registers and code do not weigh on the common one. */
#define KP_COLD_FN static __device__ __noinline__
/* For templates/common/narrow_math.h: the hardware exp2/log2 without flush-to-zero (bfloat16
 * has float's exponent range, so its subnormal results must survive), and div.full, which is
 * within 2 ulp over the whole range. */
#define KP_FMAF(a, b, c) fmaf(a, b, c)
#define KP_FABSF(x) fabsf(x)
#define KP_FMINF(a, b) fminf(a, b) /* NaN loses to a number */
KP_FN float kp_hw_expf(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x * 1.44269504088896341f));
  return y;
}
KP_FN float kp_hw_logf(float x) {
  float y;
  asm("lg2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y * 0.693147180559945309f;
}
KP_FN float kp_hw_divf(float a, float b) {
  float y;
  asm("div.full.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
/* For templates/common/precise_math.h (float32 kernels): bit casts and an approximate reciprocal,
 * always followed there by an fma residual correction. */
#define KP_AS_INT(f) __float_as_int(f)
#define KP_AS_FLOAT(i) __int_as_float(i)
KP_FN float kp_rcp_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
#define KP_RCP_APPROXF(x) kp_rcp_approx(x)
/* For narrow_math.h where no subnormal can reach the result: 2^x in one MUFU.EX2 (without .ftz,
 * ptxas adds four instructions to keep subnormal results). */
KP_FN float kp_hw_exp2f_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#define KP_HW_EXP2F_FTZ(x) kp_hw_exp2f_ftz(x)
#define KP_EX2_APPROXF(x) kp_hw_exp2f_ftz(x) /* precise_math.h: 2^x for |x| <= 1/2 */
#define KP_HW_EXPF(x) kp_hw_expf(x)
#define KP_HW_LOGF(x) kp_hw_logf(x)
#define KP_HW_DIVF(a, b) kp_hw_divf(a, b)
/* For templates/common/fp64_math.h (float32 kernels on a device with fast FP64): the words of a
 * double and the hardware reciprocal estimate (MUFU.RCP64H), refined there by Newton steps. */
#define KP_D_LO(d) __double2loint(d)
#define KP_D_HI(d) __double2hiint(d)
#define KP_D_FROM_HILO(hi, lo) __hiloint2double(hi, lo)
#define KP_D_TABLE static __constant__ double /* not const: a const one folds into moves */
KP_FN double kp_rcp_approxd(double x) {
  double r;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
  return r;
}
#define KP_RCP_APPROXD(x) kp_rcp_approxd(x)

/* Math in the compute type for the activation snippets: KP_EXP, KP_EXPM1, KP_LOG, KP_LOG1P,
 * KP_TANH, KP_ERF, KP_ERFC, KP_FABS, KP_FMA, KP_SQRT, KP_DIV6 and KP_DIV6_OUT (a quotient that is
 * the output: 16-bit types may round it differently on the way, narrow_math.h). */
#if KP_DTYPE_F64
#if KP_WIDE_F32
typedef float KP_T; /* a gated float32 kernel whose math runs in double (codegen) */
#else
typedef double KP_T;
#endif
typedef double KP_C;
#define KP_LIT(x) x
#define KP_EXPM1(x) expm1(x)
#define KP_EXP(x) exp(x)
#define KP_LOG(x) log(x)
#define KP_LOG1P(x) log1p(x)
#define KP_TANH(x) tanh(x)
#define KP_ERF(x) erf(x)
#define KP_ERFC(x) erfc(x)
#define KP_FABS(x) fabs(x)
#define KP_FMA(a, b, c) fma(a, b, c)
#define KP_SQRT(x) sqrt(x)
#define KP_DIV6(x) ((x) / 6.0)
#define KP_DIV6_OUT(x) ((x) / 6.0)
#else
typedef float KP_C;
#define KP_LIT(x) x##f
#define KP_TANH(x) tanhf(x)
#define KP_ERF(x) erff(x)
#define KP_ERFC(x) erfcf(x)
#define KP_FABS(x) fabsf(x)
#define KP_FMA(a, b, c) fmaf(a, b, c)
#define KP_SQRT(x) sqrtf(x)
#if KP_FAST_MATH
/* Opt-in: the hardware exponential and logarithm; exp(x)-1 loses relative precision for |x| near
 * 0 (see docs). */
#define KP_EXPM1(x) (__expf(x) - 1.0f)
#define KP_EXP(x) __expf(x)
#define KP_LOG(x) __logf(x)
#define KP_LOG1P(x) __logf(1.0f + (x))
#define KP_DIV6(x) ((x) / 6.0f) /* 16-bit types: narrow_math.h */
#define KP_DIV6_OUT(x) ((x) / 6.0f)
#elif KP_TORCH_TIER
/* float32, accuracy=torch: the library functions, and 1/6 as torch's product by RN(1/6) (1.33 ulp) */
#define KP_DIV6(x) ((x) * (1.0f / 6.0f))
#define KP_DIV6_OUT(x) ((x) * (1.0f / 6.0f))
#define KP_EXPM1(x) expm1f(x)
#define KP_EXP(x) expf(x)
#define KP_LOG(x) logf(x)
#define KP_LOG1P(x) log1pf(x)
#else
/* float32 IEEE kernels divide by 6 with a multiply and an fma correction (f32_math.h's kp_f_div6,
 * within 0.5 ulp for every float); 16-bit types: narrow_math.h */
#define KP_DIV6(x) kp_f_div6(x)
#define KP_DIV6_OUT(x) kp_f_div6(x)
#define KP_EXPM1(x) expm1f(x)
#define KP_EXP(x) expf(x)
#define KP_LOG(x) logf(x)
#define KP_LOG1P(x) log1pf(x)
#endif
#endif

#if KP_DTYPE_F32
typedef float KP_T;
KP_FN KP_C kp_to_compute(KP_T v) { return v; }
KP_FN KP_T kp_to_storage(KP_C v) { return v; }
#elif KP_DTYPE_F64
KP_FN KP_C kp_to_compute(KP_T v) { return v; }
KP_FN KP_T kp_to_storage(KP_C v) { return (KP_T)v; } /* KP_WIDE_F32: one rounding to float */
#elif KP_DTYPE_F16
typedef unsigned short KP_T;
KP_FN KP_C kp_to_compute(KP_T v) {
  float f;
  asm("{ .reg .b16 h; mov.b16 h, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "h"(v));
  return f;
}
KP_FN KP_T kp_to_storage(KP_C v) {
  unsigned short h;
  asm("{ .reg .b16 r; cvt.rn.f16.f32 r, %1; mov.b16 %0, r; }" : "=h"(h) : "f"(v));
  return h;
}
#elif KP_DTYPE_BF16
typedef unsigned short KP_T;
KP_FN KP_C kp_to_compute(KP_T v) { return __uint_as_float((unsigned int)v << 16); }
KP_FN KP_T kp_to_storage(KP_C v) {
#if __CUDA_ARCH__ >= 800
  /* one F2FP (round to nearest even; NaN becomes the canonical 0x7fff, as torch's CUDA
   * __float2bfloat16 gives) where the hand rounding below costs about six instructions */
  unsigned short h;
  asm("{ .reg .b16 r; cvt.rn.bf16.f32 r, %1; mov.b16 %0, r; }" : "=h"(h) : "f"(v));
  return h;
#else
  unsigned int u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
  return (unsigned short)(u >> 16);
#endif
}
#endif

/* The kernel dialect for templates/common/elementwise.h (which lists what each macro means). */
typedef unsigned long long kp_u64;
#define KP_KERNEL extern "C" __global__ void __launch_bounds__(KP_BLOCK)
#define KP_GLOBAL /* one address space */
/* A buffer argument is its first element's address, so alignment follows from the address. */
#define KP_BUFFER(T, name) T* name
#define KP_OFFSET(name) ((kp_u64)0)
#define KP_MISALIGNMENT(p, at) ((kp_u64)(p) % KP_VEC_BYTES)
#define KP_LOCAL_ID threadIdx.x
#define KP_GROUP_X blockIdx.x
#define KP_GROUP_Y blockIdx.y
#define KP_NUM_GROUPS_X gridDim.x
#define KP_NUM_GROUPS_Y gridDim.y
/* Block-shared memory and the block's barrier (PReLU's weight gradient, templates/common/slope.h). */
#define KP_SHARED __shared__
#define KP_BARRIER() __syncthreads()
#if KP_STREAMING
#define KP_LD(p) __ldcs(p)
#define KP_ST(p, v) __stcs((p), (v))
#else
#define KP_LD(p) (*(p))
#define KP_ST(p, v) (*(p) = (v))
#endif

#if KP_VEC_BYTES == 16
typedef uint4 kp_raw;
#elif KP_VEC_BYTES == 8
typedef uint2 kp_raw;
#elif KP_VEC_BYTES == 4
typedef unsigned int kp_raw;
#else
typedef unsigned short kp_raw;
#endif
/* A vector's elements through a union with its raw word (OpenCL uses vector types instead). */
union kp_vec {
  kp_raw raw;
  KP_T e[KP_VEC];
#if KP_VEC_BYTES >= 4
  unsigned int w[KP_VEC_BYTES / 4]; /* 16-bit lanes in pairs: KP_PAIR_STORE */
#endif
};
/* Two 16-bit results in one cvt, written as the vector's 32-bit word: its x2 form rounds each half
 * to nearest even as the one-lane form does, and saves the PRMT, masks and shifts with which ptxas
 * merges lanes converted one at a time (docs/design.md, "16-bit results in pairs", has the SASS
 * counts). OpenCL's prelude sets KP_PAIR_STORE 0. */
#if (KP_DTYPE_BF16 || KP_DTYPE_F16) && __CUDA_ARCH__ >= 800 && KP_VEC >= 2
#define KP_PAIR_STORE 1
KP_FN unsigned int kp_to_storage2(float lo, float hi) {
  unsigned int r;
#if KP_DTYPE_BF16
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  return r;
}
#else
#define KP_PAIR_STORE 0
#endif
#define KP_LANE(v, k) ((v).e[k])
#define KP_FOR_LANES(M) _Pragma("unroll") for (int kp_k = 0; kp_k < KP_VEC; ++kp_k) { M(kp_k) }
#define KP_VEC_TO_RAW(v) ((v).raw)
#define KP_SET_RAW(v, r) ((v).raw = (r))
/* KP_VEC scalar loads into the lanes of v (with the cache hint) */
#define KP_VLOAD(v, p, i) \
  _Pragma("unroll") for (int kp_k = 0; kp_k < KP_VEC; ++kp_k)(v).e[kp_k] = KP_LD((p) + (i) * KP_VEC + kp_k)
#define KP_VSTORE(v, p, i) \
  _Pragma("unroll") for (int kp_k = 0; kp_k < KP_VEC; ++kp_k) KP_ST((p) + (i) * KP_VEC + kp_k, (v).e[kp_k])

#if KP_OUT_F8
/* FP8 output (a gated forward on sm_89 and newer): out = fp8(v / scale) by one cvt.rn.satfinite:
 * round to nearest even, anything beyond the largest finite value (448 for e4m3, 57344 for e5m2)
 * and infinities to it with their sign, NaN to NaN. KP_OUT_F8 is 1 for e4m3, 2 for e5m2.
 * The quotient is a product with the reciprocal, which each thread takes once (kp_make_scale): an
 * IEEE division per element cost bfloat16 a MUFU.RCP, an FCHK and a slow-path branch, and the
 * kernel ran at 57 % of a copy on an H200. In float, q = RN(RN(v r1) r2) with r1 = RN(1 / (s 2^k))
 * and r2 = 2^k, k = 64 where |s| is below 2^-126 (so that r1 is finite), else 0: within 2^-23 of
 * v / s relative wherever v r1 is a normal float, and where it is not (k = 0, |v / s| < 2^-126) the
 * FP8 result is 0 either way; in double (float32's and float64's math) q = RN_float(RN(v r1)),
 * r1 = RN(1 / s). 2^-23 of a value is at most 2^-19 of its e4m3 or e5m2 ulp (their significands
 * have 3 and 2 bits), so the one FP8 rounding stays within kFp8BoundUlps (0.5 + 2^-10 ulp) of the
 * exact value. A zero, infinite or NaN scale gives what the division gives: +-inf or NaN for 0,
 * 0 or NaN for inf, NaN for NaN. */
typedef unsigned char KP_TO;
typedef struct {
  KP_C r1;
  float r2;
} kp_scale;
KP_FN kp_scale kp_make_scale(float s) {
  kp_scale k;
#if KP_DTYPE_F64
  k.r1 = 1.0 / (double)s;
  k.r2 = 1.0f;
#else
  const bool tiny = fabsf(s) < 0x1p-126f;
  k.r1 = __fdiv_rn(1.0f, tiny ? s * 0x1p64f : s); /* IEEE, whatever -prec-div says */
  k.r2 = tiny ? 0x1p64f : 1.0f;
#endif
  return k;
}
#if KP_OUT_VEC_BYTES == 8
typedef uint2 kp_oraw;
#elif KP_OUT_VEC_BYTES == 4
typedef unsigned int kp_oraw;
#elif KP_OUT_VEC_BYTES == 2
typedef unsigned short kp_oraw;
#else
typedef unsigned char kp_oraw;
#endif
/* Two lanes take one cvt (its x2 form converts two floats), and their 16-bit word needs no
 * byte shuffle on the way to the vector: KP_OUT_PAIRS, kp_to_out2, KP_OPAIR, KP_FOR_PAIRS. */
#define KP_OUT_PAIRS (KP_VEC > 1)
union kp_ovec {
  kp_oraw raw;
  KP_TO e[KP_VEC];
  unsigned short h[KP_VEC > 1 ? KP_VEC / 2 : 1];
};
#define KP_OLANE(v, k) ((v).e[k])
#define KP_OPAIR(v, k) ((v).h[k])
#define KP_FOR_PAIRS(M) _Pragma("unroll") for (int kp_p = 0; kp_p < KP_VEC / 2; ++kp_p) { M(kp_p) }
#define KP_OVEC_TO_RAW(v) ((v).raw)
#define KP_OUT_MISALIGNMENT(p, at) ((kp_u64)(p) % KP_OUT_VEC_BYTES)
KP_FN KP_TO kp_to_out(KP_C v, kp_scale scale) {
#if KP_DTYPE_F64
  const float q = (float)(v * scale.r1);
#else
  const float q = v * scale.r1 * scale.r2;
#endif
  unsigned short r;
#if KP_OUT_F8 == 1
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;" : "=h"(r) : "f"(q));
#else
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %1;" : "=h"(r) : "f"(q));
#endif
  return (KP_TO)(r & 0xffu);
}
/* v0 in the low byte (the lower address), v1 in the high one: cvt puts its first source high. */
KP_FN unsigned short kp_to_out2(KP_C v0, KP_C v1, kp_scale scale) {
#if KP_DTYPE_F64
  const float q0 = (float)(v0 * scale.r1), q1 = (float)(v1 * scale.r1);
#else
  const float q0 = v0 * scale.r1 * scale.r2, q1 = v1 * scale.r1 * scale.r2;
#endif
  unsigned short r;
#if KP_OUT_F8 == 1
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(q1), "f"(q0));
#else
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(q1), "f"(q0));
#endif
  return r;
}
#endif
