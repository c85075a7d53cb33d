/* OpenCL prelude (OpenCL C 1.2): maps the dtype chosen by codegen (KP_DTYPE_*) onto a storage
 * type KP_T (and its name KP_TN, for the kernel's vector types), a compute type KP_C and the
 * conversions between them, and gives the activation
 * snippets their math macros, exactly like the CUDA prelude. float16 and bfloat16 are stored as
 * raw 16-bit words (ushort) and converted explicitly, so neither cl_khr_fp16 nor any vendor
 * extension is needed; math runs in float32 with one rounding (to nearest even) on store.
 * float64 needs cl_khr_fp64; the backend offers it only where the device reports it. */
#define KP_FN static inline
/* For templates/common/narrow_math.h. */
#define KP_FMAF(a, b, c) fma(a, b, c)
#define KP_FABSF(x) fabs(x)
#define KP_AS_INT(f) as_int(f)
#define KP_AS_FLOAT(i) as_float(i)
#define KP_RCP_APPROXF(x) (1.0f / (x))
#define KP_HW_EXPF(x) native_exp(x)
#define KP_HW_EXP2F_FTZ(x) native_exp2(x)
#define KP_EX2_APPROXF(x) exp2(x) /* precise_math.h: not native_exp2, whose error is unspecified */
#define KP_HW_LOGF(x) native_log(x)
#define KP_HW_DIVF(a, b) native_divide(a, b)
/* For templates/common/fp64_math.h (float32 kernels on a device with fast FP64): the words of a
 * double (little-endian: .x is the low word) and a reciprocal, refined there by Newton steps. */
#if KP_FAST_FP64 && KP_DTYPE_F32 && !KP_FAST_MATH
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define KP_D_LO(d) (as_int2(d).x)
#define KP_D_HI(d) (as_int2(d).y)
#define KP_D_FROM_HILO(hi, lo) as_double((int2)((lo), (hi)))
#define KP_D_TABLE __constant double
#define KP_RCP_APPROXD(x) (1.0 / (x))

/* Math in the compute type for the activation snippets, as in the CUDA prelude (OpenCL C's
 * built-ins are overloaded for float and double). */
#define KP_LOG1P(x) log1p(x)
#define KP_TANH(x) tanh(x)
#define KP_ERF(x) erf(x)
#define KP_ERFC(x) erfc(x)
#define KP_FABS(x) fabs(x)
#define KP_FMA(a, b, c) fma(a, b, c)
#define KP_SQRT(x) sqrt(x)
#define KP_DIV6(x) ((x) / KP_LIT(6.0)) /* 16-bit types: narrow_math.h */
#define KP_DIV6_OUT(x) ((x) / KP_LIT(6.0))
#if KP_DTYPE_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define KP_TN double
typedef double KP_T;
typedef double KP_C;
#define KP_LIT(x) x
#define KP_EXPM1(x) expm1(x)
#define KP_EXP(x) exp(x)
#define KP_LOG(x) log(x)
#else
typedef float KP_C;
#define KP_LIT(x) x##f
#if KP_FAST_MATH
/* Opt-in: the native exponential, like CUDA's __expf(x) - 1; loses relative precision for
 * |x| near 0 (see docs). */
#define KP_EXPM1(x) (native_exp(x) - 1.0f)
#define KP_EXP(x) native_exp(x)
#define KP_LOG(x) native_log(x)
#else
#define KP_EXPM1(x) expm1(x)
#define KP_EXP(x) exp(x)
#define KP_LOG(x) log(x)
#endif
#endif

#if KP_DTYPE_F32
#define KP_TN float
typedef float KP_T;
KP_FN KP_C kp_to_compute(KP_T v) { return v; }
KP_FN KP_T kp_to_storage(KP_C v) { return v; }
#elif KP_DTYPE_F64
KP_FN KP_C kp_to_compute(KP_T v) { return v; }
KP_FN KP_T kp_to_storage(KP_C v) { return v; }
#elif KP_DTYPE_F16
#define KP_TN ushort
typedef ushort KP_T;
/* vload_half / vstore_half_rte are core OpenCL C 1.2 and accept private pointers; NVIDIA
 * lowers them to cvt.f32.f16 / cvt.rn.f16.f32. NaN stays NaN, overflow rounds to inf. */
KP_FN KP_C kp_to_compute(KP_T v) { return vload_half(0, (const __private half*)&v); }
KP_FN KP_T kp_to_storage(KP_C v) {
  KP_T h;
  vstore_half_rte(v, 0, (__private half*)&h);
  return h;
}
#elif KP_DTYPE_BF16
#define KP_TN ushort
typedef ushort KP_T;
KP_FN KP_C kp_to_compute(KP_T v) { return as_float((uint)v << 16); }
KP_FN KP_T kp_to_storage(KP_C v) {
  uint u = as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
  return (ushort)(u >> 16);
}
#endif
