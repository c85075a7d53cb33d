/* OpenCL prelude (OpenCL C 1.2): maps the dtype chosen by codegen (KP_DTYPE_*) onto a storage
 * type KP_T (and its name KP_TN, for the kernel's vector types), a compute type KP_C and the
 * conversions between them, gives the activation snippets their math macros, exactly like the
 * CUDA prelude, and ends with the kernel dialect that templates/common/elementwise.h is written in.
 * float16 and bfloat16 are stored as raw 16-bit words (ushort) and converted explicitly, so
 * neither cl_khr_fp16 nor any vendor extension is needed; math runs in float32 with one rounding
 * (to nearest even) on store. float64 needs cl_khr_fp64; the backend offers it only where the
 * device reports it. */
#define KP_FN static inline
#define KP_COLD_FN static /* CUDA: out of line; OpenCL C has no portable attribute for it */
/* For templates/common/narrow_math.h. */
#define KP_FMAF(a, b, c) fma(a, b, c)
#define KP_FABSF(x) fabs(x)
#define KP_FMINF(a, b) fmin(a, b) /* NaN loses to a number */
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
#if KP_TORCH_TIER /* float32, accuracy=torch: torch's product by RN(1/6) */
#undef KP_DIV6
#undef KP_DIV6_OUT
#define KP_DIV6(x) ((x) * (1.0f / 6.0f))
#define KP_DIV6_OUT(x) ((x) * (1.0f / 6.0f))
#endif
#if KP_DTYPE_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#if KP_WIDE_F32
#define KP_TN float /* a gated float32 kernel whose math runs in double (codegen) */
typedef float KP_T;
#else
#define KP_TN double
typedef double KP_T;
#endif
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
KP_FN KP_T kp_to_storage(KP_C v) { return (KP_T)v; } /* KP_WIDE_F32: one rounding to float */
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

/* The kernel dialect for templates/common/elementwise.h (which lists what each macro means). */
typedef ulong kp_u64;
#define KP_KERNEL __kernel __attribute__((reqd_work_group_size(KP_BLOCK, 1, 1))) void
#define KP_GLOBAL __global
/* A cl_mem cannot carry an offset, so every buffer comes with its start in elements. Buffers
 * start on CL_DEVICE_MEM_BASE_ADDR_ALIGN (at least 128 bytes), so alignment follows from
 * element indices alone. */
#define KP_BUFFER(T, name) __global T* name, kp_u64 name##_off
#define KP_OFFSET(name) name##_off
#define KP_MISALIGNMENT(p, at) (((at) * sizeof(KP_T)) % KP_VEC_BYTES)
/* 32-bit, as CUDA's threadIdx, blockIdx and gridDim */
#define KP_LOCAL_ID ((uint)get_local_id(0))
#define KP_GROUP_X ((uint)get_group_id(0))
#define KP_GROUP_Y ((uint)get_group_id(1))
#define KP_NUM_GROUPS_X ((uint)get_num_groups(0))
#define KP_NUM_GROUPS_Y ((uint)get_num_groups(1))
/* Work-group local memory and the work-group's barrier (templates/common/slope.h). */
#define KP_SHARED __local
#define KP_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
/* No cache hints: the backend refuses --cache streaming. */
#define KP_LD(p) (*(p))
#define KP_ST(p, v) (*(p) = (v))

#define KP_CAT(a, b) a##b
#define KP_XCAT(a, b) KP_CAT(a, b)
#if KP_VEC_BYTES == 16
#define KP_RAW uint4
#elif KP_VEC_BYTES == 8
#define KP_RAW uint2
#elif KP_VEC_BYTES == 4
#define KP_RAW uint
#else
#define KP_RAW ushort
#endif
typedef KP_RAW kp_raw;
/* A vector's elements through an OpenCL vector type (as_type reinterpretation of the raw word and
 * .sN lanes), not a union with an array as on CUDA: NVIDIA's OpenCL compiler keeps a union of
 * uint4 and 16-bit elements in local memory (st.local.v4 + ld.local.u16 in the PTX that
 * clGetProgramInfo(CL_PROGRAM_BINARIES) returns on an H100), which cost float16/bfloat16 a third
 * of their bandwidth (docs/opencl.md). */
#if KP_VEC == 1
#define KP_TV KP_TN
#define KP_LANE(v, k) (v)
#define KP_VLOAD(v, p, i) ((v) = (p)[i])
#define KP_VSTORE(v, p, i) ((p)[i] = (v))
#else
#define KP_TV KP_XCAT(KP_TN, KP_VEC)
#define KP_LANE(v, k) ((v).s##k)
#define KP_VLOAD(v, p, i) ((v) = KP_XCAT(vload, KP_VEC)(i, p))
#define KP_VSTORE(v, p, i) KP_XCAT(vstore, KP_VEC)(v, i, p)
#endif
#if KP_OUT_F8
#error "FP8 output is for CUDA only"
#endif
typedef KP_TV kp_vec;
#define KP_SET_RAW(v, r) ((v) = KP_XCAT(as_, KP_TV)(r))
#define KP_VEC_TO_RAW(v) KP_XCAT(as_, KP_RAW)(v)
#define KP_LANES_1(M) M(0)
#define KP_LANES_2(M) KP_LANES_1(M) M(1)
#define KP_LANES_4(M) KP_LANES_2(M) M(2) M(3)
#define KP_LANES_8(M) KP_LANES_4(M) M(4) M(5) M(6) M(7)
#define KP_FOR_LANES(M) KP_XCAT(KP_LANES_, KP_VEC)(M)
#define KP_PAIR_STORE 0 /* results lane by lane (CUDA converts 16-bit pairs at once: prelude.cuh) */
